import CofferCore
import Foundation
import GRDB

/// Dates are stored as integer milliseconds since 1970, as Apple writes them.
public enum Millis {
    /// Milliseconds since 1970, clamped into range.
    public static func from(_ date: Date) -> Int64 { Milliseconds.from(date) }
    /// The date `millis` milliseconds after 1970.
    public static func date(_ millis: Int64) -> Date { Milliseconds.date(millis) }
}

/// Typed reads of columns that must hold a valid value; a bad one is reported, never invented.
public enum RowValue {
    /// A UUID column.
    public static func uuid(_ row: Row, _ column: String) throws -> UUID {
        guard let text = row[column] as String?, let uuid = UUID(uuidString: text) else {
            throw StoreError.storage("corrupt \(column): not a UUID")
        }
        return uuid
    }

    /// The `environment` column.
    public static func environment(_ row: Row) throws -> AppStoreEnvironment {
        guard let text = row["environment"] as String?, let environment = AppStoreEnvironment(rawValue: text) else {
            throw StoreError.storage("corrupt environment column")
        }
        return environment
    }

    /// The `data_environment` column: the environment Apple's data named, `nil` where not marked (the row's
    /// own, for rows written before it was kept).
    public static func dataEnvironment(_ row: Row) throws -> AppStoreEnvironment? {
        guard let text = row["data_environment"] as String? else { return nil }
        guard let environment = AppStoreEnvironment(rawValue: text) else {
            throw StoreError.storage("corrupt data_environment column")
        }
        return environment
    }
}

/// The SQLite side of the ledger's load-decide-save sequence, used inside one write transaction, over the
/// ledger's tables (``LedgerTables``): the server's store and the SDK's device ledger both write through it.
public struct SQLiteLedgerContext: LedgerWriteContext {
    let db: Database
    /// Whether a user support merged into another (`users.merged_into`, the server's schema) counts as gone.
    let excludingMerged: Bool

    /// A context inside `db`'s current transaction (or for reads, outside one).
    ///
    /// - Parameter excludingMerged: Writes pass `true` on the server's schema: nothing lands on a user support
    ///   merged into another (its token names that one now).
    public init(db: Database, excludingMerged: Bool = false) {
        self.db = db
        self.excludingMerged = excludingMerged
    }

    /// The user's wallet, `nil` when no such user lives in `environment`.
    public func wallet(owner: UUID, environment: AppStoreEnvironment) throws -> Wallet? {
        try Row.fetchOne(
            db.cachedStatement(
                sql: """
                    SELECT w.balance, w.deficit FROM users u JOIN wallets w ON w.user_id = u.id
                    WHERE u.id = ? AND u.environment = ?
                    """ + (excludingMerged ? " AND u.merged_into IS NULL" : "")),
            arguments: [owner.uuidString, environment.rawValue]
        ).map { Wallet(balance: $0[0], deficit: $0[1]) }
    }

    /// The receipt of a transaction, any owner.
    public func receipt(transactionId: String, environment: AppStoreEnvironment) throws -> Receipt? {
        try Row.fetchOne(
            db.cachedStatement(sql: "SELECT * FROM receipts WHERE environment = ? AND transaction_id = ?"),
            arguments: [environment.rawValue, transactionId]
        ).map(Self.receipt)
    }

    /// The user's entry under a key.
    public func entry(owner: UUID, environment: AppStoreEnvironment, key: IdempotencyKey) throws -> LedgerEntry? {
        try Row.fetchOne(
            db.cachedStatement(sql: "SELECT * FROM ledger_entries WHERE environment = ? AND owner = ? AND key = ?"),
            arguments: [environment.rawValue, owner.uuidString, key.rawValue]
        ).map(Self.entry)
    }

    /// The user's entries, oldest first.
    public func entries(owner: UUID, environment: AppStoreEnvironment) throws -> [LedgerEntry] {
        try Row.fetchAll(
            db, sql: "SELECT * FROM ledger_entries WHERE environment = ? AND owner = ? ORDER BY seq",
            arguments: [environment.rawValue, owner.uuidString]
        ).map(Self.entry)
    }

    /// The user's receipts, oldest purchase first.
    public func receipts(owner: UUID, environment: AppStoreEnvironment) throws -> [Receipt] {
        try Row.fetchAll(
            db,
            sql: "SELECT * FROM receipts WHERE environment = ? AND owner = ? ORDER BY purchase_date, transaction_id",
            arguments: [environment.rawValue, owner.uuidString]
        ).map(Self.receipt)
    }

