import AsyncHTTPClient
import CofferAPI
import CofferAppStore
import CofferCore
import CofferServer
import CofferService
import CofferSimulator
import CofferStore
import CofferTestSupport
import Crypto
import Foundation
import Synchronization
import Testing

/// The ledger reconciled with Apple's Transaction History and Refund History, read from the simulator over loopback
/// HTTP with no notification ever reaching the server.
@Suite("Reconciliation with Apple's history", .timeLimit(.minutes(2)))
struct ReconcileTests {
    /// A timer clock that moves the simulator's clock when slept on (and reads it), so a wait for Apple's
    /// `Retry-After` passes in the simulator's time at once, and records every wait.
    final class AppleTimeClock: TimerClock, Sendable {
        let apple: SimulatedAppStore
        let start: Date
        let clock: SimulatorClock
        let waits = Mutex<[TimeInterval]>([])

        init(_ setup: NotificationTests.Setup) {
            apple = setup.apple
            clock = setup.clock
            start = setup.clock.now()
        }

        var elapsed: Duration { .milliseconds(Int64(clock.now().timeIntervalSince(start) * 1_000)) }

        func sleep(for duration: Duration) async throws {
            let seconds = Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
            waits.withLock { $0.append(seconds) }
            _ = try await apple.advanceClock(by: seconds)
        }
    }

    static func reconciler(
        _ setup: NotificationTests.Setup, _ api: AppStoreServerAPIClient, timerClock: (any TimerClock)? = nil
    ) throws -> Reconciler {
        let clock = setup.clock
        let dependencies = try ServerDependencies(
            store: setup.store, verifier: setup.verifier, catalog: setup.catalog, appStoreAPI: api,
            now: { clock.now() }, timerClock: timerClock ?? AppleTimeClock(setup))
        return try #require(Reconciler(configuration: setup.configuration.service, dependencies: dependencies))
    }

