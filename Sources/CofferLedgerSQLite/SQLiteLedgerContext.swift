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

    /// The user's wallet of a currency (`nil`: the default), `nil` when no such user lives in `environment`.
    public func wallet(owner: UUID, environment: AppStoreEnvironment, currency: Currency? = nil) throws -> Wallet? {
        let merged = excludingMerged ? " AND u.merged_into IS NULL" : ""
        guard let currency else {
            return try Row.fetchOne(
                db.cachedStatement(
                    sql: """
                        SELECT w.balance, w.deficit FROM users u JOIN wallets w ON w.user_id = u.id
                        WHERE u.id = ? AND u.environment = ?
                        """ + merged),
                arguments: [owner.uuidString, environment.rawValue]
            ).map { Wallet(balance: $0[0], deficit: $0[1]) }
        }
        // Another currency's wallet has a row once the ledger wrote it: empty before.
        return try Row.fetchOne(
            db.cachedStatement(
                sql: """
                    SELECT coalesce(w.balance, 0), coalesce(w.deficit, 0) FROM users u
                    LEFT JOIN currency_wallets w ON w.user_id = u.id AND w.credit_currency = ?
                    WHERE u.id = ? AND u.environment = ?
                    """ + merged),
            arguments: [currency.rawValue, owner.uuidString, environment.rawValue]
        ).map { Wallet(balance: $0[0], deficit: $0[1]) }
    }

    /// The user's wallets of the currencies other than the default that the ledger wrote, by currency.
    public func currencyWallets(owner: UUID, environment: AppStoreEnvironment) throws -> [Currency: Wallet] {
        var wallets: [Currency: Wallet] = [:]
        for row in try Row.fetchAll(
            db,
            sql: """
                SELECT w.credit_currency, w.balance, w.deficit FROM users u JOIN currency_wallets w ON w.user_id = u.id
                WHERE u.id = ? AND u.environment = ?
                """,
            arguments: [owner.uuidString, environment.rawValue])
        {
            wallets[try Self.currency(row)] = Wallet(balance: row["balance"], deficit: row["deficit"])
        }
        return wallets
    }

    /// The currencies other than the default whose ledgers hold a receipt of the transaction, in order.
    public func receiptCurrencies(transactionId: String, environment: AppStoreEnvironment) throws -> [Currency] {
        try Row.fetchAll(
            db.cachedStatement(
                sql: """
                    SELECT credit_currency FROM currency_receipts WHERE environment = ? AND transaction_id = ?
                    ORDER BY credit_currency
                    """),
            arguments: [environment.rawValue, transactionId]
        ).map(Self.currency)
    }

    /// The receipt of a transaction in a currency's ledger (`nil`: the default's), any owner.
    public func receipt(transactionId: String, environment: AppStoreEnvironment, currency: Currency? = nil) throws
        -> Receipt?
    {
        guard let currency else {
            return try Row.fetchOne(
                db.cachedStatement(sql: "SELECT * FROM receipts WHERE environment = ? AND transaction_id = ?"),
                arguments: [environment.rawValue, transactionId]
            ).map(Self.receipt)
        }
        return try Row.fetchOne(
            db.cachedStatement(
                sql: """
                    SELECT * FROM currency_receipts WHERE environment = ? AND transaction_id = ? AND credit_currency = ?
                    """),
            arguments: [environment.rawValue, transactionId, currency.rawValue]
        ).map(Self.receipt)
    }

    /// The user's entry under a key in a currency's ledger (`nil`: the default's).
    public func entry(owner: UUID, environment: AppStoreEnvironment, key: IdempotencyKey, currency: Currency? = nil)
        throws -> LedgerEntry?
    {
        guard let currency else {
            return try Row.fetchOne(
                db.cachedStatement(sql: "SELECT * FROM ledger_entries WHERE environment = ? AND owner = ? AND key = ?"),
                arguments: [environment.rawValue, owner.uuidString, key.rawValue]
            ).map(Self.entry)
        }
        return try Row.fetchOne(
            db.cachedStatement(
                sql: """
                    SELECT * FROM currency_entries
                    WHERE environment = ? AND owner = ? AND credit_currency = ? AND key = ?
                    """),
            arguments: [environment.rawValue, owner.uuidString, currency.rawValue, key.rawValue]
        ).map(Self.entry)
    }

    /// The user's entries of a currency (`nil`: the default), oldest first.
    public func entries(owner: UUID, environment: AppStoreEnvironment, currency: Currency? = nil) throws
        -> [LedgerEntry]
    {
        guard let currency else {
            return try Row.fetchAll(
                db, sql: "SELECT * FROM ledger_entries WHERE environment = ? AND owner = ? ORDER BY seq",
                arguments: [environment.rawValue, owner.uuidString]
            ).map(Self.entry)
        }
        return try Row.fetchAll(
            db,
            sql: """
                SELECT * FROM currency_entries WHERE environment = ? AND owner = ? AND credit_currency = ? ORDER BY seq
                """,
            arguments: [environment.rawValue, owner.uuidString, currency.rawValue]
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

    /// The receipts' columns a save writes, in the order of its values.
    private static let receiptColumns = """
        environment, transaction_id, owner, original_transaction_id, product_id, quantity,
            purchase_date, expires_date, revocation_date, family_shared, trial, upgraded, delivered_credits,
            delivered_at, revoked_at, taken_from_balance, added_to_deficit, reversed_at, data_environment,
            price, currency, storefront, revocation_reason, delivered_before_coffer, signed_by_xcode
        """

    /// What a receipt written again keeps and takes: Apple's facts and the delivery's outcome are the latest; the
    /// data's environment and the Xcode mark stay unless the write knows them.
    private static let receiptUpdate = """
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

    /// The entries' columns a save writes, in the order of its values.
    private static let entryColumns = """
        environment, owner, key, kind, amount, balance_delta, deficit_delta,
            balance_after, deficit_after, transaction_id, product_id, reason, created_at, data_environment,
            signed_by_xcode
        """

    /// Saves a decision in a currency's ledger (`nil`: the default's): the wallet, the receipt if any, and the new
    /// entry.
    public func save(
        _ decision: LedgerDecision, owner: UUID, environment: AppStoreEnvironment, currency: Currency? = nil
    ) throws {
        // Another currency's rows are the default's columns and the currency, last.
        let extra: [(any DatabaseValueConvertible)?] = currency.map { [$0.rawValue] } ?? []
        if let currency {
            try db.cachedStatement(
                sql: """
                    INSERT INTO currency_wallets (user_id, credit_currency, balance, deficit) VALUES (?, ?, ?, ?)
                    ON CONFLICT (user_id, credit_currency) DO UPDATE SET
                        balance = excluded.balance, deficit = excluded.deficit
                    """
            ).execute(arguments: [
                owner.uuidString, currency.rawValue, decision.wallet.balance, decision.wallet.deficit,
            ])
        } else {
            try db.cachedStatement(sql: "UPDATE wallets SET balance = ?, deficit = ? WHERE user_id = ?")
                .execute(arguments: [decision.wallet.balance, decision.wallet.deficit, owner.uuidString])
        }
        if let receipt = decision.receipt {
            let fact = receipt.transaction
            let sql =
                currency == nil
                ? """
                INSERT INTO receipts (\(Self.receiptColumns))
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (environment, transaction_id) DO UPDATE SET \(Self.receiptUpdate)
                """
                : """
                INSERT INTO currency_receipts (\(Self.receiptColumns), credit_currency)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (environment, transaction_id, credit_currency) DO UPDATE SET \(Self.receiptUpdate)
                """
            try db.cachedStatement(sql: sql).execute(
                arguments: StatementArguments(
                    [
                        environment.rawValue, fact.transactionId, receipt.owner.uuidString, fact.originalTransactionId,
                        fact.productId, fact.quantity, Millis.from(fact.purchaseDate),
                        fact.expiresDate.map(Millis.from), fact.revocationDate.map(Millis.from), fact.isFamilyShared,
                        fact.isTrial, fact.isUpgraded, receipt.deliveredCredits, receipt.deliveredAt.map(Millis.from),
                        receipt.revokedAt.map(Millis.from), receipt.takenFromBalance, receipt.addedToDeficit,
                        receipt.reversedAt.map(Millis.from), fact.environment?.rawValue, fact.price, fact.currency,
                        fact.storefront, fact.revocationReason, receipt.deliveredBeforeCoffer, fact.signedByXcode,
                    ] + extra))
        }
        if decision.appendsEntry, let entry = decision.entry {
            let sql =
                currency == nil
                ? "INSERT INTO ledger_entries (\(Self.entryColumns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
                : """
                INSERT INTO currency_entries (\(Self.entryColumns), credit_currency)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """
            try db.cachedStatement(sql: sql).execute(
                arguments: StatementArguments(
                    [
                        environment.rawValue, owner.uuidString, entry.key.rawValue, entry.key.kind.rawValue,
                        entry.amount, entry.balanceDelta, entry.deficitDelta, entry.walletAfter.balance,
                        entry.walletAfter.deficit, entry.transactionId, entry.productId, entry.reason,
                        Millis.from(entry.createdAt), entry.dataEnvironment?.rawValue, entry.signedByXcode,
                    ] + extra))
        }
    }

    /// The `credit_currency` column of another currency's row.
    static func currency(_ row: Row) throws -> Currency {
        guard let text = row["credit_currency"] as String?, let currency = Currency(rawValue: text) else {
            throw StoreError.storage("corrupt credit_currency column")
        }
        return currency
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
        // Another currency's entries say it; the default currency's table has no such column.
        let currency = row.hasColumn("credit_currency") ? try Self.currency(row) : nil
        return LedgerEntry(
            owner: try RowValue.uuid(row, "owner"), key: key, amount: row["amount"], balanceDelta: row["balance_delta"],
            deficitDelta: row["deficit_delta"],
            walletAfter: Wallet(balance: row["balance_after"], deficit: row["deficit_after"]),
            transactionId: row["transaction_id"], productId: row["product_id"], reason: row["reason"],
            createdAt: Millis.date(row["created_at"]), dataEnvironment: try RowValue.dataEnvironment(row),
            signedByXcode: row["signed_by_xcode"], currency: currency)
    }
}