    /// Saves a decision: the wallet, the receipt if any, and the new entry.
    public func save(_ decision: LedgerDecision, owner: UUID, environment: AppStoreEnvironment) throws {
        try db.cachedStatement(sql: "UPDATE wallets SET balance = ?, deficit = ? WHERE user_id = ?")
            .execute(arguments: [decision.wallet.balance, decision.wallet.deficit, owner.uuidString])
        if let receipt = decision.receipt {
            let fact = receipt.transaction
            try db.cachedStatement(
                sql: """
                    INSERT INTO receipts (environment, transaction_id, owner, original_transaction_id, product_id, quantity,
                        purchase_date, expires_date, revocation_date, family_shared, trial, upgraded, delivered_credits,
                        delivered_at, revoked_at, taken_from_balance, added_to_deficit, reversed_at, data_environment,
                        price, currency, storefront, revocation_reason, delivered_before_coffer, signed_by_xcode)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    ON CONFLICT (environment, transaction_id) DO UPDATE SET
                        original_transaction_id = excluded.original_transaction_id, quantity = excluded.quantity,
                        purchase_date = excluded.purchase_date, expires_date = excluded.expires_date,
                        revocation_date = excluded.revocation_date, family_shared = excluded.family_shared,
                        trial = excluded.trial, upgraded = excluded.upgraded,
                        delivered_credits = excluded.delivered_credits, delivered_at = excluded.delivered_at,
                        revoked_at = excluded.revoked_at, taken_from_balance = excluded.taken_from_balance,
                        added_to_deficit = excluded.added_to_deficit, reversed_at = excluded.reversed_at,
                        signed_by_xcode = CASE WHEN excluded.data_environment IS NULL THEN signed_by_xcode
                            ELSE excluded.signed_by_xcode END,
                        data_environment = COALESCE(excluded.data_environment, data_environment),
                        price = excluded.price, currency = excluded.currency, storefront = excluded.storefront,
                        revocation_reason = excluded.revocation_reason,
                        delivered_before_coffer = excluded.delivered_before_coffer
                    """
            ).execute(arguments: [
                environment.rawValue, fact.transactionId, receipt.owner.uuidString, fact.originalTransactionId,
                fact.productId, fact.quantity, Millis.from(fact.purchaseDate), fact.expiresDate.map(Millis.from),
                fact.revocationDate.map(Millis.from), fact.isFamilyShared, fact.isTrial, fact.isUpgraded,
                receipt.deliveredCredits, receipt.deliveredAt.map(Millis.from), receipt.revokedAt.map(Millis.from),
                receipt.takenFromBalance, receipt.addedToDeficit, receipt.reversedAt.map(Millis.from),
                fact.environment?.rawValue, fact.price, fact.currency, fact.storefront, fact.revocationReason,
                receipt.deliveredBeforeCoffer, fact.signedByXcode,
            ])
        }
        if decision.appendsEntry, let entry = decision.entry {
            try db.cachedStatement(
                sql: """
                    INSERT INTO ledger_entries (environment, owner, key, kind, amount, balance_delta, deficit_delta,
                        balance_after, deficit_after, transaction_id, product_id, reason, created_at, data_environment,
                        signed_by_xcode)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """
            ).execute(arguments: [
                environment.rawValue, owner.uuidString, entry.key.rawValue, entry.key.kind.rawValue, entry.amount,
                entry.balanceDelta, entry.deficitDelta, entry.walletAfter.balance, entry.walletAfter.deficit,
                entry.transactionId, entry.productId, entry.reason, Millis.from(entry.createdAt),
                entry.dataEnvironment?.rawValue, entry.signedByXcode,
            ])
        }
    }

    /// A receipt from a `receipts` row.
    public static func receipt(_ row: Row) throws -> Receipt {
        let fact = TransactionFact(
            transactionId: row["transaction_id"],
            originalTransactionId: row["original_transaction_id"],
            productId: row["product_id"],
            quantity: row["quantity"],
            purchaseDate: Millis.date(row["purchase_date"]),
            expiresDate: (row["expires_date"] as Int64?).map(Millis.date),
            revocationDate: (row["revocation_date"] as Int64?).map(Millis.date),
            isFamilyShared: row["family_shared"],
            isTrial: row["trial"],
            isUpgraded: row["upgraded"],
            environment: try RowValue.dataEnvironment(row), price: row["price"], currency: row["currency"],
            storefront: row["storefront"], revocationReason: row["revocation_reason"],
            signedByXcode: row["signed_by_xcode"])
        var receipt = Receipt(owner: try RowValue.uuid(row, "owner"), transaction: fact)
        receipt.deliveredCredits = row["delivered_credits"]
        receipt.deliveredAt = (row["delivered_at"] as Int64?).map(Millis.date)
        receipt.revokedAt = (row["revoked_at"] as Int64?).map(Millis.date)
        receipt.takenFromBalance = row["taken_from_balance"]
        receipt.addedToDeficit = row["added_to_deficit"]
        receipt.reversedAt = (row["reversed_at"] as Int64?).map(Millis.date)
        receipt.deliveredBeforeCoffer = row["delivered_before_coffer"]
        return receipt
    }

    /// An entry from a `ledger_entries` row.
    public static func entry(_ row: Row) throws -> LedgerEntry {
        guard let key = IdempotencyKey(rawValue: row["key"]) else { throw StoreError.storage("corrupt ledger key") }
        return LedgerEntry(
            owner: try RowValue.uuid(row, "owner"), key: key, amount: row["amount"], balanceDelta: row["balance_delta"],
            deficitDelta: row["deficit_delta"],
            walletAfter: Wallet(balance: row["balance_after"], deficit: row["deficit_after"]),
            transactionId: row["transaction_id"], productId: row["product_id"], reason: row["reason"],
            createdAt: Millis.date(row["created_at"]), dataEnvironment: try RowValue.dataEnvironment(row),
            signedByXcode: row["signed_by_xcode"])
    }
}