    /// A customer whose first purchase the app presented, then a purchase and a refund only Apple knew of.
    static func customerWithGaps(_ setup: NotificationTests.Setup, account: String) async throws
        -> (user: CreateUserResponse, owner: UUID, presented: String, unknown: String)
    {
        let user = try await setup.createUser()
        let presented = try #require(
            try await setup.apple.purchase(
                account: account, productId: "com.example.credits", quantity: 2, appAccountToken: user.appAccountToken
            ).transactionIds.first)
        let signed = try await setup.apple.signedTransaction(id: presented)
        try await setup.app.test(.router) { client in
            let answer = try await NotificationTests.present(signed, as: user, with: client)
            #expect(answer.balance == 200)
        }
        let unknown = try #require(
            try await setup.apple.purchase(
                account: account, productId: "com.example.credits", appAccountToken: user.appAccountToken
            ).transactionIds.first)
        try await setup.apple.refund(transactionId: presented)
        try await setup.apple.advanceClock(by: 60)
        let owner = try #require(
            try await setup.store.user(appAccountToken: user.appAccountToken, environment: .sandbox)
        ).id
        return (user, owner, presented, unknown)
    }

    @Test(
        "a purchase and a refund only Apple knew of are found, then settled by a repair once; Apple's late word is a duplicate",
        arguments: ServerEngine.allCases)
    func repair(engine: ServerEngine) async throws {
        let setup = try NotificationTests.Setup(store: try await engine.makeStore())
        let (_, owner, presented, unknown) = try await Self.customerWithGaps(setup, account: "erin")
        let store = setup.store
        try await RecoveryTests.withAppleAPI(setup) { api in
            let reconciler = try Self.reconciler(setup, api)
            let found = try await reconciler.reconcile(.init())
            #expect(found.run.customers == 1)
            #expect(found.run.appleTransactions == 2)
            #expect(found.run.finishedAt != nil)
            let kinds = found.discrepancies.map { [$0.record.transactionId: $0.record.kind] }
            #expect(kinds == [[presented: .missingRefund], [unknown: .missingPurchase]])
            #expect(found.run.repaired == 0)
            // Only a report: the ledger is as it was, and the customer page has both.
            #expect(try await store.wallet(owner: owner, environment: .sandbox) == Wallet(balance: 200, deficit: 0))
            let kept = try await store.discrepancies(owner: owner, environment: .sandbox)
            #expect(kept.map(\.kind) == [.missingRefund, .missingPurchase])
            #expect(kept.allSatisfy { $0.repairedAt == nil })

            let repaired = try await reconciler.reconcile(.init(repair: true))
            #expect(repaired.run.found == 2)
            #expect(repaired.run.repaired == 2)
            #expect(try await store.wallet(owner: owner, environment: .sandbox) == Wallet(balance: 100, deficit: 0))
            #expect(try await store.receipt(transactionId: presented, environment: .sandbox)?.status == .revoked)
            #expect(try await store.receipt(transactionId: unknown, environment: .sandbox)?.status == .delivered)
            #expect(
                try await store.discrepancies(owner: owner, environment: .sandbox).allSatisfy { $0.repairedAt != nil })

            // Twice is safe: nothing is found, nothing moves.
            let again = try await reconciler.reconcile(.init(repair: true))
            #expect(again.run.found == 0)
            #expect(try await store.discrepancies(owner: owner, environment: .sandbox).isEmpty)
            #expect(try await store.entries(owner: owner, environment: .sandbox).count == 3)
            let last = try await store.cursor(ReconciliationRun.cursorName, environment: .sandbox)
                .flatMap(ReconciliationRun.init(text:))
            #expect(last?.finishedAt != nil)
            #expect(last?.holder == nil)
        }
        // Apple's notifications arriving late find the same ledger keys: duplicates, the balance unchanged.
        try await setup.app.test(.router) { client in
            _ = try await setup.deliver(after: 0, with: client)
        }
        #expect(try await store.wallet(owner: owner, environment: .sandbox) == Wallet(balance: 100, deficit: 0))
        #expect(try await store.entries(owner: owner, environment: .sandbox).count == 3)
    }

    @Test(
        "a purchase Apple does not know and one whose quantity differs are left for support",
        arguments: ServerEngine.allCases)
    func leftForSupport(engine: ServerEngine) async throws {
        let setup = try NotificationTests.Setup(store: try await engine.makeStore())
        let (_, owner, _, unknown) = try await Self.customerWithGaps(setup, account: "fay")
        let store = setup.store
        // The ledger holds Apple's unpresented purchase with another quantity, and one Apple never sold.
        let appleFact = try #require(try await Self.fact(setup, unknown))
        var changed = appleFact
        changed.quantity = 3
        var invented = appleFact
        invented.transactionId = "9990000000001"
        invented.originalTransactionId = invented.transactionId
        let ledger = LedgerBatcher(store: store)
        for fact in [changed, invented] {
            let request = LedgerRequest(
                owner: owner, environment: .sandbox, event: .purchase(fact, credits: 100), at: setup.clock.now())
            guard case .success = try #require(try await ledger.apply([request]).first) else {
                Issue.record("the ledger refused the seeded purchase")
                return
            }
        }
        try await RecoveryTests.withAppleAPI(setup) { api in
            let report = try await Self.reconciler(setup, api).reconcile(.init(repair: true))
            let byId = Dictionary(
                report.discrepancies.map { ($0.record.transactionId + "/" + $0.record.kind.rawValue, $0.record) }
            ) { a, _ in a }
            #expect(byId["\(unknown)/differs"]?.detail == "quantity: ledger 3, Apple 1")
            #expect(byId["\(unknown)/differs"]?.repairedAt == nil)
            #expect(byId["9990000000001/unknown-to-apple"]?.repairedAt == nil)
            #expect(report.run.left == 2)
            // The refund Apple made is repaired beside them.
            #expect(report.run.repaired == 1)
            let kept = try await store.discrepancies(owner: owner, environment: .sandbox)
            #expect(Set(kept.map(\.kind)) == [.differs, .unknownToApple, .missingRefund])
        }
    }

    @Test("Apple's 429 is waited out until its Retry-After, and the run goes on")
    func rateLimit() async throws {
        let setup = try NotificationTests.Setup()
        for account in ["gus", "hal"] { _ = try await Self.customerWithGaps(setup, account: account) }
        // Refund History answers one request an hour: the second customer's waits for the next hour.
        _ = try await setup.apple.setRateLimit("refund-history", perHour: 1)
        try await RecoveryTests.withAppleAPI(setup) { api in
            let clock = AppleTimeClock(setup)
            let before = setup.clock.now()
            let report = try await Self.reconciler(setup, api, timerClock: clock).reconcile(.init(repair: true))
            #expect(report.run.customers == 2)
            #expect(report.run.failedCustomers == 0)
            #expect(report.run.repaired == 4)
            let nextHour = (before.timeIntervalSince1970 / 3_600).rounded(.down) * 3_600 + 3_600
            let waited = clock.waits.withLock { $0 }
            // It slept until Apple's named time, not less, in steps shorter than its claim (renewed at each).
            #expect(before.addingTimeInterval(waited.reduce(0, +)).timeIntervalSince1970 >= nextHour - 1)
            #expect(waited.allSatisfy { $0 <= 100 })
        }
    }

    @Test("past a limit the simulator answers as Apple: 429, RateLimitExceededError, Retry-After in milliseconds")
    func simulatorLimit() async throws {
        let setup = try NotificationTests.Setup()
        let id = try #require(
            try await setup.apple.purchase(account: "kim", productId: "com.example.credits").transactionIds.first)
        _ = try await setup.apple.setRateLimit("transaction-info", perHour: 1)
        await #expect(throws: SimulatorError.self) { _ = try await setup.apple.setRateLimit("everything", perHour: 1) }
        try await RecoveryTests.withAppleAPI(setup) { api in
            _ = try await api.getTransactionInfo(id)
            let now = setup.clock.now()
            do {
                _ = try await api.getTransactionInfo(id)
                Issue.record("the second request of the hour was answered")
            } catch let error as AppStoreAPIError {
                #expect(error.apiErrorCode == .rateLimitExceeded)
                let nextHour = (now.timeIntervalSince1970 / 3_600).rounded(.down) * 3_600 + 3_600
                #expect(error.retryAfter?.timeIntervalSince1970 == nextHour)
            }
            // Other endpoints are not limited; the next hour is.
            _ = try await api.getTransactionHistory(id)
            _ = try await setup.apple.advanceClock(by: 3_600)
            _ = try await api.getTransactionInfo(id)
        }
    }

    @Test("a run stopped midway is resumed after the last customer it checked; a live claim refuses a second run")
    func resume() async throws {
        let setup = try NotificationTests.Setup()
        var found: [UUID] = []
        for account in ["ida", "jon"] { found.append(try await Self.customerWithGaps(setup, account: account).owner) }
        let owners = found.sorted { $0.uuidString < $1.uuidString }
        let store = setup.store
        // A run that checked the first customer, then its instance died: its claim has lapsed.
        var stopped = ReconciliationRun(startedAt: setup.clock.now(), since: nil, repair: true)
        stopped.after = owners[0]
        stopped.customers = 1
        stopped.holder = "gone"
        stopped.leaseUntil = setup.clock.now().addingTimeInterval(-1)
        try await store.saveCursor(ReconciliationRun.cursorName, value: stopped.text, environment: .sandbox)
        let stoppedId = stopped.id
        try await RecoveryTests.withAppleAPI(setup) { api in
            let reconciler = try Self.reconciler(setup, api)
            let report = try await reconciler.reconcile(.init(repair: true))
            #expect(report.resumed)
            #expect(report.run.id == stoppedId)
            #expect(report.run.customers == 2)
            #expect(Set(report.discrepancies.map(\.record.owner)) == [owners[1]])
            #expect(try await store.wallet(owner: owners[0], environment: .sandbox).balance == 200)
            #expect(try await store.wallet(owner: owners[1], environment: .sandbox).balance == 100)

            // Another instance holding a run now: a second one is refused, nothing read.
            var running = ReconciliationRun(startedAt: setup.clock.now(), since: nil, repair: false)
            running.holder = "other"
            running.leaseUntil = setup.clock.now().addingTimeInterval(60)
            try await store.saveCursor(ReconciliationRun.cursorName, value: running.text, environment: .sandbox)
            await #expect(throws: Reconciler.RefusalError.self) { try await reconciler.reconcile(.init()) }
            // One customer alone is checked whatever runs.
            let one = try await reconciler.reconcile(.init(customer: owners[0], repair: true))
            #expect(one.run.repaired == 2)
        }
    }

    @Test("the scheduled run: checks every five minutes, runs a day after the last, repairing as reconcile.repair says")
    func scheduled() async throws {
        let setup = try NotificationTests.Setup()
        let (_, owner, _, _) = try await Self.customerWithGaps(setup, account: "lee")
        let store = setup.store
        try await RecoveryTests.withAppleAPI(setup) { api in
            // A report-only run by hand first: the scheduled one still repairs, as the setting says.
            let manual = try await Self.reconciler(setup, api).reconcile(.init()).run.id
            let timer = TestClock()
            var configuration = setup.configuration.service
            configuration.reconcileInterval = 86_400
            let simulated = setup.clock
            let dependencies = try ServerDependencies(
                store: store, verifier: setup.verifier, catalog: setup.catalog, appStoreAPI: api,
                now: { simulated.now() }, timerClock: timer)
            let scheduled = try #require(Reconciler(configuration: configuration, dependencies: dependencies))
            let running = Task { try await scheduled.run() }
            defer { running.cancel() }
            // The first check, five minutes after start: the run by hand is not a day old, nothing runs.
            await timer.waitForSleepers()
            timer.advance(300)
            await timer.waitForSleepers()
            #expect(try await Self.lastRun(store)?.id == manual)
            #expect(try await store.wallet(owner: owner, environment: .sandbox).balance == 200)
            // A day on, the scheduled run repairs, as reconcile.repair says (not as the run by hand was asked).
            _ = try await setup.apple.advanceClock(by: 86_400)
            timer.advance(300)
            let finished = try await Self.nextRun(store, after: manual)
            #expect(finished.repair && finished.repaired == 2)
            #expect(try await store.wallet(owner: owner, environment: .sandbox).balance == 100)
            // Another day on, the next run finds the books agree.
            await timer.waitForSleepers()
            _ = try await setup.apple.advanceClock(by: 86_400)
            timer.advance(300)
            let next = try await Self.nextRun(store, after: finished.id)
            #expect(next.found == 0 && next.customers == 1)
        }
    }

    @Test("the dashboard shows the last run's figures, with what is left for support")
    func dashboard() async throws {
        let setup = try NotificationTests.Setup()
        _ = try await Self.customerWithGaps(setup, account: "max")
        try await PanelTests.admin(in: setup.store)
        try await RecoveryTests.withAppleAPI(setup) { api in
            _ = try await Self.reconciler(setup, api).reconcile(.init())
            try await setup.application(api: api).test(.router) { client in
                var browser = PanelTests.Browser()
                _ = try await browser.signIn(client)
                let page = String(buffer: try await browser.get(client, "/admin").body)
                #expect(page.contains(#"id="apple-reconciliation" class="notice error""#))
                #expect(
                    page.contains(
                        "1 customers checked against Apple&#39;s history, 2 discrepancies, 0 repaired, 2 left for support"
                    ), "\(page)")
            }
        }
    }

    @Test(
        "Apple unreachable: five customers in a row stop the run at the last one read; stopped there again, it goes past"
    )
    func appleDown() async throws {
        let setup = try NotificationTests.Setup()
        for account in ["n1", "n2", "n3", "n4", "n5", "n6"] {
            _ = try await Self.customerWithGaps(setup, account: account)
        }
        let http = HTTPClient(eventLoopGroupProvider: .singleton)
        var retry = AppStoreServerAPIClient.RetryPolicy()
        retry.initialBackoff = .milliseconds(1)
        // Nothing listens on port 9 of this machine, and no call may wait: every call fails at once, as a lost
        // network's do once their deadline passes.
        retry.callTimeout = .zero
        let api = AppStoreServerAPIClient(
            httpClient: http,
            credentials: .init(
                keyId: RecoveryTests.keyId, issuerId: RecoveryTests.issuerId, bundleId: NotificationTests.bundleId,
                privateKey: P256.Signing.PrivateKey()),
            environment: .sandbox, baseURL: "http://127.0.0.1:9", retry: retry)
        do {
            try await Self.stopAndGoPast(setup, try Self.reconciler(setup, api))
        } catch {
            try await http.shutdown()
            throw error
        }
        try await http.shutdown()
    }

    static func stopAndGoPast(_ setup: NotificationTests.Setup, _ reconciler: Reconciler) async throws {
        func attempt() async throws -> ReconciliationRun {
            await #expect(throws: (any Error).self) { _ = try await reconciler.reconcile(.init(repair: true)) }
            return try #require(try await Self.lastRun(setup.store))
        }
        let first = try await attempt()
        #expect(first.after == nil && first.customers == 0 && first.failedCustomers == 0)
        #expect(first.finishedAt == nil && first.holder == nil && first.error?.contains("in a row") == true)
        // Stopped at the same place again: it goes past the five, counted as not read.
        let second = try await attempt()
        #expect(second.id == first.id && second.customers == 5 && second.failedCustomers == 5)
        // The sixth fails alone: the run ends, with every customer counted once.
        let third = try await reconciler.reconcile(.init(repair: true))
        #expect(third.resumed && third.run.finishedAt != nil)
        #expect(third.run.customers == 6 && third.run.failedCustomers == 6)
    }

    /// The recorded run.
    static func lastRun(_ store: any CofferStore) async throws -> ReconciliationRun? {
        try await store.cursor(ReconciliationRun.cursorName, environment: .sandbox).flatMap(
            ReconciliationRun.init(text:))
    }

    /// Waits (at most about 10 s) for a finished run other than `after`.
    static func nextRun(_ store: any CofferStore, after: UUID?) async throws -> ReconciliationRun {
        for _ in 0..<1_000 {
            if let run = try await lastRun(store), run.finishedAt != nil, run.id != after { return run }
            try await Task.sleep(for: .milliseconds(10))
        }
        throw CancellationError()
    }

    /// Apple's signed transaction `id`, verified.
    static func fact(_ setup: NotificationTests.Setup, _ id: String) async throws -> TransactionFact? {
        TransactionFact(try await setup.verifier.verifyTransaction(try await setup.apple.signedTransaction(id: id)))
    }
}

