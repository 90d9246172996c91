// The support-scale benchmark's data: customers and their year of purchases written straight into the store's tables
// by SQL (the rows the ledger writes for them: receipts, ledger entries, wallets, renewal states, Apple's
// notifications, grants and their audit entries), with the store's own triggers keeping its rollups as they would
// for each delivery. Writing ten million receipts through the API would take hours on this machine. The support-scale
// benchmark and LedgerGrowth both fill with it.
import Foundation
import GRDB

/// The rows of customers `first...last` (each with ten receipts), in one engine's SQL.
public struct SupportFill {
    /// The engine whose SQL to write.
    public enum Dialect: Sendable { case sqlite, postgres }

    /// The engine whose SQL to write.
    public let dialect: Dialect
    /// Now, in milliseconds: purchases are dated in the 90 days before it, subscriptions end in the 30 days after.
    public let now: Int64

    /// A day in milliseconds.
    public static let day: Int64 = 86_400_000

    /// Fills for `dialect`, with purchases dated before `now` (milliseconds since 1970).
    public init(dialect: Dialect, now: Int64) {
        self.dialect = dialect
        self.now = now
    }

    /// Customer `i`'s id, as the user's row holds it: `00000001-0000-4000-8000-000000000001` in upper-case hex.
    public static func userId(_ i: Int) -> String {
        String(format: "%08X-0000-4000-8000-%012X", i, i)
    }

    /// The ledger entries customers `1...customers` hold: a purchase entry for each of their ten receipts, and a
    /// revocation for every fourth customer's refunded one.
    public static func entries(customers: Int) -> Int { customers * 10 + customers / 4 }

    /// Customer `i`'s Support ID (fixed: the same customer at every size), spread as random ones are: a bijection of
    /// the customer's number on 48 bits.
    public static func supportId(_ i: Int) -> String {
        "_" + String(format: "%012llx", (UInt64(i) &* 2_654_435_761) % (1 << 48))
    }

    /// ``supportId(_:)`` in SQL, for the customer number `expression`.
    private func supportId(_ expression: String) -> String {
        "'_' || " + lowerHex("(\(expression) * 2654435761) % 281474976710656", 12)
    }

    private func hex(_ expression: String, _ width: Int) -> String {
        dialect == .sqlite
            ? "printf('%0\(width)X', \(expression))" : "upper(lpad(to_hex(\(expression)), \(width), '0'))"
    }
    private func lowerHex(_ expression: String, _ width: Int) -> String {
        dialect == .sqlite ? "printf('%0\(width)x', \(expression))" : "lpad(to_hex(\(expression)), \(width), '0')"
    }
    private var no: String { dialect == .sqlite ? "0" : "false" }
    private var yes: String { dialect == .sqlite ? "1" : "true" }

    /// A UUID in text made of a number: `00000001-0000-4000-8000-000000000001`.
    private func uuid(_ expression: String, _ tag: Int) -> String {
        "\(hex(expression, 8)) || '-\(String(format: "%04x", tag))-4000-8000-' || \(hex(expression, 12))"
    }

    /// The numbers `first...last` as a table `n(i)`, and the ten receipts of each as `k(j)`.
    private func numbers(_ first: Int, _ last: Int) -> String {
        let series =
            dialect == .sqlite
            ? "SELECT \(first) UNION ALL SELECT i + 1 FROM n WHERE i < \(last)"
            : "SELECT generate_series(\(first), \(last))"
        return "WITH RECURSIVE n(i) AS (\(series)), k(j) AS (VALUES (1), (2), (3), (4), (5), (6), (7), (8), (9), (10))"
    }

