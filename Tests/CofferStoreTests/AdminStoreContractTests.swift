import CofferCore
import CofferStore
import CofferTestSupport
import Foundation
import Testing

/// The contract for support's records: admins, sessions, signing keys, seen signatures, backup history and
/// the dashboard's figures, on every engine.
@Suite("Store contract: support and admins")
struct AdminStoreContractTests {
    @Test("admins: unique names, password change ends the admin's sessions only", arguments: StoreEngine.allCases)
    func admins(engine: StoreEngine) async throws {
        let store = try await engine.makeStore()
        let ada = Admin(name: "ada", passwordHash: "$2b$12$first", createdAt: Make.start)
        let bob = Admin(name: "bob", passwordHash: "$2b$12$bob", createdAt: Make.start)
        try await store.createAdmin(ada)
        try await store.createAdmin(bob)
        await #expect(throws: StoreError.alreadyExists("admin ada")) {
            try await store.createAdmin(Admin(name: "ada", passwordHash: "x", createdAt: Make.start))
        }
        #expect(try await store.admin(name: "ada") == ada)
        #expect(try await store.admin(name: "nobody") == nil)
        #expect(try await store.admins().map(\.name) == ["ada", "bob"])

        let expires = Make.start.addingTimeInterval(3_600)
        let adaSession = AdminSession(
            tokenHash: "t-ada", adminId: ada.id, adminName: "ada", csrfToken: "c1", environment: .sandbox,
            createdAt: Make.start, expiresAt: expires)
        let bobSession = AdminSession(
            tokenHash: "t-bob", adminId: bob.id, adminName: "bob", csrfToken: "c2", environment: .production,
            createdAt: Make.start, expiresAt: expires)
        try await store.createSession(adaSession)
        try await store.createSession(bobSession)
        #expect(try await store.session(tokenHash: "t-ada") == adaSession)

