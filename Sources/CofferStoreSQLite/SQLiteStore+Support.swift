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
                cached: "SELECT * FROM backup_history WHERE owner = ? AND environment = ? ORDER BY seq DESC LIMIT ?",
                arguments: [owner.uuidString, environment.rawValue, max(0, limit)]
            ).map { row in
                let name: String = row["writer_name"]
                let writer: BackupWriter = (row["writer_kind"] as String) == "admin" ? .admin(name) : .device(name)
                return BackupHistoryItem(
                    record: BackupRecord(
                        value: row["value"], lastUpdated: Millis.date(row["last_updated"]), version: row["version"],
                        writer: writer, currencies: try BackupCurrencies.wallets(row["currencies"])),
                    previousValue: row["previous_value"])
            }
        }
    }

    /// The figures come from the rollups the triggers keep (``RollupTables``): a few dozen rows whatever the ledger
    /// holds.
    public func dashboard(environment: AppStoreEnvironment, days: Int, now: Date) async throws -> DashboardFigures {
        let start = DashboardFigures.windowStart(days: days, endingAt: now)
        return try await read { db in
            let env = environment.rawValue
            let totals = DashboardRollup.Figure.totals.map(\.rawValue)
            let marks = Array(repeating: "?", count: totals.count).joined(separator: ", ")
            let rows = try Row.fetchAll(
                db,
                cached: """
                    SELECT figure, bucket, label, currency, count, amount FROM dashboard_rollups
                    WHERE environment = ? AND figure IN (\(marks)) AND bucket = 0
                    UNION ALL
                    SELECT figure, bucket, label, currency, count, amount FROM dashboard_rollups
                    WHERE environment = ? AND figure IN ('purchase.day', 'refund.day') AND bucket >= ?
                    UNION ALL
                    SELECT figure, bucket, label, currency, count, amount FROM dashboard_rollups
                    WHERE environment = ? AND figure IN ('expiry', 'expiry.other') AND bucket > ?
                    """,
                arguments: StatementArguments(
                    [env] + totals
                        + [env, DashboardRollup.day(start), env, DashboardRollup.hour(now)]
                        as [any DatabaseValueConvertible])
            ).map(Self.rollupRow)
            // The subscriptions whose access ends later this hour: counted exactly, through the index of their ends.
            var endingThisHour = (own: 0, other: 0)
            for row in try Row.fetchAll(
                db,
                cached: """
                    SELECT own, count(*) AS n FROM subscription_chains INDEXED BY subscription_chains_by_end
                    WHERE environment = ? AND own IN (0, 1) AND active_until > ? AND active_until < ? GROUP BY own
                    """,
                arguments: [env, Millis.from(now), Millis.from(DashboardRollup.endOfHour(now))])
            {
                if (row["own"] as Int) == 1 { endingThisHour.own = row["n"] } else { endingThisHour.other = row["n"] }
            }
            return DashboardFigures(rollups: rows, days: days, now: now, endingThisHour: endingThisHour)
        }
    }

    static func rollupRow(_ row: Row) -> DashboardRollup.Row {
        DashboardRollup.Row(
            figure: row["figure"], bucket: row["bucket"], label: row["label"], currency: row["currency"],
            count: row["count"], amount: row["amount"])
    }

    /// The dashboard's filter for users who are not App Review's or TestFlight's sandbox accounts (`users u`).
    static let ownAccounts =
        "AND (u.app_transaction_environment IS NULL OR u.app_transaction_environment = u.environment)"

    /// The dashboard's filter for receipts whose data came from the server's own environment (not App Review's
    /// sandbox purchases on a Production server).
    static let ownEnvironment = "AND (data_environment IS NULL OR data_environment = environment)"

    public func deleteGrants(environment: AppStoreEnvironment) async throws -> Int {
        try await write { db in
            try db.execute(cached: "DELETE FROM grants WHERE environment = ?", arguments: [environment.rawValue])
            return db.changesCount
        }
    }
}
