import CofferAppStore
import CofferCore
import CofferStore
import Foundation
import Logging
import ServiceLifecycle

/// Checks the ledger's books against Apple's: for each customer with any transaction it reads their Transaction
/// History (v2) and Refund History through the App Store Server API, verifies every signed transaction, and finds
/// what disagrees (``LedgerReconciliation``). With `repair`, what is missing (Apple's purchases, refunds and
/// reversals) is applied through the notification intake's own ledger events and keys, so a second run, or Apple's
/// notification arriving late, finds it already done. What a repair cannot settle is kept on the customer page for
/// support.
///
/// A full run walks the customers by id and saves its place (``ReconciliationRun``) after each one, under a lease
/// so one instance runs it at a time; one stopped midway is resumed where it stopped. Calls are paced below Apple's
/// documented limits (``ApplePacer``) and wait out a 429 until Apple's `Retry-After`.
public struct Reconciler: Service {
    let intake: NotificationIntake
    let client: AppStoreServerAPIClient
    let pacer: ApplePacer
    /// This instance's name in the run's lease.
    let holder: String
    let logger: Logger
    /// Customers per page read from the store.
    static let pageSize = 50
    /// How long a claim on a run lasts without a word from its holder.
    static let lease: TimeInterval = 300
    /// Consecutive customers whose history cannot be read before a run stops (Apple or the network is down).
    static let failuresBeforeStopping = 5
    /// The longest wait for Apple's rate limit before a call gives up.
    static let longestRateLimitWait: TimeInterval = 3_600
    /// Most discrepancies a report lists (the store keeps each customer's whatever the count).
    static let reportedDiscrepancies = 10_000

    /// A reconciler over `configuration` and `dependencies`, for `coffer reconcile`; a running server builds its own
    /// in `buildApplication(configuration:dependencies:)` (CofferServer).
    ///
    /// - Returns: `nil` without an App Store Server API client.
    public init?(configuration: ServiceConfiguration, dependencies: ServerDependencies) {
        self.init(intake: NotificationIntake(configuration: configuration, dependencies: dependencies))
    }

    /// The reconciler of `intake`'s server, `nil` without an App Store Server API client.
    public init?(intake: NotificationIntake) {
        guard let client = intake.dependencies.appStoreAPI else { return nil }
        self.intake = intake
        self.client = client
        pacer = ApplePacer(environment: intake.configuration.environment, clock: intake.dependencies.timerClock)
        holder = "\(ProcessInfo.processInfo.hostName):\(ProcessInfo.processInfo.processIdentifier):\(UUID())"
        logger = intake.dependencies.logger
    }

    var store: any CofferStore { intake.store }
    var environment: CofferCore.AppStoreEnvironment { intake.configuration.environment }
    var now: Date { intake.dependencies.now() }

    /// What to reconcile.
    public struct Options: Sendable {
        /// One customer only (no run is recorded or resumed).
        public var customer: UUID?
        /// Only transactions bought or refunded from then on.
        public var since: Date?
        /// Apply what is missing.
        public var repair: Bool

        /// Creates options.
        public init(customer: UUID? = nil, since: Date? = nil, repair: Bool = false) {
            self.customer = customer
            self.since = since
            self.repair = repair
        }
    }

    /// What a reconciliation did.
    public struct Report: Sendable {
        /// The run, as recorded (for one customer, a run of one that is not kept).
        public var run: ReconciliationRun
        /// Whether it resumed a run stopped before.
        public var resumed = false
        /// This sitting's discrepancies (at most ``Reconciler/reportedDiscrepancies``), each with its customer's
        /// Support ID and whether a repair may apply it.
        public var discrepancies: [(supportId: String, record: DiscrepancyRecord, repairable: Bool)] = []
    }

    /// Why a reconciliation could not run.
    public enum RefusalError: Error, CustomStringConvertible {
        /// Another instance holds the run.
        case running(holder: String, until: Date)
        /// The customer is not one of this environment's.
        case unknownCustomer

        /// A one-line explanation.
        public var description: String {
            switch self {
            case .running(let holder, let until):
                "a reconciliation is running on \(holder) (its claim lasts until \(until)); try again later"
            case .unknownCustomer: "no such customer in this environment"
            }
        }
    }

