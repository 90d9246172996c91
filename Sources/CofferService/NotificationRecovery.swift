import CofferAppStore
import CofferCore
import CofferStore
import Foundation
import Logging
import ServiceLifecycle

/// Recovers what Apple's notifications missed: reads Notification History from a cursor kept in the
/// store (so it resumes where it stopped after a restart), applies every notification through the same
/// intake as Apple's posts (de-duplicated by `notificationUUID`), then reads the Transaction History of
/// the customers it touched and delivers any transaction the ledger lacks.
public struct NotificationRecovery: Service {
    /// The cursor's name in the store.
    static let cursorName = "notification-history"

    let intake: NotificationIntake
    let client: AppStoreServerAPIClient
    /// Seconds between runs.
    let interval: Int
    /// How far back the first run reads, in seconds (Apple keeps 180 days, 30 in the sandbox).
    let firstLookback: TimeInterval
    let logger: Logger

    /// A recovery service on its own (for `coffer` commands and tests); a running server builds its own
    /// in `buildApplication(configuration:dependencies:)` (CofferServer).
    ///
    /// - Returns: `nil` when the dependencies have no App Store Server API client.
    public init?(configuration: ServiceConfiguration, dependencies: ServerDependencies) {
        self.init(intake: NotificationIntake(configuration: configuration, dependencies: dependencies))
    }

    /// The recovery service for `intake`, `nil` without an App Store Server API client.
    public init?(intake: NotificationIntake) {
        guard let client = intake.dependencies.appStoreAPI else { return nil }
        self.intake = intake
        self.client = client
        interval = intake.configuration.recoveryInterval
        firstLookback = TimeInterval(intake.configuration.recoveryLookbackDays) * 86_400
        logger = intake.dependencies.logger
    }

    /// The days of Notification History Apple keeps.
    static func historyDays(_ environment: CofferCore.AppStoreEnvironment) -> Double {
        environment == .production ? 180 : 30
    }

    var store: any CofferStore { intake.store }
    var environment: CofferCore.AppStoreEnvironment { intake.configuration.environment }

    /// What one run did.
    public struct Report: Sendable, Equatable {
        /// Notifications read from Notification History.
        public var read = 0
        /// Of those, the ones not seen before (now applied, kept or logged).
        public var new = 0
        /// Transactions delivered from Transaction History that no notification or app post had brought.
        public var filled = 0
    }

