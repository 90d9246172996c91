import CofferCore
import CofferStore
import CofferStorePostgres
import CofferTestSupport
import Foundation
import Testing

/// What only the PostgreSQL engine has to show: its migration runner and several instances on one
/// database. Needs the server `scripts/test` starts; under CI its absence is a failure.
@Suite("PostgreSQL store", .enabled(if: TestPostgres.url != nil || TestPostgres.required, "\(TestPostgres.missing)"))
struct PostgresStoreTests {
    static let migrations = [
        "v1 users, ledger, receipts, backups, grants, audit", "v2 notifications, renewal states, cursors",
        "v3 receipts by owner and product",
        "v4 admins, sessions, keys, signatures, backup history", "v5 users by Support ID in byte order",
        "v6 data environment of receipts and entries", "v7 Apple accounts and device tokens", "v8 merged users",
        "v9 backup deficit", "v10 push tokens and milestones", "v11 receipts' lighter indexes",
        "v12 grant cancellation, admin time zones", "v13 admin roles and two-factor sign-in",
        "v14 what the customer paid and why Apple refunded", "v15 deleted customers, Verify Purchases reports",
        "v16 customers imported from another system",
        "v17 token origins, disabled admins, merge codes, shared failures",
        "v18 purchases delivered before Coffer",
        "v19 the mailbox a backup holds", "v20 Xcode's data marked", "v21 live users", "v22 the refund defence",
        "v23 entitlements for a time", "v24 signed webhooks", "v25 reconciliation with Apple",
        "v26 the dashboard's rollups", "v27 support's pages through their indexes",
        "v28 Sandbox-marked customers kept",
        "v29 notifications newest first", "v30 the receipts' Sandbox mark trigger by operation",
        "v31 several currencies", "v32 webhooks in every currency",
        "v33 grants in a currency", "v34 credits that expire", "v35 deficits per currency on the dashboard",
        "v36 subscription allowances", "v37 backups in every currency",
    ]

    @Test("instances opening one database together migrate it once; data survives reopening")
    func migrations() async throws {
        let url = try await TestPostgres.freshDatabase()
        let stores = try await withThrowingTaskGroup(of: PostgresStore.self) { group in
            for _ in 0..<4 { group.addTask { try await PostgresStore(url: url, maximumConnections: 2) } }
            return try await group.reduce(into: [PostgresStore]()) { $0.append($1) }
        }
        for store in stores { #expect(try await store.appliedMigrations() == Self.migrations) }
        let alice = Make.user("_aaaaaaaaaaa1")
        try await stores[0].createUser(alice)
        _ = try await stores[1].apply(Make.purchase("t1", for: alice))
        for store in stores { store.close() }

        let reopened = try await PostgresStore(url: url)
        #expect(try await reopened.appliedMigrations() == Self.migrations)
        #expect(try await reopened.wallet(owner: alice.id, environment: .sandbox).balance == 400)
        #expect(try await reopened.apply(Make.purchase("t1", for: alice)).outcome == .duplicate)
        reopened.close()
    }

    @Test("two instances (two servers' worth) credit one transaction once, and a transaction once per user")
    func twoInstances() async throws {
        let url = try await TestPostgres.freshDatabase()
        let first = try await PostgresStore(url: url, maximumConnections: 10)
        let second = try await PostgresStore(url: url, maximumConnections: 10)
        defer {
            first.close()
            second.close()
        }
        let alice = Make.user("_aaaaaaaaaaa1")
        let bob = Make.user("_bbbbbbbbbbb2")
        try await first.createUser(alice)
        try await first.createUser(bob)
        // Alice and Bob race for one transaction on two instances: one of them gets it, once.
        let outcomes = try await withThrowingTaskGroup(of: String.self) { group in
            for index in 0..<40 {
                let store = index.isMultiple(of: 2) ? first : second
                let user = index % 4 < 2 ? alice : bob
                group.addTask {
                    switch try await store.apply([Make.purchase("t1", for: user)]).first {
                    case .success(let result): return result.outcome.rawValue
                    case .failure(let error): return "\(error)"
                    case nil: return "none"
                    }
                }
            }
            return try await group.reduce(into: [String]()) { $0.append($1) }
        }
        #expect(outcomes.filter { $0 == "applied" }.count == 1)
        #expect(outcomes.filter { $0 == "duplicate" }.count == 19)
        #expect(outcomes.filter { $0.contains("belongs to another user") }.count == 20)
        let aliceEntries = try await second.entries(owner: alice.id, environment: .sandbox)
        let bobEntries = try await second.entries(owner: bob.id, environment: .sandbox)
        #expect(aliceEntries.count + bobEntries.count == 1)
    }

    @Test("a URL that is not postgres:// and a server that does not answer are clear storage errors")
    func badURLs() async throws {
        await #expect(throws: StoreError.self) { try await PostgresStore(url: "mysql://root@localhost/db") }
        let port = try LocalPort.free()
        await #expect(throws: (any Error).self) {
            try await PostgresStore(url: "postgres://coffer@127.0.0.1:\(port)/none", startupTimeout: .seconds(2))
        }
    }
}
