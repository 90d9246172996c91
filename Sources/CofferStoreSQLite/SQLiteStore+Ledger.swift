// swift-format-ignore-file: AllPublicDeclarationsHaveDocumentation

// The public methods here are the store protocols' requirements, documented there (`CofferStore/Stores`).
import CofferCore
import CofferLedgerSQLite
import CofferStore
import Foundation
import GRDB

extension SQLiteStore {
    public func apply(_ requests: [LedgerRequest]) async throws -> [Result<LedgerResult, LedgerError>] {
        try await write { db in
            var context = SQLiteLedgerContext(db: db, excludingMerged: true)
            let results = try requests.map { try LedgerWriter.apply($0, in: &context) }
            try Self.updateLots(db, requests, results)
            return try EntitlementSources.answer(results, for: requests) { asked in
                EntitlementSources(
                    receipts: try Self.receipts(
                        db, owner: asked.owner, environment: asked.environment, productIds: asked.products),
                    renewals: asked.renewals
                        ? try Self.renewalStates(db, owner: asked.owner, environment: asked.environment) : [],
                    grants: try Self.entitlementGrants(db, environment: asked.environment, recipient: asked.owner))
            }
        }
    }

    public func wallet(owner: UUID, environment: AppStoreEnvironment) async throws -> Wallet {
        try await readStatement { db in
            try SQLiteLedgerContext(db: db).wallet(owner: owner, environment: environment) ?? .empty
        }
    }

    public func entries(owner: UUID, environment: AppStoreEnvironment) async throws -> [LedgerEntry] {
        try await readStatement { db in
            try SQLiteLedgerContext(db: db).entries(owner: owner, environment: environment)
        }
    }

    public func currencyWallets(owner: UUID, environment: AppStoreEnvironment) async throws -> [Currency: Wallet] {
        try await readStatement { db in
            try SQLiteLedgerContext(db: db).currencyWallets(owner: owner, environment: environment)
        }
    }

    public func entries(owner: UUID, environment: AppStoreEnvironment, currency: Currency?) async throws
        -> [LedgerEntry]
    {
        try await readStatement { db in
            try SQLiteLedgerContext(db: db).entries(owner: owner, environment: environment, currency: currency)
        }
    }

    public func receiptCurrencies(transactionId: String, environment: AppStoreEnvironment) async throws
        -> [Currency]
    {
        try await readStatement { db in
            try SQLiteLedgerContext(db: db).receiptCurrencies(transactionId: transactionId, environment: environment)
        }
    }

    public func receipt(transactionId: String, environment: AppStoreEnvironment, currency: Currency?) async throws
        -> Receipt?
    {
        try await readStatement { db in
            try SQLiteLedgerContext(db: db).receipt(
                transactionId: transactionId, environment: environment, currency: currency)
        }
    }

    public func entries(owner: UUID, environment: AppStoreEnvironment, kinds: Set<LedgerEntryKind>) async throws
        -> [LedgerEntry]
    {
        guard !kinds.isEmpty else { return [] }
        let names = kinds.map(\.rawValue).sorted()
        return try await read { db in
            let marks = Array(repeating: "?", count: names.count).joined(separator: ", ")
            return try Row.fetchAll(
                db,
                cached: """
                    SELECT * FROM ledger_entries WHERE environment = ? AND owner = ? AND kind IN (\(marks))
                    ORDER BY seq
                    """,
                arguments: StatementArguments([environment.rawValue, owner.uuidString] + names)
            ).map(SQLiteLedgerContext.entry)
        }
    }

    public func receipt(transactionId: String, environment: AppStoreEnvironment) async throws -> Receipt? {
        try await readStatement { db in
            try SQLiteLedgerContext(db: db).receipt(transactionId: transactionId, environment: environment)
        }
    }

    /// Through the customer's index: without statistics SQLite would take the primary key's range over the
    /// whole environment, reading every customer's receipts (`PageQueryPlanTests`).
    public func receipts(owner: UUID, environment: AppStoreEnvironment) async throws -> [Receipt] {
        try await all(
            """
            SELECT * FROM receipts INDEXED BY receipts_by_environment_owner WHERE environment = ? AND owner = ?
            ORDER BY purchase_date, transaction_id
            """, [environment.rawValue, owner.uuidString], SQLiteLedgerContext.receipt)
    }

    public func receipts(owner: UUID, environment: AppStoreEnvironment, productIds: Set<String>) async throws
        -> [Receipt]
    {
        guard !productIds.isEmpty else { return [] }
        return try await readStatement { db in
            try Self.receipts(db, owner: owner, environment: environment, productIds: productIds)
        }
    }

    /// A customer's receipts of some products, in purchase order, read on `db`.
    static func receipts(_ db: Database, owner: UUID, environment: AppStoreEnvironment, productIds: Set<String>)
        throws -> [Receipt]
    {
        guard !productIds.isEmpty else { return [] }
        let products = productIds.sorted()
        let marks = Array(repeating: "?", count: products.count).joined(separator: ", ")
        return try Row.fetchAll(
            db,
            cached: """
                SELECT * FROM receipts INDEXED BY receipts_by_owner_product
                WHERE owner = ? AND product_id IN (\(marks)) AND environment = ?
                ORDER BY purchase_date, transaction_id
                """,
            arguments: StatementArguments([owner.uuidString] + products + [environment.rawValue])
        ).map(SQLiteLedgerContext.receipt)
    }

    public func receipts(originalTransactionId: String, environment: AppStoreEnvironment) async throws -> [Receipt] {
        try await all(
            """
            SELECT * FROM receipts INDEXED BY receipts_by_original WHERE environment = ? AND original_transaction_id = ?
            ORDER BY purchase_date, transaction_id
            """,
            [environment.rawValue, originalTransactionId], SQLiteLedgerContext.receipt)
    }
}