    /// Runs every `interval` seconds until the server shuts down; a failed run is logged and retried at
    /// the next interval.
    public func run() async throws {
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            var run: RecoveryRun
            do {
                let report = try await runOnce()
                logger.info(
                    "notification recovery",
                    metadata: ["read": "\(report.read)", "new": "\(report.new)", "filled": "\(report.filled)"])
                run = RecoveryRun(
                    at: intake.dependencies.now(), read: report.read, new: report.new, filled: report.filled)
            } catch {
                logger.error("notification recovery failed; retrying at the next interval: \(error)")
                run = RecoveryRun(at: intake.dependencies.now(), read: 0, new: 0, filled: 0, error: "\(error)")
            }
            // The dashboard shows the last run; a store that does not answer now is logged above already.
            run.error = run.error.map { String($0.prefix(500)) }
            try? await store.saveCursor(RecoveryRun.cursorName, value: run.text, environment: environment)
            do {
                try await cancelWhenGracefulShutdown {
                    try await self.intake.dependencies.timerClock.sleep(for: .seconds(self.interval))
                }
            } catch {
                return  // shutting down
            }
        }
    }

    /// One pass: from the cursor to now, page by page, saving the cursor after every page.
    public func runOnce() async throws -> Report {
        let now = intake.dependencies.now()
        var cursor =
            try await store.cursor(Self.cursorName, environment: environment).flatMap(Cursor.init)
            ?? Cursor(start: now.addingTimeInterval(-firstLookback), end: now, token: nil)
        if cursor.token == nil { cursor.end = now }
        // Apple keeps 180 days of history in Production and 30 in the sandbox, and refuses an older start
        // (4000012): a cursor from before that (a server stopped for weeks) starts at the oldest day Apple has.
        let oldest = now.addingTimeInterval(-Self.historyDays(environment) * 86_400 + 3_600)
        if cursor.start < oldest {
            logger.warning(
                "notification recovery starts at the oldest day Apple keeps; notifications before it are not read",
                metadata: ["cursor": "\(cursor.start)", "oldest": "\(oldest)"])
            cursor = Cursor(start: oldest, end: now, token: nil)
        }
        var report = Report()
        var touched: [UUID: String] = [:]
        while true {
            var request = NotificationHistoryRequest()
            request.startDate = cursor.start
            request.endDate = cursor.end
            let page = try await client.getNotificationHistory(request, paginationToken: cursor.token)
            for item in page.notificationHistory ?? [] {
                guard let signed = item.signedPayload else { continue }
                report.read += 1
                let received: (outcome: NotificationIntake.Outcome, record: NotificationRecord?)
                do {
                    received = try await intake.receive(signed, source: "recovery", logger: logger)
                } catch let error as ServiceError where error.isVerificationRefusal {
                    // Data that will never verify here must not stop the cursor forever: logged, skipped.
                    logger.error("a notification from history was refused: \(error.code): \(error.message)")
                    continue
                }
                guard let record = received.record else { continue }  // seen before
                report.new += 1
                if let owner = record.owner, let transactionId = record.transactionId {
                    touched[owner] = transactionId
                }
            }
            if page.hasMore == true, let token = page.paginationToken {
                cursor.token = token
                try await store.saveCursor(Self.cursorName, value: cursor.rawValue, environment: environment)
                continue
            }
            // The next window starts a little before this one ended: history can show a notification
            // after its signed date, and de-duplication makes the overlap free.
            cursor = Cursor(start: cursor.end.addingTimeInterval(-3_600), end: cursor.end, token: nil)
            try await store.saveCursor(Self.cursorName, value: cursor.rawValue, environment: environment)
            break
        }
        for (owner, transactionId) in touched.sorted(by: { $0.key.uuidString < $1.key.uuidString }) {
            report.filled += try await fillGaps(owner: owner, anyTransactionId: transactionId)
        }
        return report
    }

    /// Delivers the customer's transactions the ledger lacks, from Transaction History.
    private func fillGaps(owner: UUID, anyTransactionId: String) async throws -> Int {
        guard let user = try await store.user(id: owner) else { return 0 }
        var filled = 0
        for signed in try await client.allTransactions(anyTransactionId) {
            guard let transaction = try? await intake.dependencies.verifier.verifyTransaction(signed),
                let fact = TransactionFact(transaction),
                try await store.receipt(transactionId: fact.transactionId, environment: environment) == nil
            else { continue }
            if let token = transaction.appAccountToken, token != user.appAccountToken { continue }
            if try await intake.deliver(fact, to: user, source: "recovery", logger: logger) { filled += 1 }
        }
        return filled
    }
}

/// Where recovery stands: the window being read and, mid-window, the next page's token.
struct Cursor: Equatable {
    var start: Date
    var end: Date
    var token: String?

    init(start: Date, end: Date, token: String?) {
        self.start = start
        self.end = end
        self.token = token
    }

    /// Parses `startMillis|endMillis|token`.
    init?(_ rawValue: String) {
        let parts = rawValue.split(separator: "|", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3, let start = Int64(parts[0]), let end = Int64(parts[1]) else { return nil }
        self.start = Date(timeIntervalSince1970: Double(start) / 1_000)
        self.end = Date(timeIntervalSince1970: Double(end) / 1_000)
        token = parts[2].isEmpty ? nil : String(parts[2])
    }

    var rawValue: String {
        let millis = { (date: Date) in String(Milliseconds.from(date)) }
        return "\(millis(start))|\(millis(end))|\(token ?? "")"
    }
}