    /// The statements that write customers `first...last`.
    public func statements(first: Int, last: Int) -> [String] {
        let user = uuid("n.i", 0)
        // A day in milliseconds, 64-bit in both (PostgreSQL would multiply 32-bit integers and overflow).
        let day = dialect == .sqlite ? "\(Self.day)" : "\(Self.day)::bigint"
        // Receipt j of customer i: four renewals of a monthly subscription (the last one running), five consumables
        // over the last 60 days (the first of every fourth customer refunded a day later), one non-consumable.
        let purchase = """
            CASE WHEN k.j <= 4 THEN \(now) - (4 - k.j) * 30 * \(day) - (n.i % 20) * \(day)
                WHEN k.j <= 9 THEN \(now) - ((n.i * 7 + k.j) % 60) * \(day) - (n.i % 1000) * 1000
                ELSE \(now) - (n.i % 90) * \(day) END
            """
        let transaction = "'b' || n.i || '-' || k.j"
        let product =
            "CASE WHEN k.j <= 4 THEN 'com.example.pro.monthly' WHEN k.j <= 9 THEN 'com.example.credits' "
            + "ELSE 'com.example.noads' END"
        let refunded = "(k.j = 5 AND n.i % 4 = 0)"
        let credits = "CASE WHEN k.j BETWEEN 5 AND 9 THEN 100 ELSE 0 END"
        let only = "WHERE k.j = 1"
        return [
            """
            \(numbers(first, last))
            INSERT INTO users (id, environment, support_id, token_hash, app_account_token, created_at)
            SELECT \(user), 'Sandbox', \(supportId("n.i")), 'bulk-' || n.i, \(uuid("n.i", 1)),
                \(now) - 100 * \(day) + n.i * 1000
            FROM n, k \(only)
            """,
            """
            \(numbers(first, last))
            INSERT INTO wallets (user_id, balance, deficit)
            SELECT \(user), 400, CASE WHEN n.i % 97 = 0 THEN 50 ELSE 0 END FROM n, k \(only)
            """,
            """
            \(numbers(first, last))
            INSERT INTO receipts (environment, transaction_id, owner, original_transaction_id, product_id, quantity,
                purchase_date, expires_date, revocation_date, family_shared, trial, upgraded, delivered_credits,
                delivered_at, revoked_at, taken_from_balance, added_to_deficit, reversed_at, data_environment, price,
                currency)
            SELECT 'Sandbox', \(transaction), \(user),
                CASE WHEN k.j <= 4 THEN 'b' || n.i || '-1' ELSE \(transaction) END, \(product), 1, \(purchase),
                CASE WHEN k.j <= 4 THEN \(purchase) + 30 * \(day) END,
                CASE WHEN \(refunded) THEN \(purchase) + \(day) END, \(no), \(no), \(no), \(credits), \(purchase),
                CASE WHEN \(refunded) THEN \(purchase) + \(day) END, 0, 0, NULL, 'Sandbox',
                CASE WHEN k.j <= 4 THEN 990 WHEN k.j <= 9 THEN 4990 ELSE 1990 END, 'EUR'
            FROM n, k
            """,
            """
            \(numbers(first, last))
            INSERT INTO ledger_entries (environment, owner, key, kind, amount, balance_delta, deficit_delta,
                balance_after, deficit_after, transaction_id, product_id, reason, created_at)
            SELECT 'Sandbox', \(user), 'purchase:' || \(transaction), 'purchase', \(credits), \(credits), 0,
                k.j * 100, 0, \(transaction), \(product), NULL, \(purchase)
            FROM n, k
            """,
            """
            \(numbers(first, last))
            INSERT INTO ledger_entries (environment, owner, key, kind, amount, balance_delta, deficit_delta,
                balance_after, deficit_after, transaction_id, product_id, reason, created_at)
            SELECT 'Sandbox', \(user), 'revocation:' || \(transaction), 'revocation', -100, -100, 0, 400, 0,
                \(transaction), \(product), NULL, \(purchase) + \(day)
            FROM n, k WHERE \(refunded)
            """,
            """
            \(numbers(first, last))
            INSERT INTO renewal_states (environment, original_transaction_id, owner, auto_renew_product_id,
                auto_renews, in_billing_retry, grace_period_expires_date, signed_date)
            SELECT 'Sandbox', 'b' || n.i || '-1', \(user), 'com.example.pro.monthly', \(yes), \(no), NULL, \(now)
            FROM n, k \(only)
            """,
            """
            \(numbers(first, last))
            INSERT INTO notifications (environment, uuid, type, subtype, transaction_id, original_transaction_id, owner,
                signed_date, received_at, outcome, source)
            SELECT 'Sandbox', 'n-' || n.i || '-' || k.j, 'DID_RENEW', NULL, \(transaction), 'b' || n.i || '-1', \(user),
                \(purchase), \(purchase), 'applied', 'apple'
            FROM n, k WHERE k.j BETWEEN 2 AND 4
            """,
            """
            \(numbers(first, last))
            INSERT INTO grants (id, environment, recipient, credits, reason, created_by, created_at, claimed_at)
            SELECT \(uuid("n.i", 2)), 'Sandbox', \(user), 50, 'A goodwill grant', 'admin:ada',
                \(now) - (n.i % 60) * \(day), CASE WHEN n.i % 20 = 0 THEN \(now) - (n.i % 60) * \(day) + 1000 END
            FROM n, k \(only) AND n.i % 10 = 0
            """,
            """
            \(numbers(first, last))
            INSERT INTO audit_events (id, environment, actor, action, subject, at)
            SELECT \(uuid("n.i", 3)), 'Sandbox', 'admin:ada', 'grant.create', \(supportId("n.i")),
                \(now) - (n.i % 60) * \(day)
            FROM n, k \(only) AND n.i % 10 = 0
            """,
        ]
    }
}

extension SupportFill {
    /// A statement the database refused.
    public struct Failed: Error, CustomStringConvertible {
        /// What went wrong.
        public let description: String
    }

    /// Runs one statement on a database beside whatever else has it open: `sqlite:PATH` through a queue of its own,
    /// a PostgreSQL URL through `psql`.
    public static func execute(_ sql: String, databaseURL: String) async throws {
        if databaseURL.hasPrefix("sqlite:") {
            let queue = try DatabaseQueue(path: String(databaseURL.dropFirst("sqlite:".count)))
            try await queue.write { db in try db.execute(sql: sql) }
            try queue.close()
            return
        }
        let psql = Process()
        psql.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        psql.arguments = ["psql", databaseURL, "-q", "-v", "ON_ERROR_STOP=1", "-c", sql]
        try psql.run()
        psql.waitUntilExit()
        guard psql.terminationStatus == 0 else { throw Failed(description: "psql exited \(psql.terminationStatus)") }
    }
}