/// What support sees of a reconciliation: each discrepancy on its customer's page and the admin API's detail, and the
/// dashboard's word on the reconciliation.
@Suite("Reconciliation on the panel", .timeLimit(.minutes(1)))
struct ReconcilePanelTests {
    @Test("the customer page lists each discrepancy, repaired or for support; the admin API's detail carries them")
    func customerPage() async throws {
        let store = InMemoryStore()
        try await PanelTests.signedIn(store) { client, created, browser in
            let supportId = try #require(SupportID(created.supportId))
            let user = try #require(try await store.user(supportId: supportId, environment: .sandbox))
            let found = Date(timeIntervalSince1970: 1_767_229_200)
            try await store.replaceDiscrepancies(
                owner: user.id, environment: .sandbox,
                [
                    DiscrepancyRecord(
                        owner: user.id, environment: .sandbox, kind: .missingPurchase,
                        transactionId: "2000000000000041",
                        productId: "com.example.credits", detail: "", foundAt: found, repairedAt: found),
                    DiscrepancyRecord(
                        owner: user.id, environment: .sandbox, kind: .differs, transactionId: "2000000000000042",
                        productId: "com.example.credits", detail: "quantity: ledger 3, Apple 1", foundAt: found),
                ])
            let page = String(buffer: try await browser.get(client, "/admin/users/\(created.supportId)").body)
            #expect(page.contains(#"id="discrepancies""#))
            #expect(page.contains(#"id="discrepancy-2000000000000041-missing-purchase""#))
            #expect(page.contains("Apple charged for it; the ledger lacks it"))
            #expect(page.contains("quantity: ledger 3, Apple 1"))
            #expect(page.contains("for support"))
            #expect(page.contains("repaired"))
            let dashboard = String(buffer: try await browser.get(client, "/admin").body)
            // This server has no In-App Purchase key: the dashboard says the books are not checked, and why.
            #expect(dashboard.contains(#"id="apple-reconciliation""#))
            #expect(dashboard.contains("the ledger is not checked against Apple&#39;s history"))
        }
    }

    @Test("a customer the reconciliation found nothing for has no such section")
    func nothingFound() async throws {
        let store = InMemoryStore()
        try await PanelTests.signedIn(store) { client, created, browser in
            let page = String(buffer: try await browser.get(client, "/admin/users/\(created.supportId)").body)
            #expect(page.contains(created.supportId))
            #expect(!page.contains(#"id="discrepancies""#))
        }
    }
}
