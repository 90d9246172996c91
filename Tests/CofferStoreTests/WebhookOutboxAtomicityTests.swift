import CofferCore
import CofferStore
import CofferStorePostgres
import CofferStoreSQLite
import CofferTestSupport
import Foundation
import GRDB
import Testing

/// The outbox is written in the ledger's own transaction: when its record cannot be written, the change is not made
/// (nothing is acknowledged without its event), on both database engines.
@Suite("Webhook outbox atomicity")
struct WebhookOutboxAtomicityTests {
    static let endpoint = WebhookEndpoint(
        id: "wh_a", environment: .sandbox, url: "https://hooks.example.com", secret: "secret-0123456789abcdef",
        createdAt: Make.start)

    /// Checks that a purchase fails and changes nothing while `refuse` makes the outbox refuse writes, and lands with
    /// its record once `allow` undoes it.
    static func check(
        _ store: any CofferStore, refuse: () async throws -> Void, allow: () async throws -> Void
    ) async throws {
        let alice = Make.user("_aaaaaaaaaaa1")
        try await store.createUser(alice)
        try await store.saveWebhookEndpoint(endpoint)
        try await refuse()
        await #expect(throws: (any Error).self) { _ = try await store.apply(Make.purchase("t1", for: alice)) }
        #expect(try await store.wallet(owner: alice.id, environment: .sandbox).balance == 0)
        #expect(try await store.entries(owner: alice.id, environment: .sandbox).isEmpty)
        #expect(try await store.receipt(transactionId: "t1", environment: .sandbox) == nil)
        try await allow()
        #expect(try await store.apply(Make.purchase("t1", for: alice)).outcome == .applied)
        #expect(try await store.webhookBacklog(environment: .sandbox).unrouted == 1)
    }

    @Test("SQLite: an outbox that refuses its record rolls the purchase back")
    func sqlite() async throws {
        let path = try TemporaryDirectory.file("store.sqlite")
        let store = try SQLiteStore(path: path)
        let database = try DatabaseQueue(path: path)
        try await Self.check(
            store,
            refuse: {
                try await database.write { db in
                    try db.execute(
                        sql: """
                            CREATE TRIGGER refuse_outbox BEFORE INSERT ON webhook_outbox
                            BEGIN SELECT RAISE(ABORT, 'the outbox refuses'); END
                            """)
                }
            },
            allow: { try await database.write { db in try db.execute(sql: "DROP TRIGGER refuse_outbox") } })
    }

    @Test(
        "PostgreSQL: an outbox that refuses its record rolls the purchase back",
        .enabled(if: StoreEngine.allCases.contains(.postgres)))
    func postgres() async throws {
        let url = try await StoreEngine.migratedDatabase()
        let store = try await PostgresStore(url: url, maximumConnections: 2)
        defer { store.close() }
        try await Self.check(
            store,
            refuse: {
                try await TestPostgres.execute(
                    [
                        """
                        CREATE FUNCTION refuse_outbox() RETURNS trigger LANGUAGE plpgsql AS $$
                        BEGIN RAISE EXCEPTION 'the outbox refuses'; END $$
                        """,
                        """
                        CREATE TRIGGER refuse_outbox BEFORE INSERT ON webhook_outbox
                            FOR EACH ROW EXECUTE FUNCTION refuse_outbox()
                        """,
                    ], on: url)
            },
            allow: { try await TestPostgres.execute(["DROP TRIGGER refuse_outbox ON webhook_outbox"], on: url) })
    }
}
