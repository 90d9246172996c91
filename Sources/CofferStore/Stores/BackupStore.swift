import CofferCore
import Foundation

/// The device wallet's backups, and support's balance edits.
public protocol BackupStore: Sendable {
    // MARK: Backups

    /// A user's backup.
    func backup(owner: UUID, environment: AppStoreEnvironment) async throws -> BackupRecord?
    /// Writes a user's backup as `decide` says, in one transaction that holds the user: `decide` is given the
    /// record on file and answers the record to write, or `nil` to leave it; what is written is kept in the
    /// backup history too, and `audit` (given the record before and the one written) answers the audit entries
    /// that record it, written in the same transaction; an error `audit` throws refuses the write, and nothing
    /// changes (support's balance edit refuses a backup that moved since support saw it). Callers use
    /// ``saveBackup(owner:environment:value:deficit:precondition:writer:at:applied:currencies:audit:)``.
    ///
    /// - Returns: The record on file before, and the one written (`nil` when `decide` left it).
    /// - Throws: ``StoreError/notFound(_:)`` for an unknown user; what `audit` throws.
    func writeBackup(
        owner: UUID, environment: AppStoreEnvironment, _ decide: @escaping @Sendable (BackupRecord?) -> BackupRecord?,
        audit: @escaping @Sendable (BackupRecord?, BackupRecord) throws -> [AuditEvent]
    ) async throws -> (current: BackupRecord?, written: BackupRecord?)
    /// Sets a user's balance in the server wallet with a ledger adjustment of the difference from the wallet as it
    /// is inside the transaction (nothing when it holds that balance already), and writes the audit entries
    /// `audit` answers for the result in the same transaction. The edit's ``BalanceEdit/expected`` balance is
    /// checked against the wallet inside that transaction.
    ///
    /// - Throws: ``StoreError/notFound(_:)`` for an unknown or merged user; ``BalanceChanged`` when the wallet is
    ///   not at the balance support saw; ``LedgerError`` when the ledger refuses. Nothing changes when it throws.
    func setBalance(_ edit: BalanceEdit, audit: @escaping @Sendable (BalanceEditResult) throws -> [AuditEvent])
        async throws -> BalanceEditResult
}

extension BackupStore {
    /// Writes a user's backup if `precondition` holds (``BackupPrecondition/write(over:value:deficit:writer:at:applied:currencies:)``); the
    /// version goes up by one on every write.
    ///
    /// - Throws: ``StoreError/notFound(_:)`` for an unknown user.
    public func saveBackup(
        owner: UUID, environment: AppStoreEnvironment, value: Int64, deficit: Int64 = 0,
        precondition: BackupPrecondition,
        writer: BackupWriter, at: Date, applied: [String]? = nil, currencies: [Currency: Wallet]? = nil,
        audit: @escaping @Sendable (BackupRecord?, BackupRecord) throws -> [AuditEvent] = { _, _ in [] }
    ) async throws -> BackupSaveResult {
        let (current, written) = try await writeBackup(
            owner: owner, environment: environment,
            { current in
                precondition.write(
                    over: current, value: value, deficit: deficit, writer: writer, at: at, applied: applied,
                    currencies: currencies)
            },
            audit: audit)
        return written.map(BackupSaveResult.saved) ?? .conflict(current: current)
    }

    /// Writes a user's backup as `decide` says, with no audit entry.
    public func writeBackup(
        owner: UUID, environment: AppStoreEnvironment, _ decide: @escaping @Sendable (BackupRecord?) -> BackupRecord?
    ) async throws -> (current: BackupRecord?, written: BackupRecord?) {
        try await writeBackup(owner: owner, environment: environment, decide) { _, _ in [] }
    }
}
