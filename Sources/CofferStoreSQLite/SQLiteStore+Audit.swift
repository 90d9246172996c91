// swift-format-ignore-file: AllPublicDeclarationsHaveDocumentation

// The public methods here are the store protocols' requirements, documented there (`CofferStore/Stores`).
import CofferCore
import CofferLedgerSQLite
import CofferStore
import Foundation
import GRDB

extension SQLiteStore {
    public func recordAudit(_ event: AuditEvent) async throws {
        try await write { db in
            do {
                try db.execute(
                    cached: """
                        INSERT INTO audit_events (id, environment, actor, action, subject, before, after, at)
                        VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                        """,
                    arguments: [
                        event.id.uuidString, event.environment.rawValue, event.actor, event.action, event.subject,
                        event.before, event.after, Millis.from(event.at),
                    ])
            } catch let error as DatabaseError where error.resultCode == .SQLITE_CONSTRAINT {
                throw StoreError.alreadyExists("audit \(event.id)")
            }
        }
    }

    /// Writes audit entries inside a transaction that makes the change they record; one whose id is taken is
    /// written under an id of its own.
    static func insertAudit(_ db: Database, _ events: [AuditEvent]) throws {
        for event in events {
            for id in [event.id, UUID()] {
                try db.execute(
                    cached: """
                        INSERT INTO audit_events (id, environment, actor, action, subject, before, after, at)
                        VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING
                        """,
                    arguments: [
                        id.uuidString, event.environment.rawValue, event.actor, event.action, event.subject,
                        event.before, event.after, Millis.from(event.at),
                    ])
                if db.changesCount == 1 { break }
            }
        }
    }

    public func auditEvents(environment: AppStoreEnvironment, query: AuditQuery, limit: Int) async throws
        -> [AuditEvent]
    {
        try await read { db in
            var sql = "SELECT * FROM audit_events WHERE environment = ?"
            var arguments: StatementArguments = [environment.rawValue]
            if let subject = query.subject {
                sql += " AND subject = ?"
                arguments += [subject]
            }
            // Prefixes compared with substr, so no character of the text is a pattern.
            if let admin = query.admin {
                sql += " AND (actor = ? OR substr(actor, 1, length(?) + 6) = ? || ' from ')"
                arguments += [admin, admin, admin]
            }
            if let action = query.action {
                sql += " AND (action = ? OR substr(action, 1, length(?) + 1) = ? || '.')"
                arguments += [action, action, action]
            }
            sql += " ORDER BY seq DESC LIMIT ?"
            arguments += [max(0, limit)]
            return try Row.fetchAll(db, cached: sql, arguments: arguments).map { row in
                AuditEvent(
                    id: try RowValue.uuid(row, "id"), environment: try RowValue.environment(row),
                    actor: row["actor"], action: row["action"], subject: row["subject"], before: row["before"],
                    after: row["after"], at: Millis.date(row["at"]))
            }
        }
    }
}