    /// Reconciles one customer or, without `options.customer`, every customer with any transaction (resuming a run
    /// that stopped midway with the same `since` and `repair`).
    ///
    /// - Parameter progress: Told of waits for Apple's rate limit and of each page, for a command's output.
    public func reconcile(_ options: Options, progress: (@Sendable (String) -> Void)? = nil) async throws -> Report {
        if let customer = options.customer {
            guard let user = try await store.user(id: customer), user.environment == environment else {
                throw RefusalError.unknownCustomer
            }
            var report = Report(run: ReconciliationRun(startedAt: now, since: options.since, repair: options.repair))
            let checked = try await check(user, since: options.since, repair: options.repair, progress: progress)
            report.run.customers = 1
            report.run.after = customer
            report.run.appleTransactions = checked.appleCount
            report.run.found = checked.records.count
            report.run.repaired = checked.records.filter { $0.repairedAt != nil }.count
            report.run.finishedAt = now
            report.discrepancies = zip(checked.records, checked.repairable).map { (user.supportId.rawValue, $0, $1) }
            return report
        }
        let (claimed, resumed) = try await claim(options)
        var report = Report(run: await claimed.run, resumed: resumed)
        do {
            try await walk(claimed, report: &report, progress: progress)
        } catch {
            // Stopped (a refused key, the store down, a shutdown): the place is kept for a resume, the claim let go.
            if await claimed.run.holder == holder {
                // A shutdown is no failure: the run waits to be resumed where it stopped.
                let reason = error is CancellationError ? nil : String("\(error)".prefix(500))
                await claimed.update {
                    $0.error = reason
                    $0.holder = nil
                    $0.leaseUntil = nil
                }
                _ = try? await claimed.save()
            }
            throw error
        }
        report.run = await claimed.run
        return report
    }

    /// Walks the customers from the run's place to the end, saving the place after each.
    private func walk(_ book: RunBook, report: inout Report, progress: (@Sendable (String) -> Void)?) async throws {
        var failures = 0
        var lastRead = await book.run.after
        var counted = await (book.run.customers, book.run.failedCustomers)
        let keepAlive: @Sendable () async throws -> Void = { try await book.renewIfDue() }
        while true {
            let page = try await store.reconciledCustomers(
                environment: environment, after: await book.run.after, limit: Self.pageSize)
            if page.isEmpty { break }
            for owner in page {
                // A shutdown stops between customers; the next start resumes here.
                if Task.isShuttingDownGracefully || Task.isCancelled { throw CancellationError() }
                let run = await book.run
                if let user = try await store.user(id: owner) {
                    do {
                        let checked = try await check(
                            user, since: run.since, repair: run.repair, progress: progress, keepAlive: keepAlive)
                        failures = 0
                        await book.update {
                            $0.appleTransactions += checked.appleCount
                            $0.found += checked.records.count
                            $0.repaired += checked.records.filter { $0.repairedAt != nil }.count
                        }
                        if report.discrepancies.count < Self.reportedDiscrepancies {
                            report.discrepancies += zip(checked.records, checked.repairable).map {
                                (user.supportId.rawValue, $0, $1)
                            }
                        }
                    } catch let error as CheckFailure {
                        logger.warning(
                            "reconciliation could not read a customer's history; the next run tries again",
                            metadata: ["supportId": "\(user.supportId.rawValue)", "error": "\(error.reason)"])
                        if error.transient {
                            failures += 1
                            if failures >= Self.failuresBeforeStopping {
                                // Apple or the network is down: the run stops at the last customer it could read,
                                // and its resume tries those again; stopped at the same place twice, it goes past
                                // them (counted as not read) so that a few customers cannot hold it there for good.
                                let (place, figures) = (lastRead, counted)
                                let mark = place?.uuidString ?? ""
                                await book.update {
                                    if $0.rewoundAt == mark {
                                        $0.rewoundAt = nil
                                        $0.customers += 1
                                        $0.failedCustomers += 1
                                        $0.after = owner
                                    } else {
                                        $0.rewoundAt = mark
                                        $0.after = place
                                        ($0.customers, $0.failedCustomers) = figures
                                    }
                                }
                                throw CheckFailure(
                                    reason:
                                        "stopped after \(failures) customers in a row could not be read: \(error.reason)",
                                    transient: true)
                            }
                        }
                        await book.update { $0.failedCustomers += 1 }
                    }
                }
                await book.update {
                    $0.customers += 1
                    $0.after = owner
                }
                if failures == 0 {
                    lastRead = owner
                    counted = await (book.run.customers, book.run.failedCustomers)
                }
                guard try await book.save() else {
                    throw RefusalError.running(holder: "another instance", until: now)
                }
            }
            let run = await book.run
            progress?("checked \(run.customers) customers; \(run.found) discrepancies, \(run.repaired) repaired")
        }
        let finished = now
        await book.update {
            $0.finishedAt = finished
            $0.holder = nil
            $0.leaseUntil = nil
            $0.error = nil
        }
        _ = try await book.save()
    }

