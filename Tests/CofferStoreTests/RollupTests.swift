import CofferCore
import CofferStore
import CofferTestSupport
import Foundation
import GRDB
import Testing

@testable import CofferStorePostgres
@testable import CofferStoreSQLite

/// The dashboard's rollups on the SQL engines: what an existing database's migration sums (the backfill) is what the
/// triggers keep as each change happens, and both are what the in-memory store counts by reading everything.
@Suite("Dashboard rollups")
struct RollupTests {
    static let day = TimeInterval(86_400)

    /// A Production server's month: purchases with and without prices, a family copy, App Review's sandbox data, a
    /// refund and a reversal, subscriptions ending on different days and one in Apple's grace period, grants
    /// pending, claimed and cancelled, loyalty and other milestones, a deficit, Apple's notifications.
    static func story(_ store: any CofferStore) async throws {
        let alice = Make.user("_aaaaaaaaaaa1", in: .production)
        var reviewer = Make.user("_bbbbbbbbbbb2", in: .production)
        reviewer.appleAccount = AppleAccount(appTransactionId: "review-1", environment: .sandbox)
        let carol = Make.user("_ccccccccccc3", in: .production, createdAt: 5)
        for user in [alice, reviewer, carol] { try await store.createUser(user) }
        var bought: [String: TransactionFact] = [:]
        func buy(
            _ id: String, _ user: User, price: Int64? = 990, product: String = "credits", on dayNumber: Double,
            expires: Double? = nil, data: AppStoreEnvironment? = .production, family: Bool = false
        ) async throws {
            var fact = Make.fact(id)
            (fact.productId, fact.price, fact.currency, fact.environment) = (product, price, "EUR", data)
            fact.expiresDate = expires.map { Make.start.addingTimeInterval($0 * day) }
            fact.isFamilyShared = family
            bought[id] = fact
            _ = try await store.apply(
                LedgerRequest(
                    owner: user.id, environment: .production, event: .purchase(fact, credits: family ? 0 : 400),
                    at: Make.start.addingTimeInterval(dayNumber * day + 60)))
        }
        try await buy("t1", alice, on: 0)
        try await buy("t2", alice, price: nil, on: 1)
        try await buy("t3", alice, product: "pro", on: 2, expires: 40.5)
        try await buy("t4", carol, product: "pro", on: 2, expires: 3)
        try await buy("t5", carol, on: 3, family: true)
        try await buy("t6", reviewer, on: 3, expires: 60, data: .sandbox)
        try await buy("t7", reviewer, price: 5_000, on: 4, data: .sandbox)
        _ = try await store.apply(
            LedgerRequest(
                owner: alice.id, environment: .production, event: .spend(key: "s", amount: 700),
                at: Make.start.addingTimeInterval(4 * day)))
        // Gems owed by Alice and by App Review's account (left out of the Production dashboard's).
        let gems = try require(Currency(rawValue: "gems"))
        for (id, user, spent) in [("g1", alice, Int64(7)), ("g2", reviewer, 2)] {
            var fact = Make.fact(id)
            fact.productId = "gems"
            var refund = fact
            refund.revocationDate = Make.start.addingTimeInterval(4 * day)
            for event in [
                LedgerEvent.purchase(fact, credits: 10), .spend(key: "g", amount: spent), .revocation(refund),
            ] {
                _ = try await store.apply(
                    LedgerRequest(
                        owner: user.id, environment: .production, event: event,
                        at: Make.start.addingTimeInterval(4 * day + 5), currency: gems))
            }
        }
        for (id, owner, dayNumber) in [("t1", alice, 5.0), ("t7", reviewer, 5), ("t4", carol, 6)] {
            var refund = try require(bought[id])
            refund.revocationDate = Make.start.addingTimeInterval(dayNumber * day)
            _ = try await store.apply(
                LedgerRequest(
                    owner: owner.id, environment: .production, event: .revocation(refund),
                    at: Make.start.addingTimeInterval(dayNumber * day + 1)))
        }
        _ = try await store.apply(
            LedgerRequest(
                owner: carol.id, environment: .production,
                event: .reversal(try require(bought["t4"]), at: Make.start.addingTimeInterval(7 * day)),
                at: Make.start.addingTimeInterval(7 * day)))
        #expect(
            try await store.saveRenewalState(
                RenewalState(
                    originalTransactionId: "orig-t4", environment: .production, owner: carol.id,
                    autoRenewProductId: "pro", autoRenews: true, inBillingRetry: true,
                    gracePeriodExpiresDate: Make.start.addingTimeInterval(9.25 * day), signedDate: Make.start)))
        for (index, user) in [alice, carol, carol].enumerated() {
            let grant = Grant(
                environment: .production, recipient: user.id, credits: 10, reason: "r", createdBy: "ada",
                createdAt: Make.start.addingTimeInterval(Double(index)))
            try await store.createGrant(grant)
            if index == 1 {
                _ = try await store.claimGrant(
                    id: grant.id, recipient: user.id, environment: .production, crediting: .collect, at: Make.start)
            }
            if index == 2 {
                _ = try await store.cancelGrant(id: grant.id, environment: .production, by: "ada", at: Make.start)
            }
        }
        for (user, name) in [(alice, "loyalty:pro"), (carol, "loyalty:pro"), (carol, "welcome")] {
            _ = try await store.recordMilestone(owner: user.id, name: name, at: Make.start)
        }
        for (index, type) in ["REFUND", "DID_RENEW", "DID_RENEW", "TEST"].enumerated() {
            _ = try await store.recordNotification(
                NotificationRecord(
                    uuid: "n-\(index)", environment: .production, type: type, subtype: nil, transactionId: nil,
                    originalTransactionId: nil, owner: nil, signedDate: Make.start,
                    receivedAt: Make.start.addingTimeInterval(Double(index) * 3 * 3_600 + 5), outcome: .applied))
        }
    }

    /// What support's dashboard reads on a few days of the story (its figures and Apple's notification counts).
    static func readings(_ store: any CofferStore) async throws -> [String] {
        var readings: [String] = []
        for dayNumber in [0.5, 3.2, 9.1, 9.3, 40.4, 40.6, 70] {
            let now = Make.start.addingTimeInterval(dayNumber * day)
            let figures = try await store.dashboard(environment: .production, days: 30, now: now)
            readings.append("\(dayNumber): \(figures)")
            let counts = try await store.notificationCounts(
                environment: .production, since: Make.start.addingTimeInterval(dayNumber * 3_600 + 1_800))
            readings.append("notifications since \(dayNumber) h: \(counts.sorted { $0.key < $1.key })")
        }
        return readings
    }

    /// Expects `store`'s readings to be `expected`, reading by reading.
    static func expectReadings(_ store: any CofferStore, _ expected: [String], _ stage: String) async throws {
        let readings = try await readings(store)
        #expect(readings.count == expected.count)
        for (reading, wanted) in zip(readings, expected) {
            #expect(reading == wanted, "\(stage)")
        }
    }

    @Test("the SQL engines' rollups give the in-memory store's counts, and an existing database's backfill the same")
    func backfill() async throws {
        let memory = InMemoryStore()
        try await Self.story(memory)
        let expected = try await Self.readings(memory)

        let sqlite = try SQLiteStore(path: TemporaryDirectory.file("store.sqlite"))
        try await Self.story(sqlite)
        try await Self.expectReadings(sqlite, expected, "SQLite, as written")
        try await sqlite.pool.write { db in
            try db.execute(sql: "DELETE FROM dashboard_rollups; DELETE FROM subscription_chains")
            try db.execute(sql: RollupTables.backfill)
            try db.execute(sql: RollupTables.currencyBackfill)
        }
        try await Self.expectReadings(sqlite, expected, "SQLite, backfilled")

        guard StoreEngine.allCases.contains(.postgres) else { return }
        let url = try await StoreEngine.migratedDatabase()
        let postgres = try await PostgresStore(url: url, maximumConnections: 4)
        try await Self.story(postgres)
        try await Self.expectReadings(postgres, expected, "PostgreSQL, as written")
        _ = try await postgres.foldRollups()
        try await Self.expectReadings(postgres, expected, "PostgreSQL, folded")
        try await TestPostgres.execute(
            ["DELETE FROM dashboard_rollups", "DELETE FROM dashboard_deltas", "DELETE FROM subscription_chains"]
                + PostgresMigrations.statements(
                    PostgresRollupTables.backfill + ";" + PostgresRollupTables.currencyBackfill
                )
                .filter {
                    !$0.allSatisfy(\.isWhitespace)
                }, on: url)
        try await Self.expectReadings(postgres, expected, "PostgreSQL, backfilled")
        postgres.close()
    }

    @Test("PostgreSQL: an instance that folded a burst of contributions vacuums their table, leaving no dead rows")
    func burstVacuumed() async throws {
        guard StoreEngine.allCases.contains(.postgres) else { return }
        let url = try await StoreEngine.migratedDatabase()
        let postgres = try await PostgresStore(url: url, maximumConnections: 2)
        defer { postgres.close() }
        let rows = PostgresRollupTables.vacuumAfter + 20_000
        try await TestPostgres.execute(
            [
                """
                INSERT INTO dashboard_deltas (environment, figure, bucket, label, currency, count, amount)
                SELECT 'Production', 'refund.day', 20000, '', '', 1, 0 FROM generate_series(1, \(rows))
                """
            ], on: url)
        var folds: [Int] = []
        while true {
            let folded = try await postgres.foldRollups()
            if folded == 0 { break }
            folds.append(folded)
        }
        let limit = PostgresRollupTables.foldLimit
        #expect(folds == [limit, limit, rows - 2 * limit])
        let statistics = "FROM pg_stat_user_tables WHERE relname = 'dashboard_deltas'"
        #expect(try await TestPostgres.integer("SELECT count(*) FROM dashboard_deltas", on: url) == 0)
        #expect(
            try await TestPostgres.integer("SELECT sum(count)::BIGINT FROM dashboard_rollups", on: url) == Int64(rows))
        // Vacuumed once, when the backlog was drained, by the instance itself (autovacuum counts apart).
        #expect(try await TestPostgres.integer("SELECT vacuum_count \(statistics)", on: url) == 1)
        // The table of dead rows emptied and truncated (its statistics' dead-row count may still wait on a flush).
        #expect(try await TestPostgres.integer("SELECT pg_relation_size('dashboard_deltas')", on: url) == 0)
    }
}
