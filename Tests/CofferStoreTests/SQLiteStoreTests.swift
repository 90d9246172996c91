import CofferCore
import CofferStore
import CofferStoreSQLite
import Foundation
import Testing

@Suite("SQLite store")
struct SQLiteStoreTests {
    @Test("opens in WAL mode with the documented durability setting", arguments: SQLiteDurability.allCases)
    func pragmas(durability: SQLiteDurability) throws {
        let store = try SQLiteStore(path: TemporaryDirectory.file("p.sqlite"), durability: durability)
        let pragmas = try store.pragmas()
        #expect(pragmas.journalMode == "wal")
        #expect(pragmas.synchronous == (durability == .full ? 2 : 1))
    }

    @Test("what was committed is there after reopening, and migrations run once")
    func survivesReopen() async throws {
        let path = try TemporaryDirectory.file("reopen.sqlite")
        let alice = Make.user("_aaaaaaaaaaa1")
        do {
            let store = try SQLiteStore(path: path)
            try await store.createUser(alice)
            _ = try await store.apply(Make.purchase("t1", for: alice))
        }
        let reopened = try SQLiteStore(path: path)
        #expect(
            try reopened.appliedMigrations() == [
                "v1 users, ledger, receipts, backups, grants, audit", "v2 notifications, renewal states, cursors",
                "v3 receipts by owner and product",
                "v4 admins, sessions, keys, signatures, backup history",
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
                "v28 Sandbox-marked customers kept", "v29 several currencies",
                "v30 webhooks in every currency", "v31 grants in a currency",
                "v32 credits that expire", "v33 deficits per currency on the dashboard", "v34 subscription allowances",
                "v35 backups in every currency",
            ])
        #expect(try await reopened.wallet(owner: alice.id, environment: .sandbox).balance == 400)
        #expect(try await reopened.apply(Make.purchase("t1", for: alice)).outcome == .duplicate)
    }

    @Test("two store instances on one file (two processes' worth) still credit once")
    func twoConnections() async throws {
        let path = try TemporaryDirectory.file("shared.sqlite")
        let first = try SQLiteStore(path: path)
        let second = try SQLiteStore(path: path)
        let alice = Make.user("_aaaaaaaaaaa1")
        try await first.createUser(alice)
        let outcomes = try await withThrowingTaskGroup(of: LedgerOutcome.self) { group in
            for index in 0..<40 {
                let store = index.isMultiple(of: 2) ? first : second
                group.addTask { try await store.apply(Make.purchase("t1", for: alice)).outcome }
            }
            return try await group.reduce(into: [LedgerOutcome]()) { $0.append($1) }
        }
        #expect(outcomes.filter { $0 == .applied }.count == 1)
        #expect(try await second.entries(owner: alice.id, environment: .sandbox).count == 1)
    }
}
