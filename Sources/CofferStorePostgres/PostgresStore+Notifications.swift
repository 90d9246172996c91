// swift-format-ignore-file: AllPublicDeclarationsHaveDocumentation

// The public methods here are the store protocols' requirements, documented there (`CofferStore/Stores`).
import CofferCore
import CofferStore
import Foundation
import Logging
import NIOSSL
import PostgresNIO

extension PostgresStore {
    public func recordNotification(_ record: NotificationRecord) async throws -> Bool {
        try await write { connection in
            let new = try await Self.exists(
                connection,
                """
                INSERT INTO notifications (environment, uuid, type, subtype, transaction_id, original_transaction_id,
                    owner, signed_date, received_at, outcome, source)
                VALUES (\(record.environment.rawValue), \(record.uuid), \(record.type), \(record.subtype),
                    \(record.transactionId), \(record.originalTransactionId), \(record.owner?.uuidString),
                    \(Millis.from(record.signedDate)), \(Millis.from(record.receivedAt)), \(record.outcome.rawValue),
                    \(record.source))
                ON CONFLICT (environment, uuid) DO NOTHING RETURNING 1
                """, logger: self.logger)
            if new, let body = record.forwardBody {
                // Apple's notification, its body unchanged, while the environment forwards (`apple.forward.url`);
                // numbered after the customer's records before it (the triggers' lock).
                try await connection.query(
                    """
                    SELECT pg_advisory_xact_lock(hashtext('coffer-webhook:' || \(record.environment.rawValue)),
                        hashtext(COALESCE((SELECT support_id FROM users WHERE id = \(record.owner?.uuidString)), '')))
                    WHERE EXISTS (SELECT 1 FROM webhook_endpoints WHERE environment = \(record.environment.rawValue)
                        AND id LIKE 'forward-%')
                    """, logger: self.logger)
                try await connection.query(
                    """
                    INSERT INTO webhook_outbox (environment, source, kind, support_id, transaction_id, reason, detail,
                        created_at)
                    SELECT \(record.environment.rawValue), 'apple', \(record.type),
                        COALESCE((SELECT support_id FROM users WHERE id = \(record.owner?.uuidString)), ''),
                        \(record.transactionId), \(record.subtype), \(body), \(Millis.from(record.receivedAt))
                    WHERE EXISTS (SELECT 1 FROM webhook_endpoints WHERE environment = \(record.environment.rawValue)
                        AND id LIKE 'forward-%')
                    """, logger: self.logger)
            }
            return new
        }
    }

    public func notification(uuid: String, environment: AppStoreEnvironment) async throws -> NotificationRecord? {
        try await first(
            "SELECT * FROM notifications WHERE environment = \(environment.rawValue) AND uuid = \(uuid)",
            Rows.notification)
    }

    public func notifications(
        environment: AppStoreEnvironment, transactionId: String?, outcome: NotificationOutcome?, limit: Int
    ) async throws -> [NotificationRecord] {
        try await all(
            """
            SELECT * FROM notifications WHERE environment = \(environment.rawValue)
            AND (\(transactionId)::text IS NULL OR transaction_id = \(transactionId)
                OR original_transaction_id = \(transactionId))
            AND (\(outcome?.rawValue)::text IS NULL OR outcome = \(outcome?.rawValue))
            ORDER BY received_at DESC, seq DESC LIMIT \(max(0, limit))
            """, Rows.notification)
    }

    public func saveRenewalState(_ state: RenewalState) async throws -> Bool {
        try await write { connection in
            try await Self.requireUser(connection, state.owner, state.environment, logger: self.logger)
            return try await Self.exists(
                connection,
                """
                INSERT INTO renewal_states (environment, original_transaction_id, owner, auto_renew_product_id,
                    auto_renews, in_billing_retry, grace_period_expires_date, signed_date)
                VALUES (\(state.environment.rawValue), \(state.originalTransactionId), \(state.owner.uuidString),
                    \(state.autoRenewProductId), \(state.autoRenews), \(state.inBillingRetry),
                    \(state.gracePeriodExpiresDate.map(Millis.from)), \(Millis.from(state.signedDate)))
                ON CONFLICT (environment, original_transaction_id) DO UPDATE SET
                    owner = excluded.owner, auto_renew_product_id = excluded.auto_renew_product_id,
                    auto_renews = excluded.auto_renews, in_billing_retry = excluded.in_billing_retry,
                    grace_period_expires_date = excluded.grace_period_expires_date, signed_date = excluded.signed_date
                WHERE excluded.signed_date >= renewal_states.signed_date
                RETURNING 1
                """, logger: self.logger)
        }
    }

    public func renewalStates(owner: UUID, environment: AppStoreEnvironment) async throws -> [RenewalState] {
        try await prepared(RenewalStatesOf(owner: owner, environment: environment))
    }

    public func cursor(_ name: String, environment: AppStoreEnvironment) async throws -> String? {
        try await first(
            "SELECT value FROM cursors WHERE environment = \(environment.rawValue) AND name = \(name)"
        ) { try $0.decode(String.self) }
    }

    public func saveCursor(_ name: String, value: String, environment: AppStoreEnvironment) async throws {
        try await write { connection in
            try await connection.query(
                """
                INSERT INTO cursors (environment, name, value) VALUES (\(environment.rawValue), \(name), \(value))
                ON CONFLICT (environment, name) DO UPDATE SET value = excluded.value
                """, logger: self.logger)
        }
    }
}
