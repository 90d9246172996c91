import Foundation

/// What each row of the ledger's tables counts for in the dashboard's rollups (``DashboardRollup``), as SQL the
/// engines' triggers and backfills share: each function gives `SELECT`s of (environment, figure, bucket, label,
/// currency, count, amount), each times `sign` (`1` for a row written, `-1` for a row gone), for the row named `row`
/// (a trigger's `NEW` or `OLD`; for a backfill, the table's alias with `from` naming it).
public struct RollupSQL: Sendable {
    /// The SQL engine.
    public enum Dialect: Sendable {
        /// SQLite: flags are integers.
        case sqlite
        /// PostgreSQL: flags are booleans.
        case postgres
    }

    let dialect: Dialect

    /// The SQL for `dialect`.
    public init(_ dialect: Dialect) { self.dialect = dialect }

    private func isFalse(_ column: String) -> String {
        dialect == .sqlite ? "\(column) = 0" : "NOT \(column)"
    }

    private func startsWith(_ column: String, _ prefix: String) -> String {
        dialect == .sqlite
            ? "substr(\(column), 1, \(prefix.count)) = '\(prefix)'" : "starts_with(\(column), '\(prefix)')"
    }

    /// `from`, or a `FROM` for what follows when there is none (a trigger's row needs no table).
    private func from(_ from: String, then table: String) -> String {
        from.isEmpty ? "FROM \(table)" : "\(from), \(table)"
    }

    /// What a receipt counts for: purchases and refunds (totals, and per day with their money), and the other
    /// environment's purchases and credits.
    public func receipt(_ r: String, _ sign: String, from: String = "") -> String {
        let own = "(\(r).data_environment IS NULL OR \(r).data_environment = \(r).environment)"
        let priced = "(\(r).price IS NOT NULL AND \(r).currency IS NOT NULL AND \(isFalse("\(r).family_shared")))"
        let currency = "CASE WHEN \(priced) THEN \(r).currency ELSE '' END"
        let price = "CASE WHEN \(priced) THEN \(sign) * \(r).price ELSE 0 END"
        let purchase = "\(r).delivered_at IS NOT NULL AND \(isFalse("\(r).delivered_before_coffer")) AND \(own)"
        let refund =
            "\(r).revoked_at IS NOT NULL AND (\(r).reversed_at IS NULL OR \(r).revoked_at > \(r).reversed_at) AND \(own)"
        let other = "\(r).delivered_at IS NOT NULL AND \(r).data_environment <> \(r).environment"
        return """
            SELECT \(r).environment, 'purchases', 0, '', '', \(sign), 0 \(from) WHERE \(purchase)
            UNION ALL SELECT \(r).environment, 'purchase.day', \(r).delivered_at / 86400000, \(r).product_id,
                \(currency), \(sign), \(price) \(from) WHERE \(purchase)
            UNION ALL SELECT \(r).environment, 'refunds', 0, '', '', \(sign), 0 \(from) WHERE \(refund)
            UNION ALL SELECT \(r).environment, 'refund.day', \(r).revoked_at / 86400000, \(r).product_id,
                \(currency), \(sign), \(price) \(from) WHERE \(refund)
            UNION ALL SELECT \(r).environment, 'purchases.other', 0, '', '', \(sign), 0 \(from) WHERE \(other)
            UNION ALL SELECT \(r).environment, 'credits.other', 0, '', '', 0,
                \(sign) * COALESCE(\(r).delivered_credits, 0) \(from)
                WHERE \(other) AND (\(r).revoked_at IS NULL OR \(r).revoked_at <= \(r).reversed_at)
            """
    }

    /// Whether a customer row is the server's own (not App Review's or TestFlight's sandbox account).
    private func ownUser(_ u: String) -> String {
        "(\(u).app_transaction_environment IS NULL OR \(u).app_transaction_environment = \(u).environment)"
    }

    /// What a customer counts for: the server's own customers, or the other environment's.
    public func user(_ u: String, _ sign: String, from: String = "") -> String {
        """
        SELECT \(u).environment, CASE WHEN \(ownUser(u)) THEN 'users' ELSE 'users.other' END, 0, '', '', \(sign), 0
        \(from) WHERE \(ownUser(u)) OR \(u).app_transaction_environment <> \(u).environment
        """
    }

