import Foundation
import GRDB

/// The SDK's own records on the device, beside the local ledger: the signed transactions it has seen (the
/// outbox is those not yet acknowledged by the server), purchases in flight, and the device's identity.
struct SDKState: Sendable {
    let queue: DatabaseQueue

    /// The first schema, as shipped: never edit it; add a migration.
    static let schema = """
        CREATE TABLE transactions (
            id TEXT PRIMARY KEY NOT NULL,
            jws TEXT NOT NULL,
            seen_at REAL NOT NULL,
            posted_at REAL,
            outcome TEXT,
            credits INTEGER
        );
        CREATE TABLE intents (
            id TEXT PRIMARY KEY NOT NULL,
            product_id TEXT NOT NULL,
            quantity INTEGER NOT NULL,
            started_at REAL NOT NULL,
            state TEXT NOT NULL
        );
        CREATE TABLE values_ (
            key TEXT PRIMARY KEY NOT NULL,
            value TEXT NOT NULL
        );
        """

    init(path: String) throws {
        // A relaunched app's SDK may open the file while the last one's writes finish: wait, never fail.
        var configuration = Configuration()
        configuration.busyMode = .timeout(10)
        queue = try DatabaseQueue(path: path, configuration: configuration)
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1 transactions, intents, values") { db in
            try db.execute(sql: Self.schema)
        }
        try migrator.migrate(queue)
    }

    /// A stored value.
    func value(_ key: String) throws -> String? {
        try queue.read { db in try String.fetchOne(db, sql: "SELECT value FROM values_ WHERE key = ?", arguments: [key])
        }
    }

    /// Stores a value.
    func set(_ key: String, _ value: String) throws {
        try queue.write { db in
            try db.execute(
                sql:
                    "INSERT INTO values_ (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                arguments: [key, value])
        }
    }

    /// Remembers a signed transaction (once) so it reaches the server even if the app dies. A new signed form
    /// of a transaction already posted (Apple signs a refunded transaction again, with its revocation date)
    /// goes back in the outbox.
    func remember(id: String, jws: String, at date: Date) throws {
        try queue.write { db in
            try db.execute(
                sql: """
                    INSERT INTO transactions (id, jws, seen_at) VALUES (?, ?, ?)
                    ON CONFLICT (id) DO UPDATE SET
                        posted_at = CASE WHEN jws = excluded.jws THEN posted_at ELSE NULL END,
                        jws = excluded.jws
                    """,
                arguments: [id, jws, date.timeIntervalSince1970])
        }
    }

    /// Records the server's answer for a transaction: its outcome and the credits it delivered.
    func posted(id: String, outcome: String, credits: Int64, at date: Date) throws {
        try queue.write { db in
            try db.execute(
                sql: "UPDATE transactions SET posted_at = ?, outcome = ?, credits = ? WHERE id = ?",
                arguments: [date.timeIntervalSince1970, outcome, credits, id])
        }
    }

    /// The credits the server said a transaction delivered, once it answered.
    func credits(id: String) throws -> Int64? {
        try queue.read { db in
            try Int64.fetchOne(db, sql: "SELECT credits FROM transactions WHERE id = ?", arguments: [id])
        }
    }

    /// The server's answer for a transaction (`delivered`, `duplicate`, `revoked`), once it answered.
    func outcome(id: String) throws -> String? {
        try queue.read { db in
            try String.fetchOne(db, sql: "SELECT outcome FROM transactions WHERE id = ?", arguments: [id])
        }
    }

    /// Whether this install has seen the transaction before (remembered it for the server).
    func isRemembered(id: String) throws -> Bool {
        try queue.read { db in
            try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM transactions WHERE id = ?)", arguments: [id])
                ?? false
        }
    }

    /// Whether a purchase of the product started here and did not end (the process died in it, or it waits
    /// for Ask to Buy).
    func hasOpenIntent(productId: String) throws -> Bool {
        try queue.read { db in
            try Bool.fetchOne(
                db,
                sql: """
                    SELECT EXISTS (
                        SELECT 1 FROM intents WHERE product_id = ? AND state IN ('started', 'interrupted', 'pending'))
                    """, arguments: [productId]) ?? false
        }
    }

    /// Transactions the server has not acknowledged, oldest first.
    func outbox() throws -> [(id: String, jws: String)] {
        try queue.read { db in
            try Row.fetchAll(db, sql: "SELECT id, jws FROM transactions WHERE posted_at IS NULL ORDER BY seen_at, id")
                .map { ($0["id"], $0["jws"]) }
        }
    }

    /// Records a purchase about to start.
    func startIntent(id: UUID, productId: String, quantity: Int, at date: Date) throws {
        try queue.write { db in
            try db.execute(
                sql: "INSERT INTO intents (id, product_id, quantity, started_at, state) VALUES (?, ?, ?, ?, 'started')",
                arguments: [id.uuidString, productId, quantity, date.timeIntervalSince1970])
        }
    }

    /// Ends a purchase intent.
    func endIntent(id: UUID, state: String) throws {
        try queue.write { db in
            try db.execute(sql: "UPDATE intents SET state = ? WHERE id = ?", arguments: [state, id.uuidString])
        }
    }

    /// Marks intents left `started` by a process that died as `interrupted`.
    ///
    /// - Returns: How many there were.
    func interruptStartedIntents() throws -> Int {
        try queue.write { db in
            try db.execute(sql: "UPDATE intents SET state = 'interrupted' WHERE state = 'started'")
            return db.changesCount
        }
    }
}
