import CofferCore
import CofferLedgerSQLite
import CofferStore
import Foundation
import GRDB

extension SQLiteStore {
    /// Appends an audit event.
    public func recordAudit(_ event: AuditEvent) async throws {
        try await write { db in
            try db.execute(
                sql: """
                    INSERT INTO audit_events (id, environment, actor, action, subject, before, after, at)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    event.id.uuidString, event.environment.rawValue, event.actor, event.action, event.subject,
                    event.before, event.after, Millis.from(event.at),
                ])
        }
    }

    /// Audit events of an environment, newest first; with a `subject`, only those about it.
    public func auditEvents(environment: Environment, subject: String?, limit: Int) async throws -> [AuditEvent] {
        try await read { db in
            let sql =
                subject == nil
                ? "SELECT * FROM audit_events WHERE environment = ? ORDER BY seq DESC LIMIT ?"
                : "SELECT * FROM audit_events WHERE environment = ? AND subject = ? ORDER BY seq DESC LIMIT ?"
            var arguments: StatementArguments = [environment.rawValue]
            if let subject { arguments += [subject] }
            arguments += [max(0, limit)]
            return try Row.fetchAll(db, sql: sql, arguments: arguments).map { row in
                AuditEvent(
                    id: try RowValue.uuid(row, "id"), environment: try RowValue.environment(row),
                    actor: row["actor"], action: row["action"], subject: row["subject"], before: row["before"],
                    after: row["after"], at: Millis.date(row["at"]))
            }
        }
    }
}
