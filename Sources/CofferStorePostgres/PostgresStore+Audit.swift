import CofferCore
import CofferStore
import Foundation
import Logging
import NIOSSL
import PostgresNIO

extension PostgresStore {
    /// Appends an audit event.
    public func recordAudit(_ event: AuditEvent) async throws {
        try await write { connection in
            try await connection.query(
                """
                INSERT INTO audit_events (id, environment, actor, action, subject, before, after, at)
                VALUES (\(event.id.uuidString), \(event.environment.rawValue), \(event.actor), \(event.action),
                    \(event.subject), \(event.before), \(event.after), \(Millis.from(event.at)))
                """, logger: self.logger)
        }
    }

    /// Audit events of an environment, newest first; with a `subject`, only those about it.
    public func auditEvents(environment: Environment, subject: String?, limit: Int) async throws -> [AuditEvent] {
        if let subject {
            return try await all(
                """
                SELECT * FROM audit_events WHERE environment = \(environment.rawValue) AND subject = \(subject)
                ORDER BY seq DESC LIMIT \(max(0, limit))
                """, Rows.audit)
        }
        return try await all(
            """
            SELECT * FROM audit_events WHERE environment = \(environment.rawValue) ORDER BY seq DESC
            LIMIT \(max(0, limit))
            """, Rows.audit)
    }
}
