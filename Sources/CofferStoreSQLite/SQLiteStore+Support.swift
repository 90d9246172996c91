// swift-format-ignore-file: AllPublicDeclarationsHaveDocumentation

// The public methods here are the store protocols' requirements, documented there (`CofferStore/Stores`).
import CofferCore
import CofferLedgerSQLite
import CofferStore
import Foundation
import GRDB

extension SQLiteStore {
    public func backupHistory(owner: UUID, environment: AppStoreEnvironment, limit: Int) async throws
        -> [BackupHistoryItem]
    {
        try await read { db in
            try Row.fetchAll(
                db,
                sql: "SELECT * FROM backup_history WHERE owner = ? AND environment = ? ORDER BY seq DESC LIMIT ?",
                arguments: [owner.uuidString, environment.rawValue, max(0, limit)]
            ).map { row in
                let name: String = row["writer_name"]
                let writer: BackupWriter = (row["writer_kind"] as String) == "admin" ? .admin(name) : .device(name)
                return BackupHistoryItem(
                    record: BackupRecord(
                        value: row["value"], lastUpdated: Millis.date(row["last_updated"]), version: row["version"],
                        writer: writer),
                    previousValue: row["previous_value"])
            }
        }
    }

    public func dashboard(environment: AppStoreEnvironment, days: Int, now: Date) async throws -> DashboardFigures {
        let start = DashboardFigures.windowStart(days: days, endingAt: now)
        return try await read { db in
            let env = environment.rawValue
            func count(_ sql: String) throws -> Int { try Int.fetchOne(db, sql: sql, arguments: [env]) ?? 0 }
            func perDay(_ column: String, _ filter: String) throws -> [Int64: Int] {
                let rows = try Row.fetchAll(
                    db,
                    sql: """
                        SELECT \(column) / 86400000 AS day, COUNT(*) AS n FROM receipts
                        WHERE environment = ? AND \(column) >= ? \(Self.ownEnvironment) \(filter) GROUP BY day
                        """,
                    arguments: [env, Millis.from(start)])
                return Dictionary(uniqueKeysWithValues: rows.map { (($0["day"] as Int64), ($0["n"] as Int)) })
            }
            let deficit = try Row.fetchOne(
                db,
                sql: """
                    SELECT COUNT(*) AS n, COALESCE(SUM(w.deficit), 0) AS total FROM wallets w
                    JOIN users u ON u.id = w.user_id WHERE u.environment = ? AND w.deficit > 0
                        AND (u.app_transaction_environment IS NULL OR u.app_transaction_environment = u.environment)
                    """,
                arguments: [env])
            var figures = DashboardFigures(
                users: try count("SELECT COUNT(*) FROM users u WHERE u.environment = ? \(Self.ownAccounts)"),
                pendingGrants: try count(
                    "SELECT COUNT(*) FROM grants WHERE environment = ? AND claimed_at IS NULL AND cancelled_at IS NULL"),
                claimedGrants: try count(
                    "SELECT COUNT(*) FROM grants WHERE environment = ? AND claimed_at IS NOT NULL"),
                purchases: try count(
                    "SELECT COUNT(*) FROM receipts WHERE environment = ? AND delivered_at IS NOT NULL "
                        + "AND delivered_before_coffer = 0 " + Self.ownEnvironment
                ),
                refunds: try count(
                    "SELECT COUNT(*) FROM receipts WHERE environment = ? AND revoked_at IS NOT NULL"
                        + " AND (reversed_at IS NULL OR revoked_at > reversed_at) \(Self.ownEnvironment)"
                ),
                usersInDeficit: deficit?["n"] ?? 0,
                outstandingDeficit: deficit?["total"] ?? 0,
                days: DashboardFigures.fill(
                    days: days, from: start, purchases: try perDay("delivered_at", "AND delivered_before_coffer = 0"),
                    refunds: try perDay("revoked_at", "AND (reversed_at IS NULL OR revoked_at > reversed_at)")),
                otherEnvironmentPurchases: try count(
                    "SELECT COUNT(*) FROM receipts WHERE environment = ? AND delivered_at IS NOT NULL"
                        + " AND data_environment <> environment"))
            let now = Millis.from(now)
            for row in try Row.fetchAll(
                db,
                sql: """
                    SELECT 'p' AS kind, delivered_at / 86400000 AS day, product_id, currency, COUNT(*) AS n,
                        SUM(price) AS amount FROM receipts
                    WHERE environment = ? AND delivered_at >= ? \(Self.ownEnvironment) AND delivered_before_coffer = 0
                        AND price IS NOT NULL AND currency IS NOT NULL AND family_shared = 0 GROUP BY day, product_id, currency
                    UNION ALL
                    SELECT 'r' AS kind, revoked_at / 86400000 AS day, product_id, currency, COUNT(*) AS n,
                        SUM(price) AS amount FROM receipts
                    WHERE environment = ? AND revoked_at >= ? \(Self.ownEnvironment)
                        AND (reversed_at IS NULL OR revoked_at > reversed_at)
                        AND price IS NOT NULL AND currency IS NOT NULL AND family_shared = 0 GROUP BY day, product_id, currency
                    ORDER BY day, product_id, currency
                    """,
                arguments: [env, Millis.from(start), env, Millis.from(start)])
            {
                let money = MoneyFigures(
                    dayNumber: row["day"], productId: row["product_id"], currency: row["currency"], count: row["n"],
                    amount: row["amount"])
                if (row["kind"] as String) == "p" {
                    figures.revenue.append(money)
                } else {
                    figures.refunded.append(money)
                }
            }
            figures.activeSubscriptions =
                try Int.fetchOne(
                    db,
                    sql: """
                        SELECT COUNT(DISTINCT r.original_transaction_id) FROM receipts r
                        LEFT JOIN renewal_states s
                            ON s.environment = r.environment AND s.original_transaction_id = r.original_transaction_id
                        WHERE r.environment = ?1 AND r.delivered_at IS NOT NULL
                            AND (r.data_environment IS NULL OR r.data_environment = r.environment)
                            AND (r.revoked_at IS NULL OR r.revoked_at <= r.reversed_at)
                            AND (r.expires_date > ?2 OR s.grace_period_expires_date > ?2)
                        """, arguments: [env, now]) ?? 0
            // What the other environment's data did (App Review and TestFlight on Production), shown beside.
            let other = try Row.fetchOne(
                db,
                sql: """
                    SELECT
                        (SELECT COUNT(*) FROM users WHERE environment = ?1 AND app_transaction_environment <> environment)
                            AS customers,
                        (SELECT COALESCE(SUM(delivered_credits), 0) FROM receipts WHERE environment = ?1
                            AND delivered_at IS NOT NULL AND data_environment <> environment
                            AND (revoked_at IS NULL OR revoked_at <= reversed_at)) AS credits,
                        (SELECT COUNT(DISTINCT r.original_transaction_id) FROM receipts r
                            LEFT JOIN renewal_states s ON s.environment = r.environment
                                AND s.original_transaction_id = r.original_transaction_id
                            WHERE r.environment = ?1 AND r.delivered_at IS NOT NULL
                            AND r.data_environment <> r.environment
                            AND (r.revoked_at IS NULL OR r.revoked_at <= r.reversed_at)
                            AND (r.expires_date > ?2 OR s.grace_period_expires_date > ?2)) AS subscriptions
                    """, arguments: [env, now])
            figures.otherEnvironmentCustomers = other?["customers"] ?? 0
            figures.otherEnvironmentCredits = other?["credits"] ?? 0
            figures.otherEnvironmentSubscriptions = other?["subscriptions"] ?? 0
            figures.loyaltyLifetimes = try Row.fetchAll(
                db,
                sql: """
                    SELECT substr(m.name, ?) AS grp, COUNT(*) AS n FROM milestones m JOIN users u ON u.id = m.owner
                    WHERE u.environment = ? AND substr(m.name, 1, ?) = ? GROUP BY m.name ORDER BY m.name
                    """,
                arguments: [
                    DashboardFigures.loyaltyMilestonePrefix.count + 1, env,
                    DashboardFigures.loyaltyMilestonePrefix.count,
                    DashboardFigures.loyaltyMilestonePrefix,
                ]
            ).map { GroupCount(group: $0["grp"], count: $0["n"]) }
            return figures
        }
    }

    /// The dashboard's filter for users who are not App Review's or TestFlight's sandbox accounts (`users u`).
    static let ownAccounts =
        "AND (u.app_transaction_environment IS NULL OR u.app_transaction_environment = u.environment)"

    /// The dashboard's filter for receipts whose data came from the server's own environment (not App Review's
    /// sandbox purchases on a Production server).
    static let ownEnvironment = "AND (data_environment IS NULL OR data_environment = environment)"

    public func deleteGrants(environment: AppStoreEnvironment) async throws -> Int {
        try await write { db in
            try db.execute(sql: "DELETE FROM grants WHERE environment = ?", arguments: [environment.rawValue])
            return db.changesCount
        }
    }
}
