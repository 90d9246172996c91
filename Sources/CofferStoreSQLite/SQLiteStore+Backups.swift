// swift-format-ignore-file: AllPublicDeclarationsHaveDocumentation

// The public methods here are the store protocols' requirements, documented there (`CofferStore/Stores`).
import CofferCore
import CofferLedgerSQLite
import CofferStore
import Foundation
import GRDB

extension SQLiteStore {
    public func backup(owner: UUID, environment: AppStoreEnvironment) async throws -> BackupRecord? {
        try await read { db in try Self.backup(db, owner: owner, environment: environment) }
    }

    public func writeBackup(
        owner: UUID, environment: AppStoreEnvironment, _ decide: @escaping @Sendable (BackupRecord?) -> BackupRecord?,
        audit events: @escaping @Sendable (BackupRecord?, BackupRecord) throws -> [AuditEvent]
    ) async throws -> (current: BackupRecord?, written: BackupRecord?) {
        try await write { db in
            guard try Self.userExists(db, id: owner, environment: environment, live: true) else {
                throw StoreError.notFound("user \(owner)")
            }
            let current = try Self.backup(db, owner: owner, environment: environment)
            guard let record = decide(current) else { return (current, nil) }
            let (kind, name) = Self.columns(record.writer)
            try db.execute(
                cached: """
                    INSERT INTO backups (owner, environment, value, last_updated, version, writer_kind, writer_name,
                        deficit, applied, currencies)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    ON CONFLICT (owner) DO UPDATE SET value = excluded.value, last_updated = excluded.last_updated,
                        version = excluded.version, writer_kind = excluded.writer_kind, writer_name = excluded.writer_name,
                        deficit = excluded.deficit, applied = excluded.applied, currencies = excluded.currencies
                    """,
                arguments: [
                    owner.uuidString, environment.rawValue, record.value, Millis.from(record.lastUpdated),
                    record.version, kind, name, record.deficit, BackupApplied.text(record.applied),
                    BackupCurrencies.text(record.currencies),
                ])
            try db.execute(
                cached: """
                    INSERT INTO backup_history (owner, environment, value, previous_value, last_updated, version,
                        writer_kind, writer_name, currencies)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    owner.uuidString, environment.rawValue, record.value, current?.value,
                    Millis.from(record.lastUpdated), record.version, kind, name,
                    BackupCurrencies.text(record.currencies),
                ])
            try db.execute(
                cached: """
                    DELETE FROM backup_history WHERE owner = ? AND environment = ? AND seq <= (
                        SELECT seq FROM backup_history WHERE owner = ? AND environment = ?
                        ORDER BY seq DESC LIMIT 1 OFFSET ?)
                    """,
                arguments: [
                    owner.uuidString, environment.rawValue, owner.uuidString, environment.rawValue,
                    BackupHistoryItem.kept,
                ])
            try Self.insertAudit(db, try events(current, record))
            return (current, record)
        }
    }

    public func setBalance(
        _ edit: BalanceEdit, audit events: @escaping @Sendable (BalanceEditResult) throws -> [AuditEvent]
    ) async throws -> BalanceEditResult {
        try await write { db in
            var context = SQLiteLedgerContext(db: db, excludingMerged: true)
            guard
                let wallet = try context.wallet(
                    owner: edit.owner, environment: edit.environment, currency: edit.currency),
                try Self.userExists(db, id: edit.owner, environment: edit.environment, live: true)
            else { throw StoreError.notFound("user \(edit.owner)") }
            var result = BalanceEditResult(before: wallet, after: wallet, entry: nil)
            if let request = try edit.request(from: wallet) {
                let applied = try LedgerWriter.apply(request, in: &context).get()
                try Self.updateLots(db, [request], [.success(applied)])
                result.after = applied.wallet
                result.entry = applied.entry
            }
            try Self.insertAudit(db, try events(result))
            return result
        }
    }
}
