import CofferCore
import CofferStore
import CofferStorePostgres
import CofferTestSupport
import Foundation
import Testing

/// PostgreSQL keeps a prepared statement's plan for any arguments once it costs no more than planning each run
/// (`plan_cache_mode=auto`). A plan made while the tables were empty reads receipts through an index of the
/// environment alone (every index is as good on an empty table); this shows it is kept only until the tables'
/// statistics change, as the store's fold (``PostgresStore/analyzeGrown()``) and autovacuum change them while a table
/// grows, and that the plan made then reads each request's rows through their keys.
@Suite(
    "PostgreSQL plans kept per connection", .enabled(if: TestPostgres.url != nil || TestPostgres.required),
    .timeLimit(.minutes(2)))
struct PlanCacheTests {
    /// The ledger's batch read (`LoadLedgerBatch`), known in the log by its lock.
    static func batchReads(_ plans: [(statement: String, plan: [String: Any])]) -> [[String: Any]] {
        plans.filter { $0.statement.contains("FOR UPDATE OF w") }.map(\.plan)
    }

    @Test(
        "a batch read's plan made on empty tables gives way to one through the keys once the store analyzes the grown tables"
    )
    func planFollowsStatistics() async throws {
        let url = try await StoreEngine.migratedDatabase()
        let database = String(try #require(URLComponents(string: url)?.path.dropFirst()))
        // Autovacuum stays off for the tables in question, so the analyze happens when this test says (it would
        // within a minute of the growth here); auto_explain logs every plan the store's connection runs.
        try await TestPostgres.execute(
            ["users", "wallets", "receipts", "ledger_entries"].map {
                "ALTER TABLE \($0) SET (autovacuum_enabled = false)"
            }
                + [
                    "ALTER DATABASE \(database) SET session_preload_libraries = 'auto_explain'",
                    "ALTER DATABASE \(database) SET auto_explain.log_min_duration = 0",
                    "ALTER DATABASE \(database) SET auto_explain.log_format = 'json'",
                ], on: url)
        let store = try await PostgresStore(url: url, maximumConnections: 1)
        defer { store.close() }
        let alice = Make.user("_aaaaaaaaaaa1")
        try await store.createUser(alice)
        for index in 0..<8 { _ = try await store.apply([Make.purchase("early-\(index)", for: alice)]) }

        // Twenty thousand customers, a hundred thousand receipts and as many ledger entries, written beside the store (without triggers:
        // the replica role is this session's own, so the store's plans are not reset by it).
        try await TestPostgres.execute(
            [
                "SET session_replication_role = replica",
                """
                INSERT INTO users (id, environment, support_id, token_hash, app_account_token, created_at)
                SELECT 'u' || i, 'Sandbox', 's' || i, 'h' || i, 'a' || i, i FROM generate_series(1, 20000) i
                """,
                "INSERT INTO wallets (user_id, balance, deficit) SELECT 'u' || i, 0, 0 FROM generate_series(1, 20000) i",
                """
                INSERT INTO receipts (environment, transaction_id, owner, original_transaction_id, product_id, quantity,
                    purchase_date, family_shared, trial, upgraded, taken_from_balance, added_to_deficit)
                SELECT 'Sandbox', 'r' || i, 'u' || (i % 20000 + 1), 'r' || i, 'com.example.credits', 1, i, false, false,
                    false, 0, 0
                FROM generate_series(1, 100000) i
                """,
                """
                INSERT INTO ledger_entries (environment, owner, key, kind, amount, balance_delta, deficit_delta,
                    balance_after, deficit_after, created_at)
                SELECT 'Sandbox', 'u' || (i % 20000 + 1), 'purchase:r' || i, 'purchase', 1, 1, 0, 1, 0, i
                FROM generate_series(1, 100000) i
                """,
            ], on: url)
        _ = try await store.apply([Make.purchase("grown", for: alice)])
        let grown = "plan-cache-grown-\(UUID().uuidString)"
        try await TestPostgres.execute(["SELECT '\(grown)'"], on: url)
        let stale = try #require(
            Self.batchReads(try await QueryPlans.postgresPlans(database: database, marker: grown)).last)
        // The premise: the connection kept the plan it made on empty tables (else this test would show nothing).
        #expect(!QueryPlans.problems(postgresPlan: stale).isEmpty, "\(QueryPlans.problems(postgresPlan: stale))")

        // The store analyzes what grew as it folds the dashboard's rollups (autovacuum is off here), once the
        // statistics system has counted the growth.
        for _ in 0..<200 {
            _ = try await store.foldRollups()
            let counted = try await TestPostgres.integer(
                "SELECT reltuples::int8 FROM pg_class WHERE relname = 'receipts'", on: url)
            if (counted ?? 0) >= 100_000 { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(
            try await TestPostgres.integer(
                "SELECT reltuples::int8 FROM pg_class WHERE relname = 'ledger_entries'", on: url) ?? 0 >= 100_000)
        _ = try await store.apply([Make.purchase("analyzed", for: alice)])
        let analyzed = "plan-cache-analyzed-\(UUID().uuidString)"
        try await TestPostgres.execute(["SELECT '\(analyzed)'"], on: url)
        let fresh = try #require(
            Self.batchReads(try await QueryPlans.postgresPlans(database: database, marker: analyzed)).last)
        #expect(QueryPlans.problems(postgresPlan: fresh) == [])
        #expect(try await store.wallet(owner: alice.id, environment: .sandbox).balance == 400 * 10)
    }

    @Test("the prepared reads go on answering after another instance's migration adds columns to their tables")
    func preparedReadsOutliveAddedColumns() async throws {
        let url = try await StoreEngine.migratedDatabase()
        let store = try await PostgresStore(url: url, maximumConnections: 1)
        defer { store.close() }
        let alice = Make.user("_aaaaaaaaaaa1")
        try await store.createUser(alice)
        _ = try await store.apply(Make.purchase("t1", for: alice))
        func read() async throws {
            #expect(try await store.user(tokenHash: alice.tokenHash)?.id == alice.id)
            #expect(try await store.entitlementGrants(environment: .sandbox, recipient: alice.id) == [])
            let receipts = try await store.receipts(
                owner: alice.id, environment: .sandbox, productIds: ["com.example.credits.400k"])
            #expect(receipts.map(\.transaction.transactionId) == ["t1"])
            #expect(try await store.renewalStates(owner: alice.id, environment: .sandbox) == [])
        }
        for _ in 0..<6 { try await read() }
        try await TestPostgres.execute(
            ["users", "entitlement_grants", "receipts", "renewal_states"].map {
                "ALTER TABLE \($0) ADD COLUMN added_later TEXT"
            }, on: url)
        try await read()
    }
}
