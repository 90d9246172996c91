// swift-format-ignore-file: AllPublicDeclarationsHaveDocumentation

// The public methods here are the store protocols' requirements, documented there (`CofferStore/Stores`).
import CofferCore
import CofferLedgerSQLite
import CofferStore
import Foundation
import GRDB

extension SQLiteStore {
    public func recordNotification(_ record: NotificationRecord) async throws -> Bool {
        try await write { db in
            try db.execute(
                cached: """
                    INSERT INTO notifications (environment, uuid, type, subtype, transaction_id,
                        original_transaction_id, owner, signed_date, received_at, outcome, source)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    ON CONFLICT (environment, uuid) DO NOTHING
                    """,
                arguments: [
                    record.environment.rawValue, record.uuid, record.type, record.subtype, record.transactionId,
                    record.originalTransactionId, record.owner?.uuidString, Millis.from(record.signedDate),
                    Millis.from(record.receivedAt), record.outcome.rawValue, record.source,
                ])
            let new = db.changesCount > 0
            if new, let body = record.forwardBody {
                try db.execute(
                    cached: WebhookTables.forward,
                    arguments: [
                        record.environment.rawValue, record.type, record.owner?.uuidString, record.transactionId,
                        record.subtype, body, Millis.from(record.receivedAt), record.environment.rawValue,
                    ])
            }
            return new
        }
    }

    public func notification(uuid: String, environment: AppStoreEnvironment) async throws -> NotificationRecord? {
        try await read { db in
            try Row.fetchOne(
                db, cached: "SELECT * FROM notifications WHERE environment = ? AND uuid = ?",
                arguments: [environment.rawValue, uuid]
            ).map(Self.notification)
        }
    }

    public func notifications(
        environment: AppStoreEnvironment, transactionId: String?, outcome: NotificationOutcome?, limit: Int
    ) async throws -> [NotificationRecord] {
        try await read { db in
            var sql = "SELECT * FROM notifications WHERE environment = ?"
            var arguments: StatementArguments = [environment.rawValue]
            if let transactionId {
                sql += " AND (transaction_id = ? OR original_transaction_id = ?)"
                arguments += [transactionId, transactionId]
            }
            if let outcome {
                sql += " AND outcome = ?"
                arguments += [outcome.rawValue]
            }
            sql += " ORDER BY received_at DESC, seq DESC LIMIT ?"
            arguments += [max(0, limit)]
            // A few shapes of this query run on every delivery: compiled once each.
            return try Row.fetchAll(db.cachedStatement(sql: sql), arguments: arguments).map(Self.notification)
        }
    }

    /// The whole hours since `since` come from the rollups (``RollupTables``), the first, partial hour from the
    /// notifications themselves through their index.
    public func notificationCounts(environment: AppStoreEnvironment, since: Date) async throws -> [String: Int] {
        let (firstHour, hourStart) = DashboardRollup.firstWholeHour(from: since)
        return try await read { db in
            var edge: [String: Int] = [:]
            for row in try Row.fetchAll(
                db,
                cached: """
                    SELECT type, COUNT(*) AS n FROM notifications INDEXED BY notifications_by_received
                    WHERE environment = ? AND received_at >= ? AND received_at < ? GROUP BY type
                    """, arguments: [environment.rawValue, Millis.from(since), Millis.from(hourStart)])
            {
                edge[row["type"]] = row["n"]
            }
            let hours = try Row.fetchAll(
                db,
                cached: """
                    SELECT figure, bucket, label, currency, count, amount FROM dashboard_rollups
                    WHERE environment = ? AND figure = 'notifications.hour' AND bucket >= ?
                    """, arguments: [environment.rawValue, firstHour]
            ).map(Self.rollupRow)
            return DashboardRollup.notificationCounts(hours: hours, firstHour: firstHour, edge: edge)
        }
    }

    public func saveRenewalState(_ state: RenewalState) async throws -> Bool {
        try await write { db in
            guard try Self.userExists(db, id: state.owner, environment: state.environment) else {
                throw StoreError.notFound("user \(state.owner)")
            }
            try db.execute(
                cached: """
                    INSERT INTO renewal_states (environment, original_transaction_id, owner, auto_renew_product_id,
                        auto_renews, in_billing_retry, grace_period_expires_date, signed_date)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                    ON CONFLICT (environment, original_transaction_id) DO UPDATE SET
                        owner = excluded.owner, auto_renew_product_id = excluded.auto_renew_product_id,
                        auto_renews = excluded.auto_renews, in_billing_retry = excluded.in_billing_retry,
                        grace_period_expires_date = excluded.grace_period_expires_date,
                        signed_date = excluded.signed_date
                    WHERE excluded.signed_date >= renewal_states.signed_date
                    """,
                arguments: [
                    state.environment.rawValue, state.originalTransactionId, state.owner.uuidString,
                    state.autoRenewProductId, state.autoRenews, state.inBillingRetry,
                    state.gracePeriodExpiresDate.map(Millis.from), Millis.from(state.signedDate),
                ])
            return db.changesCount > 0
        }
    }

    public func renewalStates(owner: UUID, environment: AppStoreEnvironment) async throws -> [RenewalState] {
        try await readStatement { db in try Self.renewalStates(db, owner: owner, environment: environment) }
    }

    /// A customer's subscriptions' renewal states, by original transaction, read on `db`.
    static func renewalStates(_ db: Database, owner: UUID, environment: AppStoreEnvironment) throws
        -> [RenewalState]
    {
        try Row.fetchAll(
            db,
            cached: "SELECT * FROM renewal_states WHERE environment = ? AND owner = ? ORDER BY original_transaction_id",
            arguments: [environment.rawValue, owner.uuidString]
        ).map { row in
            RenewalState(
                originalTransactionId: row["original_transaction_id"],
                environment: try RowValue.environment(row),
                owner: try RowValue.uuid(row, "owner"),
                autoRenewProductId: row["auto_renew_product_id"],
                autoRenews: row["auto_renews"],
                inBillingRetry: row["in_billing_retry"],
                gracePeriodExpiresDate: (row["grace_period_expires_date"] as Int64?).map(Millis.date),
                signedDate: Millis.date(row["signed_date"]))
        }
    }

    public func cursor(_ name: String, environment: AppStoreEnvironment) async throws -> String? {
        try await read { db in
            try String.fetchOne(
                db, cached: "SELECT value FROM cursors WHERE environment = ? AND name = ?",
                arguments: [environment.rawValue, name])
        }
    }

    public func saveCursor(_ name: String, value: String, environment: AppStoreEnvironment) async throws {
        try await write { db in
            try db.execute(
                cached: """
                    INSERT INTO cursors (environment, name, value) VALUES (?, ?, ?)
                    ON CONFLICT (environment, name) DO UPDATE SET value = excluded.value
                    """,
                arguments: [environment.rawValue, name, value])
        }
    }
}
