// swift-format-ignore-file: AllPublicDeclarationsHaveDocumentation

// The public methods here are the store protocols' requirements, documented there (`CofferStore/Stores`).
import CofferCore
import CofferStore
import Foundation
import Logging
import NIOSSL
import PostgresNIO

extension PostgresStore {
    public func wallet(owner: UUID, environment: AppStoreEnvironment) async throws -> Wallet {
        try await first(
            """
            SELECT w.balance, w.deficit FROM users u JOIN wallets w ON w.user_id = u.id
            WHERE u.id = \(owner.uuidString) AND u.environment = \(environment.rawValue)
            """
        ) { row in
            let (balance, deficit) = try row.decode((Int64, Int64).self)
            return Wallet(balance: balance, deficit: deficit)
        } ?? .empty
    }

    public func entries(owner: UUID, environment: AppStoreEnvironment) async throws -> [LedgerEntry] {
        try await all(
            """
            SELECT * FROM ledger_entries WHERE environment = \(environment.rawValue) AND owner = \(owner.uuidString)
            ORDER BY seq
            """, Rows.entry)
    }

    public func currencyWallets(owner: UUID, environment: AppStoreEnvironment) async throws -> [Currency: Wallet] {
        let rows = try await all(
            """
            SELECT w.credit_currency, w.balance, w.deficit FROM users u JOIN currency_wallets w ON w.user_id = u.id
            WHERE u.id = \(owner.uuidString) AND u.environment = \(environment.rawValue)
            """
        ) { row in
            let (currency, balance, deficit) = try row.decode((String, Int64, Int64).self)
            return (try Rows.currency(currency), Wallet(balance: balance, deficit: deficit))
        }
        return Dictionary(rows, uniquingKeysWith: { first, _ in first })
    }

    public func entries(owner: UUID, environment: AppStoreEnvironment, currency: Currency?) async throws
        -> [LedgerEntry]
    {
        guard let currency else { return try await entries(owner: owner, environment: environment) }
        return try await all(
            """
            SELECT * FROM currency_entries WHERE environment = \(environment.rawValue) AND owner = \(owner.uuidString)
            AND credit_currency = \(currency.rawValue)
            ORDER BY seq
            """, Rows.entry)
    }

    public func receiptCurrencies(transactionId: String, environment: AppStoreEnvironment) async throws
        -> [Currency]
    {
        try await all(
            """
            SELECT credit_currency FROM currency_receipts WHERE environment = \(environment.rawValue)
                AND transaction_id = \(transactionId)
            ORDER BY credit_currency COLLATE "C"
            """
        ) { try Rows.currency(try $0.decode(String.self)) }
    }

    public func receipt(transactionId: String, environment: AppStoreEnvironment, currency: Currency?) async throws
        -> Receipt?
    {
        guard let currency else { return try await receipt(transactionId: transactionId, environment: environment) }
        return try await first(
            """
            SELECT * FROM currency_receipts WHERE environment = \(environment.rawValue)
            AND transaction_id = \(transactionId) AND credit_currency = \(currency.rawValue)
            """, Rows.receipt)
    }

    public func entries(owner: UUID, environment: AppStoreEnvironment, kinds: Set<LedgerEntryKind>) async throws
        -> [LedgerEntry]
    {
        guard !kinds.isEmpty else { return [] }
        return try await all(
            """
            SELECT * FROM ledger_entries WHERE environment = \(environment.rawValue) AND owner = \(owner.uuidString)
            AND kind = ANY(\(kinds.map(\.rawValue).sorted()))
            ORDER BY seq
            """, Rows.entry)
    }

    public func receipt(transactionId: String, environment: AppStoreEnvironment) async throws -> Receipt? {
        try await first(
            """
            SELECT * FROM receipts WHERE environment = \(environment.rawValue) AND transaction_id = \(transactionId)
            """, Rows.receipt)
    }

    public func receipts(owner: UUID, environment: AppStoreEnvironment) async throws -> [Receipt] {
        try await all(
            """
            SELECT * FROM receipts WHERE environment = \(environment.rawValue) AND owner = \(owner.uuidString)
            ORDER BY purchase_date, transaction_id COLLATE "C"
            """, Rows.receipt)
    }

    public func receipts(owner: UUID, environment: AppStoreEnvironment, productIds: Set<String>) async throws
        -> [Receipt]
    {
        guard !productIds.isEmpty else { return [] }
        return try await prepared(
            ReceiptsOfProducts(owner: owner, productIds: productIds.sorted(), environment: environment))
    }

    public func receipts(originalTransactionId: String, environment: AppStoreEnvironment) async throws -> [Receipt] {
        try await all(
            """
            SELECT * FROM receipts WHERE environment = \(environment.rawValue)
            AND original_transaction_id = \(originalTransactionId)
            ORDER BY purchase_date, transaction_id COLLATE "C"
            """, Rows.receipt)
    }
}