    /// What a customer's wallet counts for while the customer is the row `u` (their AppTransaction changing moves
    /// their deficit in or out of the dashboard's).
    public func deficit(_ u: String, _ sign: String) -> String {
        """
        SELECT \(u).environment, 'deficit', 0, '', '', \(sign), \(sign) * w.deficit FROM wallets w
        WHERE w.user_id = \(u).id AND w.deficit > 0 AND \(ownUser(u))
        """
    }

    /// What a wallet counts for: a customer in deficit, and what they owe.
    public func wallet(_ w: String, _ sign: String, from: String = "") -> String {
        """
        SELECT u.environment, 'deficit', 0, '', '', \(sign), \(sign) * \(w).deficit \(self.from(from, then: "users u"))
        WHERE u.id = \(w).user_id AND \(w).deficit > 0 AND \(ownUser("u"))
        """
    }

    /// What another currency's wallet (`currency_wallets`) counts for: a customer in deficit in that currency, and
    /// what they owe, labelled by the currency.
    public func currencyWallet(_ w: String, _ sign: String, from: String = "") -> String {
        """
        SELECT u.environment, 'deficit.currency', 0, \(w).credit_currency, '', \(sign), \(sign) * \(w).deficit
        \(self.from(from, then: "users u")) WHERE u.id = \(w).user_id AND \(w).deficit > 0 AND \(ownUser("u"))
        """
    }

    /// What a customer's wallets of other currencies count for while the customer is the row `u`, as
    /// ``deficit(_:_:)``.
    public func currencyDeficit(_ u: String, _ sign: String) -> String {
        """
        SELECT \(u).environment, 'deficit.currency', 0, w.credit_currency, '', \(sign), \(sign) * w.deficit
        FROM currency_wallets w WHERE w.user_id = \(u).id AND w.deficit > 0 AND \(ownUser(u))
        """
    }

    /// What a grant counts for: pending or claimed.
    public func grant(_ g: String, _ sign: String, from: String = "") -> String {
        """
        SELECT \(g).environment, 'grants.pending', 0, '', '', \(sign), 0 \(from)
            WHERE \(g).claimed_at IS NULL AND \(g).cancelled_at IS NULL
        UNION ALL SELECT \(g).environment, 'grants.claimed', 0, '', '', \(sign), 0 \(from) WHERE \(g).claimed_at IS NOT NULL
        """
    }

    /// What a milestone counts for: a loyalty lifetime's.
    public func milestone(_ m: String, _ sign: String, from: String = "") -> String {
        """
        SELECT u.environment, 'loyalty', 0, \(m).name, '', \(sign), 0 \(self.from(from, then: "users u"))
        WHERE u.id = \(m).owner AND \(startsWith("\(m).name", DashboardFigures.loyaltyMilestonePrefix))
        """
    }

    /// What Apple's notification counts for: its type in its hour.
    public func notification(_ n: String, _ sign: String, from: String = "") -> String {
        "SELECT \(n).environment, 'notifications.hour', \(n).received_at / 3600000, \(n).type, '', \(sign), 0 \(from)"
    }

    /// Every table's rows, for a backfill: `SELECT`s of what the database already holds.
    public var everything: String {
        """
        \(receipt("x", "1", from: "FROM receipts x"))
        UNION ALL \(user("x", "1", from: "FROM users x"))
        UNION ALL \(wallet("x", "1", from: "FROM wallets x"))
        UNION ALL \(grant("x", "1", from: "FROM grants x"))
        UNION ALL \(milestone("x", "1", from: "FROM milestones x"))
        UNION ALL \(notification("x", "1", from: "FROM notifications x"))
        """
    }

    /// The columns of a receipt whose change moves a figure or a subscription's end.
    public static let receiptColumnNames = [
        "delivered_at", "revoked_at", "reversed_at", "data_environment", "delivered_before_coffer", "price", "currency",
        "family_shared", "product_id", "delivered_credits", "expires_date", "original_transaction_id",
    ]

    /// ``receiptColumnNames`` as an `UPDATE OF` list.
    public static var receiptColumns: String { receiptColumnNames.joined(separator: ", ") }

    /// A trigger's condition that one of `columns` changed (an upsert names every column whether it changed or
    /// not: a delivery's second answer, a refund, write them all).
    public func changed(_ columns: [String]) -> String {
        let differ = dialect == .sqlite ? "IS NOT" : "IS DISTINCT FROM"
        return columns.map { "OLD.\($0) \(differ) NEW.\($0)" }.joined(separator: " OR ")
    }
}