        let changed = Make.start.addingTimeInterval(60)
        #expect(try await store.setAdminPassword(name: "ada", passwordHash: "$2b$12$second", at: changed))
        #expect(try await !store.setAdminPassword(name: "nobody", passwordHash: "x", at: changed))
        let after = try #require(try await store.admin(name: "ada"))
        #expect(after.passwordHash == "$2b$12$second" && after.passwordChangedAt == changed)
        #expect(try await store.session(tokenHash: "t-ada") == nil)
        #expect(try await store.session(tokenHash: "t-bob") == bobSession)
    }

    @Test("sessions switch environment, end, and expire", arguments: StoreEngine.allCases)
    func sessions(engine: StoreEngine) async throws {
        let store = try await engine.makeStore()
        let ada = Admin(name: "ada", passwordHash: "h", createdAt: Make.start)
        try await store.createAdmin(ada)
        func session(_ token: String, expiring offset: TimeInterval) -> AdminSession {
            AdminSession(
                tokenHash: token, adminId: ada.id, adminName: "ada", csrfToken: "csrf-\(token)",
                environment: .sandbox, createdAt: Make.start, expiresAt: Make.start.addingTimeInterval(offset))
        }
        try await store.createSession(session("old", expiring: 10))
        try await store.createSession(session("new", expiring: 1_000))
        await #expect(throws: StoreError.self) { try await store.createSession(session("new", expiring: 5)) }
        try await store.setSessionEnvironment(tokenHash: "new", environment: .production)
        #expect(try await store.session(tokenHash: "new")?.environment == .production)
        #expect(try await store.deleteSessions(expiredBefore: Make.start.addingTimeInterval(100)) == 1)
        #expect(try await store.session(tokenHash: "old") == nil)
        try await store.deleteSession(tokenHash: "new")
        #expect(try await store.session(tokenHash: "new") == nil)
    }

    @Test("signing keys: unique ids, listed oldest first, revoked once", arguments: StoreEngine.allCases)
    func keys(engine: StoreEngine) async throws {
        let store = try await engine.makeStore()
        let first = AdminKey(id: "k1", name: "laptop", publicKeyPEM: "PEM1", createdAt: Make.start)
        let second = AdminKey(
            id: "k2", name: "script", publicKeyPEM: "PEM2", createdAt: Make.start.addingTimeInterval(1))
        try await store.createAdminKey(second)
        try await store.createAdminKey(first)
        await #expect(throws: StoreError.alreadyExists("key k1")) { try await store.createAdminKey(first) }
        #expect(try await store.adminKeys() == [first, second])
        let revoked = Make.start.addingTimeInterval(30)
        #expect(try await store.revokeAdminKey(id: "k1", at: revoked))
        #expect(try await !store.revokeAdminKey(id: "k1", at: revoked))
        #expect(try await !store.revokeAdminKey(id: "nope", at: revoked))
        #expect(try await store.adminKey(id: "k1")?.revokedAt == revoked)
        #expect(try await store.adminKey(id: "k2")?.revokedAt == nil)
        #expect(try await store.adminKey(id: "nope") == nil)
    }

    @Test("a signature is accepted once until it is forgotten", arguments: StoreEngine.allCases)
    func signatures(engine: StoreEngine) async throws {
        let store = try await engine.makeStore()
        let early = Make.start
        #expect(try await store.recordSignature("sig-a", at: early, forgetBefore: early.addingTimeInterval(-600)))
        #expect(try await !store.recordSignature("sig-a", at: early, forgetBefore: early.addingTimeInterval(-600)))
        #expect(try await store.recordSignature("sig-b", at: early, forgetBefore: early.addingTimeInterval(-600)))
        // Ten minutes on, sig-a is forgotten (its date is outside the window, so it is refused by that).
        let later = early.addingTimeInterval(601)
        #expect(try await store.recordSignature("sig-a", at: later, forgetBefore: later.addingTimeInterval(-600)))
    }

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
        #expect(try await store.dashboard(environment: .sandbox, days: 30, now: later).activeSubscriptions == 1)

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
        "a pending grant is cancelled once, never claimed after; a claimed one is never cancelled",
        arguments: StoreEngine.allCases)
    func cancelGrants(engine: StoreEngine) async throws {
        let store = try await engine.makeStore()
        let alice = Make.user("_aaaaaaaaaaa1", in: .production)
        try await store.createUser(alice)
        func grant(_ credits: Int64) async throws -> Grant {
            let grant = Grant(
                environment: .production, recipient: alice.id, credits: credits, reason: "Ticket #7", createdBy: "ada",
                createdAt: Make.start)
            try await store.createGrant(grant)
            return grant
        }
        let pending = try await grant(5)
        let claimed = try await grant(6)
        _ = try await store.claimGrant(
            id: claimed.id, recipient: alice.id, environment: .production, crediting: .collect, at: Make.start)
        let later = Make.start.addingTimeInterval(60)

        let cancelled = try await store.cancelGrant(id: pending.id, environment: .production, by: "ada", at: later)
        #expect(cancelled.status == .cancelled && cancelled.cancelledAt == later && cancelled.cancelledBy == "ada")
        #expect(try await store.grant(id: pending.id, environment: .production) == cancelled)
        // Again: unchanged, the first cancellation kept.
        let again = try await store.cancelGrant(
            id: pending.id, environment: .production, by: "bob", at: later.addingTimeInterval(1))
        #expect(again == cancelled)
        await #expect(throws: StoreError.cancelled("grant \(pending.id)")) {
            try await store.claimGrant(
                id: pending.id, recipient: alice.id, environment: .production, crediting: .collect, at: later)
        }
        // The claimed one stays claimed, its credits the customer's.
        let kept = try await store.cancelGrant(id: claimed.id, environment: .production, by: "ada", at: later)
        #expect(kept.status == .claimed && kept.cancelledAt == nil)
        #expect(try await store.wallet(owner: alice.id, environment: .production).balance == 6)
        await #expect(throws: StoreError.notFound("grant \(pending.id)")) {
            try await store.cancelGrant(id: pending.id, environment: .sandbox, by: "ada", at: later)
        }
        #expect(try await store.grant(id: pending.id, environment: .sandbox) == nil)

        func ids(_ status: GrantStatus?) async throws -> [UUID] {
            try await store.grants(environment: .production, recipient: alice.id, status: status, limit: 10).map(\.id)
        }
        #expect(try await ids(.pending).isEmpty)
        #expect(try await ids(.cancelled) == [pending.id])
        #expect(try await ids(.claimed) == [claimed.id])
        #expect(try await Set(ids(nil)) == [pending.id, claimed.id])
        let figures = try await store.dashboard(environment: .production, days: 1, now: later)
        #expect(figures.pendingGrants == 0 && figures.claimedGrants == 1)
    }

    @Test("an admin's time zone is kept", arguments: StoreEngine.allCases)
    func timeZone(engine: StoreEngine) async throws {
        let store = try await engine.makeStore()
        try await store.createAdmin(Admin(name: "ada", passwordHash: "h", createdAt: Make.start))
        #expect(try await store.admin(name: "ada")?.timeZone == nil)
        #expect(try await store.setAdminTimeZone(name: "ada", timeZone: "Europe/Paris"))
        #expect(try await store.admin(name: "ada")?.timeZone == "Europe/Paris")
        #expect(try await store.setAdminTimeZone(name: "ada", timeZone: nil))
        #expect(try await store.admin(name: "ada")?.timeZone == nil)
        #expect(try await !store.setAdminTimeZone(name: "nobody", timeZone: "UTC"))
    }

    @Test(
        "roles, grant limits and two-factor are kept; an admin changes in one step; a pending session is completed once",
        arguments: StoreEngine.allCases)
    func rolesAndTwoFactor(engine: StoreEngine) async throws {
        let store = try await engine.makeStore()
        let sam = Admin(
            name: "sam", passwordHash: "h", createdAt: Make.start, role: .support, grantLimit: 50_000,
            twoFactorSecret: "ABCDEFGHIJKLMNOPQRST", twoFactorLastStep: 7, recoveryCodeHashes: ["a1", "b2"])
        try await store.createAdmin(sam)
        #expect(try await store.admin(name: "sam") == sam)
        try await store.createAdmin(Admin(name: "ada", passwordHash: "h", createdAt: Make.start))
        #expect(try await store.admin(name: "ada")?.role == .owner)

        // A used step is refused; a later one is kept; a recovery code is used up once.
        #expect(try await store.updateAdmin(name: "sam") { $0.using(step: 7) } == nil)
        #expect(try await store.updateAdmin(name: "sam") { $0.using(step: 8) }?.twoFactorLastStep == 8)
        #expect(try await store.updateAdmin(name: "sam") { $0.using(recoveryCodeHash: "b2") } != nil)
        #expect(try await store.updateAdmin(name: "sam") { $0.using(recoveryCodeHash: "b2") } == nil)
        #expect(try await store.updateAdmin(name: "nobody") { $0 } == nil)
        let promoted = try await store.updateAdmin(name: "sam") { admin in
            var changed = admin
            changed.role = .owner
            changed.grantLimit = nil
            changed.twoFactorSecret = nil
            changed.recoveryCodeHashes = []
            // The name and password are not the change's to make.
            changed.passwordHash = "other"
            return changed
        }
        let stored = try #require(try await store.admin(name: "sam"))
        #expect(promoted?.role == .owner && stored.role == .owner && stored.grantLimit == nil)
        #expect(stored.twoFactorSecret == nil && stored.recoveryCodeHashes.isEmpty && stored.twoFactorLastStep == 8)
        #expect(stored.passwordHash == "h")

        let pending = AdminSession(
            tokenHash: "t-sam", adminId: sam.id, adminName: "sam", csrfToken: "c", environment: .sandbox,
            createdAt: Make.start, expiresAt: Make.start.addingTimeInterval(300), twoFactorPending: true)
        try await store.createSession(pending)
        #expect(try await store.session(tokenHash: "t-sam") == pending)
        for token in ["t-sam-2", "t-sam-3"] {
            var other = pending
            other.tokenHash = token
            try await store.createSession(other)
        }
        let ada = try #require(try await store.admin(name: "ada"))
        try await store.createSession(
            AdminSession(
                tokenHash: "t-ada", adminId: ada.id, adminName: "ada", csrfToken: "c", environment: .sandbox,
                createdAt: Make.start, expiresAt: Make.start.addingTimeInterval(300)))
        #expect(try await store.deleteSessions(adminId: sam.id, except: "t-sam-2") == 2)
        #expect(try await store.session(tokenHash: "t-sam-2") != nil)
        #expect(try await store.session(tokenHash: "t-sam") == nil)
        #expect(try await store.session(tokenHash: "t-ada") != nil)
        #expect(try await store.deleteSessions(adminId: sam.id, except: nil) == 1)
    }

    @Test("an audit entry's id is written once: a second write of it is refused", arguments: StoreEngine.allCases)
    func auditOnce(engine: StoreEngine) async throws {
        let store = try await engine.makeStore()
        let event = AuditEvent(
            environment: .sandbox, actor: "ada", action: "grant.create", subject: "_aaaaaaaaaaa1", at: Make.start)
        try await store.recordAudit(event)
        await #expect(throws: StoreError.alreadyExists("audit \(event.id)")) { try await store.recordAudit(event) }
        #expect(
            try await store.auditEvents(environment: .sandbox, query: AuditQuery(), limit: 10).map(\.id) == [event.id])
    }

    @Test(
        "the audit log filters by admin, customer and action family; no character of a filter is a pattern",
        arguments: StoreEngine.allCases)
    func auditQuery(engine: StoreEngine) async throws {
        let store = try await engine.makeStore()
        let events = [
            ("ada from 127.0.0.1", "grant.create", "_aaaaaaaaaaa1"),
            ("ada from 10.0.0.2", "grant.cancel", "_aaaaaaaaaaa1"),
            ("adam from 127.0.0.1", "balance.set", "_bbbbbbbbbbb2"), ("cli:root", "grants.delete-all", "grants"),
            ("k_1%", "grant.create", "_bbbbbbbbbbb2"),
        ]
        for (offset, (actor, action, subject)) in events.enumerated() {
            try await store.recordAudit(
                AuditEvent(
                    environment: .sandbox, actor: actor, action: action, subject: subject,
                    at: Make.start.addingTimeInterval(Double(offset))))
        }
        try await store.recordAudit(
            AuditEvent(
                environment: .production, actor: "ada from 127.0.0.1", action: "grant.create", subject: "x",
                at: Make.start))
        func actions(_ query: AuditQuery) async throws -> [String] {
            try await store.auditEvents(environment: .sandbox, query: query, limit: 10).map(\.action)
        }
        #expect(try await actions(AuditQuery()).count == 5)
        #expect(try await actions(AuditQuery(admin: "ada")) == ["grant.cancel", "grant.create"])
        #expect(try await actions(AuditQuery(admin: "adam")) == ["balance.set"])
        #expect(try await actions(AuditQuery(admin: "cli:root")) == ["grants.delete-all"])
        #expect(try await actions(AuditQuery(admin: "k_1%")) == ["grant.create"])
        #expect(try await actions(AuditQuery(admin: "k%")).isEmpty)
        #expect(try await actions(AuditQuery(admin: "ad")).isEmpty)
        #expect(try await actions(AuditQuery(action: "grant")) == ["grant.create", "grant.cancel", "grant.create"])
        #expect(try await actions(AuditQuery(action: "grants")) == ["grants.delete-all"])
        #expect(try await actions(AuditQuery(action: "grant.create")) == ["grant.create", "grant.create"])
        #expect(try await actions(AuditQuery(action: "gr%")).isEmpty)
        #expect(
            try await actions(AuditQuery(subject: "_aaaaaaaaaaa1", admin: "ada", action: "grant.cancel"))
                == ["grant.cancel"])
        #expect(
            try await store.auditEvents(environment: .sandbox, query: AuditQuery(admin: "ada"), limit: 1).count == 1)
    }
}
