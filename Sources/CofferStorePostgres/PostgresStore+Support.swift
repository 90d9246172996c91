// swift-format-ignore-file: AllPublicDeclarationsHaveDocumentation

// The public methods here are the store protocols' requirements, documented there (`CofferStore/Stores`).
import CofferCore
import CofferStore
import Foundation
import Logging
import NIOSSL
import PostgresNIO

extension PostgresStore {
    public func backupHistory(owner: UUID, environment: AppStoreEnvironment, limit: Int) async throws
        -> [BackupHistoryItem]
    {
        try await all(
            """
            SELECT * FROM backup_history WHERE owner = \(owner.uuidString) AND environment = \(environment.rawValue)
            ORDER BY seq DESC LIMIT \(max(0, limit))
            """, Rows.backupHistoryItem)
    }

    public func dashboard(environment: AppStoreEnvironment, days: Int, now: Date) async throws -> DashboardFigures {
        let start = DashboardFigures.windowStart(days: days, endingAt: now)
        let env = environment.rawValue
        let since = Millis.from(start)
        return try await read { connection in
            let totals = try await Self.first(
                connection,
                """
                SELECT
                    (SELECT count(*) FROM users u WHERE u.environment = \(env)
                        AND (u.app_transaction_environment IS NULL OR u.app_transaction_environment = u.environment)) AS users,
                    (SELECT count(*) FROM grants WHERE environment = \(env) AND claimed_at IS NULL
                        AND cancelled_at IS NULL) AS pending,
                    (SELECT count(*) FROM grants WHERE environment = \(env) AND claimed_at IS NOT NULL) AS claimed,
                    (SELECT count(*) FROM receipts WHERE environment = \(env) AND delivered_at IS NOT NULL
                        AND NOT delivered_before_coffer
                        AND (data_environment IS NULL OR data_environment = environment)) AS purchases,
                    (SELECT count(*) FROM receipts WHERE environment = \(env) AND revoked_at IS NOT NULL
                        AND (reversed_at IS NULL OR revoked_at > reversed_at)
                        AND (data_environment IS NULL OR data_environment = environment)) AS refunds,
                    (SELECT count(*) FROM receipts WHERE environment = \(env) AND delivered_at IS NOT NULL
                        AND data_environment <> environment) AS other_environment,
                    (SELECT count(*) FROM wallets w JOIN users u ON u.id = w.user_id
                        WHERE u.environment = \(env) AND w.deficit > 0
                        AND (u.app_transaction_environment IS NULL OR u.app_transaction_environment = u.environment)) AS in_deficit,
                    (SELECT COALESCE(SUM(w.deficit), 0)::BIGINT FROM wallets w JOIN users u ON u.id = w.user_id
                        WHERE u.environment = \(env) AND w.deficit > 0
                        AND (u.app_transaction_environment IS NULL OR u.app_transaction_environment = u.environment)) AS deficit
                """, logger: self.logger
            ) { row -> [Int64] in
                let row = row.makeRandomAccess()
                return try [
                    "users", "pending", "claimed", "purchases", "refunds", "in_deficit", "deficit", "other_environment",
                ].map {
                    try Rows.value(row, $0, as: Int64.self)
                }
            }
            guard let totals else { throw StoreError.storage("no dashboard row") }
            var purchases: [Int64: Int] = [:]
            var refunds: [Int64: Int] = [:]
            let rows = try await connection.query(
                """
                SELECT 'p' AS kind, delivered_at / 86400000 AS day, count(*) AS n FROM receipts
                WHERE environment = \(env) AND delivered_at >= \(since) AND NOT delivered_before_coffer
                    AND (data_environment IS NULL OR data_environment = environment) GROUP BY day
                UNION ALL
                SELECT 'r' AS kind, revoked_at / 86400000 AS day, count(*) AS n FROM receipts
                WHERE environment = \(env) AND revoked_at >= \(since)
                    AND (data_environment IS NULL OR data_environment = environment)
                    AND (reversed_at IS NULL OR revoked_at > reversed_at) GROUP BY day
                """, logger: self.logger)
            for try await (kind, day, n) in rows.decode((String, Int64, Int64).self) {
                if kind == "p" { purchases[day] = Int(n) } else { refunds[day] = Int(n) }
            }
            var figures = DashboardFigures(
                users: Int(totals[0]), pendingGrants: Int(totals[1]), claimedGrants: Int(totals[2]),
                purchases: Int(totals[3]), refunds: Int(totals[4]), usersInDeficit: Int(totals[5]),
                outstandingDeficit: totals[6],
                days: DashboardFigures.fill(days: days, from: start, purchases: purchases, refunds: refunds),
                otherEnvironmentPurchases: Int(totals[7]))
            let money = try await connection.query(
                """
                SELECT 'p' AS kind, delivered_at / 86400000 AS day, product_id, currency, count(*) AS n,
                    SUM(price)::BIGINT AS amount FROM receipts
                WHERE environment = \(env) AND delivered_at >= \(since) AND NOT delivered_before_coffer
                    AND (data_environment IS NULL OR data_environment = environment)
                    AND price IS NOT NULL AND currency IS NOT NULL AND NOT family_shared GROUP BY day, product_id, currency
                UNION ALL
                SELECT 'r' AS kind, revoked_at / 86400000 AS day, product_id, currency, count(*) AS n,
                    SUM(price)::BIGINT AS amount FROM receipts
                WHERE environment = \(env) AND revoked_at >= \(since)
                    AND (data_environment IS NULL OR data_environment = environment)
                    AND (reversed_at IS NULL OR revoked_at > reversed_at)
                    AND price IS NOT NULL AND currency IS NOT NULL AND NOT family_shared GROUP BY day, product_id, currency
                ORDER BY day, product_id, currency
                """, logger: self.logger)
            for try await (kind, day, product, currency, n, amount) in money.decode(
                (String, Int64, String, String, Int64, Int64).self)
            {
                let item = MoneyFigures(
                    dayNumber: day, productId: product, currency: currency, count: n, amount: amount)
                if kind == "p" { figures.revenue.append(item) } else { figures.refunded.append(item) }
            }
            let nowMillis = Millis.from(now)
            figures.activeSubscriptions = Int(
                try await Self.count(
                    connection,
                    """
                    SELECT count(DISTINCT r.original_transaction_id) FROM receipts r
                    LEFT JOIN renewal_states s
                        ON s.environment = r.environment AND s.original_transaction_id = r.original_transaction_id
                    WHERE r.environment = \(env) AND r.delivered_at IS NOT NULL
                        AND (r.data_environment IS NULL OR r.data_environment = r.environment)
                        AND (r.revoked_at IS NULL OR r.revoked_at <= r.reversed_at)
                        AND (r.expires_date > \(nowMillis) OR s.grace_period_expires_date > \(nowMillis))
                    """, logger: self.logger))
            // What the other environment's data did (App Review and TestFlight on Production), shown beside.
            let other = try await Self.first(
                connection,
                """
                SELECT
                    (SELECT count(*) FROM users WHERE environment = \(env)
                        AND app_transaction_environment <> environment),
                    (SELECT COALESCE(SUM(delivered_credits), 0)::BIGINT FROM receipts WHERE environment = \(env)
                        AND delivered_at IS NOT NULL AND data_environment <> environment
                        AND (revoked_at IS NULL OR revoked_at <= reversed_at)),
                    (SELECT count(DISTINCT r.original_transaction_id) FROM receipts r
                        LEFT JOIN renewal_states s ON s.environment = r.environment
                            AND s.original_transaction_id = r.original_transaction_id
                        WHERE r.environment = \(env) AND r.delivered_at IS NOT NULL
                        AND r.data_environment <> r.environment
                        AND (r.revoked_at IS NULL OR r.revoked_at <= r.reversed_at)
                        AND (r.expires_date > \(nowMillis) OR s.grace_period_expires_date > \(nowMillis)))
                """, logger: self.logger
            ) { try $0.decode((Int64, Int64, Int64).self) }
            figures.otherEnvironmentCustomers = Int(other?.0 ?? 0)
            figures.otherEnvironmentCredits = other?.1 ?? 0
            figures.otherEnvironmentSubscriptions = Int(other?.2 ?? 0)
            let prefix = DashboardFigures.loyaltyMilestonePrefix
            let loyalty = try await connection.query(
                """
                SELECT substr(m.name, \(Int32(prefix.count + 1))) AS grp, count(*) AS n
                FROM milestones m JOIN users u ON u.id = m.owner
                WHERE u.environment = \(env) AND starts_with(m.name, \(prefix)) GROUP BY m.name ORDER BY m.name
                """, logger: self.logger)
            for try await (group, n) in loyalty.decode((String, Int64).self) {
                figures.loyaltyLifetimes.append(GroupCount(group: group, count: Int(n)))
            }
            return figures
        }
    }

    public func deleteGrants(environment: AppStoreEnvironment) async throws -> Int {
        try await write { connection in
            try await Self.count(
                connection,
                """
                WITH deleted AS (DELETE FROM grants WHERE environment = \(environment.rawValue) RETURNING 1)
                SELECT count(*) FROM deleted
                """, logger: self.logger)
        }
    }
}
