import CofferCore
import CofferLedgerSQLite
import CofferStore
import Foundation
import GRDB

extension SQLiteStore {
    /// A user's backup.
    public func backup(owner: UUID, environment: Environment) async throws -> BackupRecord? {
        try await read { db in try Self.backup(db, owner: owner, environment: environment) }
    }

    /// Writes a user's backup as `decide` says, kept in the backup history too, in one write transaction.
    public func writeBackup(
        owner: UUID, environment: Environment, _ decide: @escaping @Sendable (BackupRecord?) -> BackupRecord?
    ) async throws -> (current: BackupRecord?, written: BackupRecord?) {
        try await write { db in
            guard try Self.userExists(db, id: owner, environment: environment, live: true) else {
                throw StoreError.notFound("user \(owner)")
            }
            let current = try Self.backup(db, owner: owner, environment: environment)
            guard let record = decide(current) else { return (current, nil) }
            let (kind, name) = Self.columns(record.writer)
            try db.execute(
                sql: """
                    INSERT INTO backups (owner, environment, value, last_updated, version, writer_kind, writer_name,
                        deficit)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                    ON CONFLICT (owner) DO UPDATE SET value = excluded.value, last_updated = excluded.last_updated,
                        version = excluded.version, writer_kind = excluded.writer_kind, writer_name = excluded.writer_name,
                        deficit = excluded.deficit
                    """,
                arguments: [
                    owner.uuidString, environment.rawValue, record.value, Millis.from(record.lastUpdated),
                    record.version, kind, name, record.deficit,
                ])
            try db.execute(
                sql: """
                    INSERT INTO backup_history (owner, environment, value, previous_value, last_updated, version,
                        writer_kind, writer_name)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    owner.uuidString, environment.rawValue, record.value, current?.value,
                    Millis.from(record.lastUpdated), record.version, kind, name,
                ])
            try db.execute(
                sql: """
                    DELETE FROM backup_history WHERE owner = ? AND environment = ? AND seq <= (
                        SELECT seq FROM backup_history WHERE owner = ? AND environment = ?
                        ORDER BY seq DESC LIMIT 1 OFFSET ?)
                    """,
                arguments: [
                    owner.uuidString, environment.rawValue, owner.uuidString, environment.rawValue,
                    BackupHistoryItem.kept,
                ])
            return (current, record)
        }
    }
}
