// swift-format-ignore-file: AllPublicDeclarationsHaveDocumentation

// The public methods here are the store protocols' requirements, documented there (`CofferStore/Stores`).
import CofferCore
import CofferLedgerSQLite
import CofferStore
import Foundation
import GRDB

/// The refund defence's tables: each customer's consent, and what was answered to each refund request.
enum ConsumptionTables {
    static let sql = """
        CREATE TABLE consumption_consents (
            owner TEXT PRIMARY KEY NOT NULL,
            environment TEXT NOT NULL,
            consented INTEGER NOT NULL,
            at INTEGER NOT NULL
        );
        CREATE TABLE consumption_answers (
            environment TEXT NOT NULL,
            notification_uuid TEXT NOT NULL,
            owner TEXT NOT NULL,
            transaction_id TEXT NOT NULL,
            requested_at INTEGER NOT NULL,
            answered_at INTEGER NOT NULL,
            sent INTEGER NOT NULL,
            body TEXT,
            reason TEXT NOT NULL,
            PRIMARY KEY (environment, notification_uuid)
        );
        CREATE INDEX consumption_answers_owner ON consumption_answers (owner, environment, requested_at);
        """
}

extension SQLiteStore {
    public func saveConsumptionConsent(_ consent: ConsumptionConsent) async throws {
        try await write { db in
            guard try Self.userExists(db, id: consent.owner, environment: consent.environment, live: true) else {
                throw StoreError.notFound("user \(consent.owner)")
            }
            try db.execute(
                cached: """
                    INSERT INTO consumption_consents (owner, environment, consented, at) VALUES (?, ?, ?, ?)
                    ON CONFLICT (owner) DO UPDATE SET environment = excluded.environment,
                        consented = excluded.consented, at = excluded.at
                    """,
                arguments: [
                    consent.owner.uuidString, consent.environment.rawValue, consent.consented, Millis.from(consent.at),
                ])
        }
    }

    public func consumptionConsent(owner: UUID, environment: AppStoreEnvironment) async throws -> ConsumptionConsent? {
        try await all(
            "SELECT * FROM consumption_consents WHERE owner = ? AND environment = ?",
            [owner.uuidString, environment.rawValue]
        ) { row in
            ConsumptionConsent(
                owner: try RowValue.uuid(row, "owner"), environment: environment, consented: row["consented"],
                at: Millis.date(row["at"]))
        }.first
    }

    public func recordConsumptionAnswer(_ answer: ConsumptionAnswerRecord) async throws -> Bool {
        try await write { db in
            try db.execute(
                cached: """
                    INSERT INTO consumption_answers (environment, notification_uuid, owner, transaction_id,
                        requested_at, answered_at, sent, body, reason)
                    SELECT ?, ?, id, ?, ?, ?, ?, ?, ? FROM live_users WHERE id = ?
                    ON CONFLICT (environment, notification_uuid) DO NOTHING
                    """,
                arguments: [
                    answer.environment.rawValue, answer.notificationUUID, answer.transactionId,
                    Millis.from(answer.requestedAt), Millis.from(answer.answeredAt), answer.sent,
                    answer.body.map { String($0.prefix(ConsumptionAnswerRecord.maximumText)) },
                    String(answer.reason.prefix(ConsumptionAnswerRecord.maximumText)), answer.owner.uuidString,
                ])
            return db.changesCount > 0
        }
    }

    public func consumptionAnswers(owner: UUID, environment: AppStoreEnvironment, limit: Int) async throws
        -> [ConsumptionAnswerRecord]
    {
        try await all(
            """
            SELECT * FROM consumption_answers WHERE owner = ? AND environment = ?
            ORDER BY requested_at DESC, notification_uuid DESC LIMIT ?
            """, [owner.uuidString, environment.rawValue, max(0, limit)]
        ) { row in
            ConsumptionAnswerRecord(
                notificationUUID: row["notification_uuid"], environment: environment,
                owner: try RowValue.uuid(row, "owner"), transactionId: row["transaction_id"],
                requestedAt: Millis.date(row["requested_at"]), answeredAt: Millis.date(row["answered_at"]),
                sent: row["sent"], body: row["body"], reason: row["reason"])
        }
    }
}
