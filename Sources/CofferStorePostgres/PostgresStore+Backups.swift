import CofferCore
import CofferStore
import Foundation
import Logging
import NIOSSL
import PostgresNIO

extension PostgresStore {
    /// A user's backup.
    public func backup(owner: UUID, environment: Environment) async throws -> BackupRecord? {
        try await first(
            "SELECT * FROM backups WHERE owner = \(owner.uuidString) AND environment = \(environment.rawValue)",
            Rows.backup)
    }

    /// Writes a user's backup if `precondition` holds; the version goes up by one on every write.
    public func saveBackup(
        owner: UUID,
        environment: Environment,
        value: Int64,
        precondition: BackupPrecondition,
        writer: BackupWriter,
        at: Date
    ) async throws -> BackupSaveResult {
        try await write { connection in
            // The wallet row is the user's lock, as for ledger writes.
            guard
                try await Self.exists(
                    connection,
                    """
                    SELECT 1 FROM users u JOIN wallets w ON w.user_id = u.id
                    WHERE u.id = \(owner.uuidString) AND u.environment = \(environment.rawValue) FOR UPDATE OF w
                    """, logger: self.logger)
            else { throw StoreError.notFound("user \(owner)") }
            let current = try await Self.first(
                connection,
                "SELECT * FROM backups WHERE owner = \(owner.uuidString) AND environment = \(environment.rawValue)",
                logger: self.logger, Rows.backup)
            guard let record = precondition.write(over: current, value: value, writer: writer, at: at) else {
                return .conflict(current: current)
            }
            let (kind, name) = Rows.columns(record.writer)
            try await connection.query(
                """
                INSERT INTO backups (owner, environment, value, last_updated, version, writer_kind, writer_name)
                VALUES (\(owner.uuidString), \(environment.rawValue), \(value), \(Millis.from(at)), \(record.version),
                    \(kind), \(name))
                ON CONFLICT (owner) DO UPDATE SET value = excluded.value, last_updated = excluded.last_updated,
                    version = excluded.version, writer_kind = excluded.writer_kind, writer_name = excluded.writer_name
                """, logger: self.logger)
            try await connection.query(
                """
                INSERT INTO backup_history (owner, environment, value, previous_value, last_updated, version,
                    writer_kind, writer_name)
                VALUES (\(owner.uuidString), \(environment.rawValue), \(value), \(current?.value), \(Millis.from(at)),
                    \(record.version), \(kind), \(name))
                """, logger: self.logger)
            try await connection.query(
                """
                DELETE FROM backup_history WHERE owner = \(owner.uuidString) AND environment = \(environment.rawValue)
                AND seq <= (
                    SELECT seq FROM backup_history WHERE owner = \(owner.uuidString)
                    AND environment = \(environment.rawValue) ORDER BY seq DESC LIMIT 1 OFFSET \(BackupHistoryItem.kept))
                """, logger: self.logger)
            return .saved(record)
        }
    }
}
