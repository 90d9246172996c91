// swift-format-ignore-file: AllPublicDeclarationsHaveDocumentation

// The public methods here are the store protocols' requirements, documented there (`CofferStore/Stores`).
import CofferCore
import CofferStore
import Foundation
import Logging
import NIOSSL
import PostgresNIO

extension PostgresStore {
    public func backup(owner: UUID, environment: AppStoreEnvironment) async throws -> BackupRecord? {
        try await first(
            "SELECT * FROM backups WHERE owner = \(owner.uuidString) AND environment = \(environment.rawValue)",
            Rows.backup)
    }

    public func writeBackup(
        owner: UUID, environment: AppStoreEnvironment, _ decide: @escaping @Sendable (BackupRecord?) -> BackupRecord?,
        audit events: @escaping @Sendable (BackupRecord?, BackupRecord) throws -> [AuditEvent]
    ) async throws -> (current: BackupRecord?, written: BackupRecord?) {
        try await write { connection in
            // The wallet row is the user's lock, as for ledger writes.
            guard
                try await Self.exists(
                    connection,
                    """
                    SELECT 1 FROM live_users u JOIN wallets w ON w.user_id = u.id
                    WHERE u.id = \(owner.uuidString) AND u.environment = \(environment.rawValue)
                    FOR UPDATE OF w
                    """, logger: self.logger)
            else { throw StoreError.notFound("user \(owner)") }
            let current = try await Self.first(
                connection,
                "SELECT * FROM backups WHERE owner = \(owner.uuidString) AND environment = \(environment.rawValue)",
                logger: self.logger, Rows.backup)
            guard let record = decide(current) else { return (current, nil) }
            let (kind, name) = Rows.columns(record.writer)
            try await connection.query(
                """
                INSERT INTO backups (owner, environment, value, last_updated, version, writer_kind, writer_name,
                    deficit, applied, currencies)
                VALUES (\(owner.uuidString), \(environment.rawValue), \(record.value),
                    \(Millis.from(record.lastUpdated)), \(record.version), \(kind), \(name), \(record.deficit),
                    \(BackupApplied.text(record.applied)), \(BackupCurrencies.text(record.currencies)))
                ON CONFLICT (owner) DO UPDATE SET value = excluded.value, last_updated = excluded.last_updated,
                    version = excluded.version, writer_kind = excluded.writer_kind, writer_name = excluded.writer_name,
                    deficit = excluded.deficit, applied = excluded.applied, currencies = excluded.currencies
                """, logger: self.logger)
            try await connection.query(
                """
                INSERT INTO backup_history (owner, environment, value, previous_value, last_updated, version,
                    writer_kind, writer_name, currencies)
                VALUES (\(owner.uuidString), \(environment.rawValue), \(record.value), \(current?.value),
                    \(Millis.from(record.lastUpdated)), \(record.version), \(kind), \(name),
                    \(BackupCurrencies.text(record.currencies)))
                """, logger: self.logger)
            try await connection.query(
                """
                DELETE FROM backup_history WHERE owner = \(owner.uuidString) AND environment = \(environment.rawValue)
                AND seq <= (
                    SELECT seq FROM backup_history WHERE owner = \(owner.uuidString)
                    AND environment = \(environment.rawValue) ORDER BY seq DESC LIMIT 1 OFFSET \(BackupHistoryItem.kept))
                """, logger: self.logger)
            try await Self.insertAudit(connection, try events(current, record), logger: self.logger)
            return (current, record)
        }
    }

    public func setBalance(
        _ edit: BalanceEdit, audit events: @escaping @Sendable (BalanceEditResult) throws -> [AuditEvent]
    ) async throws -> BalanceEditResult {
        try await write { connection in
            let context = PostgresLedgerContext(connection: connection, logger: self.logger)
            guard
                let (wallet, _, _) = try await context.load(
                    owner: edit.owner, environment: edit.environment, transactionId: nil, key: edit.key,
                    currency: edit.currency),
                try await Self.exists(
                    connection,
                    "SELECT 1 FROM live_users WHERE id = \(edit.owner.uuidString)",
                    logger: self.logger)
            else { throw StoreError.notFound("user \(edit.owner)") }
            var result = BalanceEditResult(before: wallet, after: wallet, entry: nil)
            if let request = try edit.request(from: wallet) {
                let applied = try await LedgerWriter.apply(request, in: context).get()
                try await self.updateLots(connection, [request], [.success(applied)])
                result.after = applied.wallet
                result.entry = applied.entry
            }
            try await Self.insertAudit(connection, try events(result), logger: self.logger)
            return result
        }
    }
}