    /// Takes the run: a new one, or the one stopped midway with the same options whose holder's claim has lapsed.
    private func claim(_ options: Options) async throws -> (RunBook, Bool) {
        let kept = try await store.cursor(ReconciliationRun.cursorName, environment: environment)
        let previous = kept.flatMap(ReconciliationRun.init(text:))
        if let previous, previous.finishedAt == nil, let holder = previous.holder, let until = previous.leaseUntil,
            until > now
        {
            throw RefusalError.running(holder: holder, until: until)
        }
        var run: ReconciliationRun
        var resumed = false
        if let previous, previous.finishedAt == nil, previous.since == options.since,
            previous.repair == options.repair
        {
            run = previous
            resumed = true
        } else {
            run = ReconciliationRun(startedAt: now, since: options.since, repair: options.repair)
        }
        run.holder = holder
        run.error = nil
        let book = RunBook(run: run, kept: kept, store: store, environment: environment, now: intake.dependencies.now)
        guard try await book.save() else { throw RefusalError.running(holder: "another instance", until: now) }
        return (book, resumed)
    }

    /// The scheduled runs: every `reconcile.interval` seconds after the last run started, one instance at a time;
    /// a run another instance left unfinished is resumed once its claim lapses.
    public func run() async throws {
        let interval = TimeInterval(intake.configuration.reconcileInterval)
        let repair = intake.configuration.reconcileRepair
        // A short check interval: a run another instance stopped is resumed soon after its claim lapses. The first
        // check waits one too, so a starting server serves before it reads Apple's history.
        let pause = min(interval, Self.lease)
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            do {
                try await cancelWhenGracefulShutdown {
                    try await self.intake.dependencies.timerClock.sleep(for: .seconds(pause))
                }
            } catch {
                return  // shutting down
            }
            do {
                let last = try await store.cursor(ReconciliationRun.cursorName, environment: environment)
                    .flatMap(ReconciliationRun.init(text:))
                let due: Bool =
                    switch last {
                    case nil: true
                    case let run? where run.finishedAt == nil: (run.leaseUntil ?? .distantPast) <= now
                    case let run?: run.startedAt.addingTimeInterval(interval) <= now
                    }
                if due {
                    // A run stopped midway is resumed as it was asked; a new one is as the settings say.
                    let unfinished = last.flatMap { $0.finishedAt == nil ? $0 : nil }
                    let report = try await reconcile(
                        Options(since: unfinished?.since, repair: unfinished?.repair ?? repair))
                    logger.info(
                        "reconciliation with Apple",
                        metadata: [
                            "customers": "\(report.run.customers)", "found": "\(report.run.found)",
                            "repaired": "\(report.run.repaired)", "left": "\(report.run.left)",
                        ])
                }
            } catch RefusalError.running {
                // Another instance runs it.
            } catch is CancellationError {
                return  // shutting down: the run waits to be resumed
            } catch {
                logger.error("reconciliation failed; it resumes at the next check: \(error)")
            }
        }
    }
}

/// The run being walked and the text last saved, shared by the walk and the renewals of its claim during long waits.
actor RunBook {
    private(set) var run: ReconciliationRun
    private var kept: String?
    private let store: any CofferStore
    private let environment: CofferCore.AppStoreEnvironment
    private let now: @Sendable () -> Date
    private var savedAt = Date.distantPast

    init(
        run: ReconciliationRun, kept: String?, store: any CofferStore, environment: CofferCore.AppStoreEnvironment,
        now: @escaping @Sendable () -> Date
    ) {
        self.run = run
        self.kept = kept
        self.store = store
        self.environment = environment
        self.now = now
    }

    /// Changes the run in memory.
    func update(_ change: @Sendable (inout ReconciliationRun) -> Void) { change(&run) }

    /// Renews the claim when a third of it has passed since the last save (during one customer's long reading).
    ///
    /// - Throws: ``Reconciler/RefusalError/running(holder:until:)`` when another instance took the run over.
    func renewIfDue() async throws {
        guard now().timeIntervalSince(savedAt) > Reconciler.lease / 3 else { return }
        guard try await save() else { throw Reconciler.RefusalError.running(holder: "another instance", until: now()) }
    }

    /// Saves the run's place and renews its claim, only if nobody else changed it meanwhile.
    ///
    /// - Returns: `false` when another instance took it over (a claim that lapsed): nothing more of it is saved.
    func save() async throws -> Bool {
        if run.holder != nil { run.leaseUntil = now().addingTimeInterval(Reconciler.lease) }
        let text = run.text
        guard
            try await store.swapCursor(
                ReconciliationRun.cursorName, environment: environment, expected: kept, value: text)
        else {
            run.holder = nil
            return false
        }
        kept = text
        savedAt = now()
        return true
    }
}
