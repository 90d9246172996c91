import CofferCore
import CofferStore
import CofferTestSupport
import Foundation
import Testing

/// The ``SupportViewStore`` contract every engine keeps (``StoreEngine``): support's views across customers: backup history, the dashboard's figures and money, Sandbox grants.
@Suite("SupportViewStore contract")
struct SupportViewStoreContractTests {
    @Test("backup history keeps every write with the value it replaced, newest first", arguments: StoreEngine.allCases)
    func backupHistory(engine: StoreEngine) async throws {
        let store = try await engine.makeStore()
        let alice = Make.user("_aaaaaaaaaaa1")
        try await store.createUser(alice)
        _ = try await store.saveBackup(
            owner: alice.id, environment: .sandbox, value: 100, precondition: .absent, writer: .device("phone"),
            at: Make.start)
        _ = try await store.saveBackup(
            owner: alice.id, environment: .sandbox, value: 1, precondition: .version(7), writer: .device("phone"),
            at: Make.start)
        let later = Make.start.addingTimeInterval(60)
        _ = try await store.saveBackup(
            owner: alice.id, environment: .sandbox, value: 500, precondition: .overwrite, writer: .admin("ada"),
            at: later)
        let history = try await store.backupHistory(owner: alice.id, environment: .sandbox, limit: 10)
        #expect(
            history == [
                BackupHistoryItem(
                    record: BackupRecord(value: 500, lastUpdated: later, version: 2, writer: .admin("ada")),
                    previousValue: 100),
                BackupHistoryItem(
                    record: BackupRecord(value: 100, lastUpdated: Make.start, version: 1, writer: .device("phone")),
                    previousValue: nil),
            ])
        #expect(try await store.backupHistory(owner: alice.id, environment: .sandbox, limit: 1).count == 1)
        #expect(try await store.backupHistory(owner: alice.id, environment: .production, limit: 10).isEmpty)
    }

    @Test(
        "backup history is bounded per user: the newest are kept", .tags(.timing), arguments: StoreEngine.allCases)
    func backupHistoryBounded(engine: StoreEngine) async throws {
        let store = try await engine.makeStore()
        let alice = Make.user("_aaaaaaaaaaa1")
        let bob = Make.user("_bbbbbbbbbbb1")
        try await store.createUser(alice)
        try await store.createUser(bob)
        _ = try await store.saveBackup(
            owner: bob.id, environment: .sandbox, value: 7, precondition: .overwrite, writer: .device("pad"),
            at: Make.start)
        let writes = BackupHistoryItem.kept + 5
        for value in 1...writes {
            _ = try await store.saveBackup(
                owner: alice.id, environment: .sandbox, value: Int64(value), precondition: .overwrite,
                writer: .device("phone"), at: Make.start)
        }
        let history = try await store.backupHistory(owner: alice.id, environment: .sandbox, limit: 1_000)
        #expect(history.count == BackupHistoryItem.kept)
        #expect(history.first?.record.value == Int64(writes))
        #expect(history.last?.record.value == Int64(writes - BackupHistoryItem.kept + 1))
        #expect(try await store.backupHistory(owner: bob.id, environment: .sandbox, limit: 1_000).count == 1)
    }

    @Test(
        "dashboard: users, grants, purchases, refunds, deficits and per-day counts of one environment",
        arguments: StoreEngine.allCases)
    func dashboard(engine: StoreEngine) async throws {
        let store = try await engine.makeStore()
        let alice = Make.user("_aaaaaaaaaaa1")
        let bob = Make.user("_bbbbbbbbbbb2")
        let carol = Make.user("_ccccccccccc3", in: .production)
        for user in [alice, bob, carol] { try await store.createUser(user) }
        let day = TimeInterval(86_400)
        // Alice buys on day 0 and day 2; the day-2 purchase is refunded on day 3 after she spent it: deficit.
        _ = try await store.apply(Make.purchase("t1", for: alice))
        var second = Make.purchase("t2", for: alice)
        second.at = Make.start.addingTimeInterval(2 * day + 5)
        _ = try await store.apply(second)
        _ = try await store.apply(
            LedgerRequest(
                owner: alice.id, environment: .sandbox, event: .spend(key: "s1", amount: 700),
                at: Make.start.addingTimeInterval(2 * day + 6)))
        var refunded = Make.fact("t2", revoked: true)
        refunded.revocationDate = Make.start.addingTimeInterval(3 * day + 1)
        _ = try await store.apply(
            LedgerRequest(
                owner: alice.id, environment: .sandbox, event: .revocation(refunded),
                at: Make.start.addingTimeInterval(3 * day + 2)))
        _ = try await store.apply(Make.purchase("t3", for: bob))
        _ = try await store.apply(Make.purchase("p1", for: carol))
        try await store.createGrant(
            Grant(
                environment: .sandbox, recipient: bob.id, credits: 10, reason: "r", createdBy: "ada",
                createdAt: Make.start))
        let claimed = Grant(
            environment: .sandbox, recipient: bob.id, credits: 20, reason: "r", createdBy: "ada", createdAt: Make.start)
        try await store.createGrant(claimed)
        _ = try await store.claimGrant(
            id: claimed.id, recipient: bob.id, environment: .sandbox, crediting: .collect, at: Make.start)

        let now = Make.start.addingTimeInterval(3 * day + 100)
        let figures = try await store.dashboard(environment: .sandbox, days: 30, now: now)
        #expect(figures.users == 2)
        #expect(figures.pendingGrants == 1 && figures.claimedGrants == 1)
        #expect(figures.purchases == 3)
        #expect(figures.refunds == 1)
        #expect(figures.usersInDeficit == 1)
        #expect(figures.outstandingDeficit == 300)
        #expect(figures.days.count == 30)
        #expect(figures.days.last?.day == Make.start.addingTimeInterval(3 * day))
        let counts = figures.days.suffix(4).map { [$0.purchases, $0.refunds] }
        #expect(counts == [[2, 0], [0, 0], [1, 0], [0, 1]])

        let production = try await store.dashboard(environment: .production, days: 7, now: now)
        #expect(production.users == 1 && production.purchases == 1 && production.refunds == 0)
        #expect(production.days.map(\.purchases).reduce(0, +) == 1)
    }

    @Test(
        "the dashboard counts each other currency's deficits apart from the default currency's",
        arguments: StoreEngine.allCases)
    func dashboardCurrencyDeficits(engine: StoreEngine) async throws {
        let store = try await engine.makeStore()
        let (alice, bob) = (Make.user("_aaaaaaaaaaa1"), Make.user("_bbbbbbbbbbb2"))
        for user in [alice, bob] { try await store.createUser(user) }
        let (gems, stars) = (try #require(Currency(rawValue: "gems")), try #require(Currency(rawValue: "stars")))
        func apply(_ user: User, _ event: LedgerEvent, _ currency: Currency) async throws {
            _ = try await store.apply(
                LedgerRequest(owner: user.id, environment: .sandbox, event: event, at: Make.start, currency: currency))
        }
        // Each buys 10, spends some, and is refunded: what was spent becomes that currency's deficit.
        for (user, currency, spent) in [(alice, gems, Int64(8)), (bob, gems, 3), (bob, stars, 1)] {
            let fact = Make.fact("t-\(user.supportId.rawValue)-\(currency)")
            try await apply(user, .purchase(fact, credits: 10), currency)
            try await apply(user, .spend(key: "s", amount: spent), currency)
            var refunded = fact
            refunded.revocationDate = Make.start.addingTimeInterval(60)
            try await apply(user, .revocation(refunded), currency)
        }
        var figures = try await store.dashboard(environment: .sandbox, days: 7, now: Make.start)
        #expect(figures.usersInDeficit == 0 && figures.outstandingDeficit == 0)
        #expect(
            figures.currencyDeficits == [
                CurrencyDeficit(currency: "gems", usersInDeficit: 2, outstandingDeficit: 11),
                CurrencyDeficit(currency: "stars", usersInDeficit: 1, outstandingDeficit: 1),
            ])
        // Bob's next gems collect what he owes in gems; his stars still owe.
        try await apply(bob, .purchase(Make.fact("t-bob-more"), credits: 5), gems)
        figures = try await store.dashboard(environment: .sandbox, days: 7, now: Make.start)
        #expect(
            figures.currencyDeficits == [
                CurrencyDeficit(currency: "gems", usersInDeficit: 1, outstandingDeficit: 8),
                CurrencyDeficit(currency: "stars", usersInDeficit: 1, outstandingDeficit: 1),
            ])
        #expect(try await store.dashboard(environment: .production, days: 7, now: Make.start).currencyDeficits == [])
    }

    @Test(
        "dashboard money: revenue and refunds per day, product and currency, active subscriptions, loyalty lifetimes",
        arguments: StoreEngine.allCases)
    func dashboardMoney(engine: StoreEngine) async throws {
        let store = try await engine.makeStore()
        let alice = Make.user("_aaaaaaaaaaa1")
        let bob = Make.user("_bbbbbbbbbbb2")
        let carol = Make.user("_ccccccccccc3", in: .production)
        for user in [alice, bob, carol] { try await store.createUser(user) }
        let day = TimeInterval(86_400)
        func buy(
            _ id: String, _ user: User, price: Int64?, currency: String = "EUR", product: String = "credits",
            on dayNumber: Double = 0, expires: Date? = nil, data: AppStoreEnvironment? = nil
        ) async throws {
            var fact = Make.fact(id)
            fact.productId = product
            fact.price = price
            fact.currency = currency
            fact.expiresDate = expires
            fact.environment = data
            _ = try await store.apply(
                LedgerRequest(
                    owner: user.id, environment: user.environment, event: .purchase(fact, credits: 400),
                    at: Make.start.addingTimeInterval(dayNumber * day + 5)))
        }
        try await buy("t1", alice, price: 4_990)
        try await buy("t2", alice, price: 4_990, on: 2)
        try await buy(
            "t3", bob, price: 990, currency: "USD", product: "pro", expires: Make.start.addingTimeInterval(40 * day))
        try await buy(
            "t4", bob, price: 990, currency: "USD", product: "pro", expires: Make.start.addingTimeInterval(day))
        try await buy("t5", bob, price: nil)
        try await buy("t6", bob, price: 120_000, currency: "JPY", data: .production)
        try await buy(
            "p1", carol, price: 990, currency: "USD", product: "pro", expires: Make.start.addingTimeInterval(40 * day))
        var refund = Make.fact("t2", revoked: true)
        refund.productId = "credits"
        refund.revocationDate = Make.start.addingTimeInterval(3 * day + 1)
        _ = try await store.apply(
            LedgerRequest(
                owner: alice.id, environment: .sandbox, event: .revocation(refund),
                at: Make.start.addingTimeInterval(3 * day + 2)))
        #expect(try await store.recordMilestone(owner: alice.id, name: "loyalty:pro", at: Make.start))
        #expect(try await store.recordMilestone(owner: bob.id, name: "loyalty:pro", at: Make.start))
        #expect(try await store.recordMilestone(owner: bob.id, name: "loyalty:plus", at: Make.start))
        #expect(try await store.recordMilestone(owner: bob.id, name: "welcome", at: Make.start))
        #expect(try await store.recordMilestone(owner: carol.id, name: "loyalty:pro", at: Make.start))

        let now = Make.start.addingTimeInterval(3 * day + 100)
        let figures = try await store.dashboard(environment: .sandbox, days: 30, now: now)
        let first = Make.start
        let third = Make.start.addingTimeInterval(2 * day)
        #expect(
            figures.revenue == [
                MoneyFigures(day: first, productId: "credits", currency: "EUR", count: 1, amount: 4_990),
                MoneyFigures(day: first, productId: "pro", currency: "USD", count: 2, amount: 1_980),
                MoneyFigures(day: third, productId: "credits", currency: "EUR", count: 1, amount: 4_990),
            ])
        #expect(
            figures.refunded == [
                MoneyFigures(
                    day: Make.start.addingTimeInterval(3 * day), productId: "credits", currency: "EUR", count: 1,
                    amount: 4_990)
            ])
        #expect(figures.activeSubscriptions == 1)
        #expect(figures.loyaltyLifetimes == [GroupCount(group: "plus", count: 1), GroupCount(group: "pro", count: 2)])
        #expect(figures.windowPurchases == 5 && figures.windowRefunds == 1 && figures.refundRate == 0.2)
        let totals = DashboardFigures.totals(figures.revenue) { $0.productId }
        #expect(totals.map(\.currency) == ["EUR", "USD"] && totals.map(\.amount) == [9_980, 1_980])

        // Bob's lapsed subscription in Apple's grace period still gives access: it counts, until the grace ends.
        let grace = RenewalState(
            originalTransactionId: "orig-t4", environment: .sandbox, owner: bob.id, autoRenewProductId: "pro",
            autoRenews: true, inBillingRetry: true, gracePeriodExpiresDate: Make.start.addingTimeInterval(5 * day),
            signedDate: now)
        #expect(try await store.saveRenewalState(grace))
        #expect(try await store.dashboard(environment: .sandbox, days: 30, now: now).activeSubscriptions == 2)
        let later = Make.start.addingTimeInterval(5 * day + 1)
        let laterFigures = try await store.dashboard(environment: .sandbox, days: 30, now: later)
        #expect(laterFigures.activeSubscriptions == 1)
        // Folded (PostgreSQL moves its pending contributions into the sums), the figures are the same.
        _ = try await store.foldRollups()
        #expect(try await store.dashboard(environment: .sandbox, days: 30, now: later) == laterFigures)
        // An access that ends at noon counts in the morning and not in the afternoon (the hour it ends is counted
        // exactly, the later hours from their buckets).
        try await buy(
            "t7", alice, price: nil, product: "pro", on: 3, expires: Make.start.addingTimeInterval(41 * day + day / 2))
        let noon = Make.start.addingTimeInterval(41 * day + day / 2)
        for (offset, active) in [(-3_600.0, 1), (-1, 1), (0, 0), (3_600, 0)] {
            let figures = try await store.dashboard(environment: .sandbox, days: 30, now: noon + offset)
            #expect(figures.activeSubscriptions == active, "at noon \(offset)")
        }

        let production = try await store.dashboard(environment: .production, days: 30, now: now)
        #expect(production.revenue.map(\.amount) == [990] && production.activeSubscriptions == 1)
        #expect(production.loyaltyLifetimes == [GroupCount(group: "pro", count: 1)])
    }

    @Test("deleting grants removes one environment's grants and keeps the ledger", arguments: StoreEngine.allCases)
    func deleteGrants(engine: StoreEngine) async throws {
        let store = try await engine.makeStore()
        let alice = Make.user("_aaaaaaaaaaa1")
        let carol = Make.user("_ccccccccccc3", in: .production)
        for user in [alice, carol] { try await store.createUser(user) }
        let claimed = Grant(
            environment: .sandbox, recipient: alice.id, credits: 5, reason: "r", createdBy: "a", createdAt: Make.start)
        try await store.createGrant(claimed)
        _ = try await store.claimGrant(
            id: claimed.id, recipient: alice.id, environment: .sandbox, crediting: .collect, at: Make.start)
        try await store.createGrant(
            Grant(
                environment: .sandbox, recipient: alice.id, credits: 6, reason: "r", createdBy: "a",
                createdAt: Make.start))
        try await store.createGrant(
            Grant(
                environment: .production, recipient: carol.id, credits: 7, reason: "r", createdBy: "a",
                createdAt: Make.start))
        #expect(try await store.deleteGrants(environment: .sandbox) == 2)
        #expect(try await store.grants(environment: .sandbox, recipient: nil, status: nil, limit: 10).isEmpty)
        #expect(try await store.grants(environment: .production, recipient: nil, status: nil, limit: 10).count == 1)
        #expect(try await store.wallet(owner: alice.id, environment: .sandbox).balance == 5)
    }

    @Test(
        "a Production server's Sandbox-marked customers (AppTransaction or receipts say Sandbox) and their grants",
        arguments: StoreEngine.allCases)
    func sandboxMarked(engine: StoreEngine) async throws {
        let store = try await engine.makeStore()
        // App Review's install (its AppTransaction says Sandbox), a TestFlight install without an AppTransaction whose
        // purchase is Sandbox data, and a real customer.
        var reviewer = Make.user("_aaaaaaaaaaa1", in: .production, createdAt: 2)
        reviewer.appleAccount = AppleAccount(appTransactionId: "7001", environment: .sandbox)
        let tester = Make.user("_bbbbbbbbbbb2", in: .production, createdAt: 1)
        var customer = Make.user("_ccccccccccc3", in: .production)
        customer.appleAccount = AppleAccount(appTransactionId: "7003", environment: .production)
        // A real customer registered without an AppTransaction who once ran a TestFlight build: not a test customer.
        let mixed = Make.user("_ddddddddddd4", in: .production, createdAt: 3)
        for user in [reviewer, tester, customer, mixed] { try await store.createUser(user) }
        var sandboxFact = Make.fact("t-1")
        sandboxFact.environment = .sandbox
        var productionFact = Make.fact("c-1")
        productionFact.environment = .production
        var mixedSandbox = Make.fact("m-1")
        mixedSandbox.environment = .sandbox
        var mixedProduction = Make.fact("m-2")
        mixedProduction.environment = .production
        for (user, fact) in [
            (tester, sandboxFact), (customer, productionFact), (mixed, mixedSandbox), (mixed, mixedProduction),
        ] {
            _ = try await store.apply([
                LedgerRequest(
                    owner: user.id, environment: .production, event: .purchase(fact, credits: 400), at: Make.start)
            ])
        }
        // The tester's second Sandbox purchase changes nothing; the customer's later Sandbox one (TestFlight) neither.
        var again = Make.fact("t-2")
        again.environment = .sandbox
        var customerSandbox = Make.fact("c-2")
        customerSandbox.environment = .sandbox
        for (user, fact) in [(tester, again), (customer, customerSandbox)] {
            _ = try await store.apply([
                LedgerRequest(
                    owner: user.id, environment: .production, event: .purchase(fact, credits: 400), at: Make.start)
            ])
        }
        let marked = try await store.sandboxMarkedUsers(
            environment: .production, supportIdPrefix: nil, limit: 10, offset: 0)
        #expect(marked.map(\.supportId.rawValue) == ["_aaaaaaaaaaa1", "_bbbbbbbbbbb2"])
        #expect(
            try await store.sandboxMarkedUsers(environment: .production, supportIdPrefix: "_bb", limit: 10, offset: 0)
                .map(\.id) == [tester.id])
        #expect(
            try await store.sandboxMarkedUsers(environment: .production, supportIdPrefix: nil, limit: 1, offset: 1)
                .map(\.id) == [tester.id])
        #expect(
            try await store.sandboxMarkedUsers(environment: .sandbox, supportIdPrefix: nil, limit: 10, offset: 0)
                .isEmpty)
        for (user, credits) in [(reviewer, Int64(5)), (tester, 6), (customer, 7)] {
            try await store.createGrant(
                Grant(
                    environment: .production, recipient: user.id, credits: credits, reason: "r", createdBy: "a",
                    createdAt: Make.start.addingTimeInterval(Double(credits))))
        }
        let claimed = try #require(
            try await store.grants(environment: .production, recipient: reviewer.id, status: nil, limit: 1).first)
        _ = try await store.claimGrant(
            id: claimed.id, recipient: reviewer.id, environment: .production, crediting: .collect, at: Make.start)
        #expect(
            try await store.sandboxMarkedGrants(environment: .production, status: nil, limit: 10).map(\.credits)
                == [6, 5])
        #expect(
            try await store.sandboxMarkedGrants(environment: .production, status: .pending, limit: 10).map(\.credits)
                == [6])
        #expect(try await store.sandboxMarkedGrants(environment: .production, status: nil, limit: 1).count == 1)
        // "Delete all test grants" reaches them, and never a real customer's grant; the ledger stays.
        #expect(try await store.deleteSandboxMarkedGrants(environment: .production) == 2)
        #expect(
            try await store.grants(environment: .production, recipient: nil, status: nil, limit: 10).map(\.credits)
                == [7])
        #expect(try await store.wallet(owner: reviewer.id, environment: .production).balance == 5)
    }

    @Test(
        "one batch of a customer's receipts marks or unmarks them as its last row says (PostgreSQL's row triggers see the whole batch)",
        arguments: StoreEngine.allCases)
    func sandboxMarkedBatches(engine: StoreEngine) async throws {
        let store = try await engine.makeStore()
        let tester = Make.user("_eeeeeeeeeee5", in: .production)
        try await store.createUser(tester)
        func batch(_ ids: [String], _ data: AppStoreEnvironment) async throws {
            let requests = ids.map { id in
                var fact = Make.fact(id)
                fact.environment = data
                return LedgerRequest(
                    owner: tester.id, environment: .production, event: .purchase(fact, credits: 400), at: Make.start)
            }
            for result in try await store.apply(requests) { _ = try result.get() }
        }
        func marked() async throws -> Bool {
            try await store.sandboxMarkedUsers(environment: .production, supportIdPrefix: nil, limit: 10, offset: 0)
                .map(\.id) == [tester.id]
        }
        // Two Sandbox purchases in one batch: TestFlight's tester, marked.
        try await batch(["s-1", "s-2"], .sandbox)
        #expect(try await marked())
        // Then two Production ones in one batch: a real customer who once ran TestFlight, not marked.
        try await batch(["p-1", "p-2"], .production)
        #expect(try await !marked())
    }
}
