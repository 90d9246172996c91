// swift-format-ignore-file: AllPublicDeclarationsHaveDocumentation

// The public methods here are the store protocols' requirements, documented there (`CofferStore/Stores`).
import CofferCore
import CofferStore
import Foundation
import Logging
import NIOSSL
import PostgresNIO

extension PostgresStore {
    public func recordAudit(_ event: AuditEvent) async throws {
        try await write { connection in
            do {
                try await connection.query(
                    """
                    INSERT INTO audit_events (id, environment, actor, action, subject, before, after, at)
                    VALUES (\(event.id.uuidString), \(event.environment.rawValue), \(event.actor), \(event.action),
                        \(event.subject), \(event.before), \(event.after), \(Millis.from(event.at)))
                    """, logger: self.logger)
            } catch let error as PSQLError where error.sqlState == "23505" {
                throw StoreError.alreadyExists("audit \(event.id)")
            }
        }
    }

    /// Writes audit entries inside a transaction that makes the change they record; one whose id is taken is
    /// written under an id of its own.
    static func insertAudit(_ connection: PostgresConnection, _ events: [AuditEvent], logger: Logger) async throws {
        for event in events {
            for id in [event.id, UUID()] {
                let written = try await exists(
                    connection,
                    """
                    INSERT INTO audit_events (id, environment, actor, action, subject, before, after, at)
                    VALUES (\(id.uuidString), \(event.environment.rawValue), \(event.actor), \(event.action),
                        \(event.subject), \(event.before), \(event.after), \(Millis.from(event.at)))
                    ON CONFLICT (id) DO NOTHING RETURNING 1
                    """, logger: logger)
                if written { break }
            }
        }
    }

    public func auditEvents(environment: AppStoreEnvironment, query: AuditQuery, limit: Int) async throws
        -> [AuditEvent]
    {
        // Prefixes compared with left(), so no character of the text is a pattern.
        try await all(
            """
            SELECT * FROM audit_events WHERE environment = \(environment.rawValue)
            AND (\(query.subject)::text IS NULL OR subject = \(query.subject))
            AND (\(query.admin)::text IS NULL OR actor = \(query.admin)
                OR left(actor, length(\(query.admin)) + 6) = \(query.admin) || ' from ')
            AND (\(query.action)::text IS NULL OR action = \(query.action)
                OR left(action, length(\(query.action)) + 1) = \(query.action) || '.')
            ORDER BY seq DESC LIMIT \(max(0, limit))
            """, Rows.audit)
    }
}
