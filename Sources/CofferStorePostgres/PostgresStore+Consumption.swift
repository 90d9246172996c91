// swift-format-ignore-file: AllPublicDeclarationsHaveDocumentation

// The public methods here are the store protocols' requirements, documented there (`CofferStore/Stores`).
import CofferCore
import CofferStore
import Foundation
import PostgresNIO

extension PostgresStore {
    public func saveConsumptionConsent(_ consent: ConsumptionConsent) async throws {
        let saved = try await write { connection in
            try await Self.exists(
                connection,
                """
                INSERT INTO consumption_consents (owner, environment, consented, at)
                SELECT id, environment, \(consent.consented), \(Millis.from(consent.at))
                FROM live_users WHERE id = \(consent.owner.uuidString) AND environment = \(consent.environment.rawValue)
                ON CONFLICT (owner) DO UPDATE SET environment = excluded.environment, consented = excluded.consented,
                    at = excluded.at
                RETURNING 1
                """, logger: self.logger)
        }
        guard saved else { throw StoreError.notFound("user \(consent.owner)") }
    }

    public func consumptionConsent(owner: UUID, environment: AppStoreEnvironment) async throws -> ConsumptionConsent? {
        try await all(
            """
            SELECT owner, consented, at FROM consumption_consents
            WHERE owner = \(owner.uuidString) AND environment = \(environment.rawValue)
            """
        ) { postgresRow in
            let row = postgresRow.makeRandomAccess()
            return ConsumptionConsent(
                owner: try Rows.uuid(row, "owner"), environment: environment,
                consented: try Rows.value(row, "consented"), at: Millis.date(try Rows.value(row, "at")))
        }.first
    }

    public func recordConsumptionAnswer(_ answer: ConsumptionAnswerRecord) async throws -> Bool {
        let body = answer.body.map { String($0.prefix(ConsumptionAnswerRecord.maximumText)) }
        let reason = String(answer.reason.prefix(ConsumptionAnswerRecord.maximumText))
        return try await write { connection in
            try await Self.exists(
                connection,
                """
                INSERT INTO consumption_answers (environment, notification_uuid, owner, transaction_id, requested_at,
                    answered_at, sent, body, reason)
                SELECT \(answer.environment.rawValue), \(answer.notificationUUID), id, \(answer.transactionId),
                    \(Millis.from(answer.requestedAt)), \(Millis.from(answer.answeredAt)), \(answer.sent), \(body),
                    \(reason)
                FROM live_users WHERE id = \(answer.owner.uuidString)
                ON CONFLICT (environment, notification_uuid) DO NOTHING
                RETURNING 1
                """, logger: self.logger)
        }
    }

    public func consumptionAnswers(owner: UUID, environment: AppStoreEnvironment, limit: Int) async throws
        -> [ConsumptionAnswerRecord]
    {
        try await all(
            """
            SELECT * FROM consumption_answers WHERE owner = \(owner.uuidString) AND environment = \(environment.rawValue)
            ORDER BY requested_at DESC, notification_uuid COLLATE "C" DESC LIMIT \(max(0, limit))
            """
        ) { postgresRow in
            let row = postgresRow.makeRandomAccess()
            return ConsumptionAnswerRecord(
                notificationUUID: try Rows.value(row, "notification_uuid"), environment: environment,
                owner: try Rows.uuid(row, "owner"), transactionId: try Rows.value(row, "transaction_id"),
                requestedAt: Millis.date(try Rows.value(row, "requested_at")),
                answeredAt: Millis.date(try Rows.value(row, "answered_at")), sent: try Rows.value(row, "sent"),
                body: try Rows.value(row, "body", as: String?.self), reason: try Rows.value(row, "reason"))
        }
    }
}
