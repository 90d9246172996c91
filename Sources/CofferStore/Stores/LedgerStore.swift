import CofferCore
import Foundation

/// The ledger: entries, wallets and receipts, written only through ``apply(_:)``.
public protocol LedgerStore: Sendable {
    // MARK: Ledger

    /// Applies ledger requests in order, all in one durable commit (group commit). A request the ledger
    /// refuses gets its ``LedgerError`` and changes nothing; the others still apply. The result of every request
    /// not refused that names a catalog (``LedgerRequest/entitlementCatalog``) carries the user's entitlements after
    /// the batch's writes, read in the same transaction (``EntitlementSources``).
    ///
    /// - Returns: One result per request, in order.
    /// - Throws: A storage failure, in which case nothing was applied.
    func apply(_ requests: [LedgerRequest]) async throws -> [Result<LedgerResult, LedgerError>]
    /// A user's wallet of the default currency (empty for a user with no entries).
    func wallet(owner: UUID, environment: AppStoreEnvironment) async throws -> Wallet
    /// A user's wallets of the currencies other than the default (``LedgerRequest/currency``), by currency: those
    /// the ledger ever wrote for the user (a currency absent here is an empty wallet).
    func currencyWallets(owner: UUID, environment: AppStoreEnvironment) async throws -> [Currency: Wallet]
    /// A user's ledger entries of the default currency, oldest first.
    func entries(owner: UUID, environment: AppStoreEnvironment) async throws -> [LedgerEntry]
    /// A user's ledger entries of one currency (`nil`: the default), oldest first.
    func entries(owner: UUID, environment: AppStoreEnvironment, currency: Currency?) async throws -> [LedgerEntry]
    /// The currencies other than the default whose ledgers hold a receipt of a transaction: where a refund or a
    /// reversal of it must go, whatever the catalog says now.
    func receiptCurrencies(transactionId: String, environment: AppStoreEnvironment) async throws -> [Currency]
    /// The receipt of a transaction in one currency's ledger (`nil`: the default's, ``receipt(transactionId:environment:)``).
    func receipt(transactionId: String, environment: AppStoreEnvironment, currency: Currency?) async throws -> Receipt?
    /// A user's ledger entries of the default currency of some kinds, oldest first (the device wallet's mailbox reads revocations,
    /// reversals and adjustments without the user's purchases).
    func entries(owner: UUID, environment: AppStoreEnvironment, kinds: Set<LedgerEntryKind>) async throws
        -> [LedgerEntry]
    /// The receipt of a transaction.
    func receipt(transactionId: String, environment: AppStoreEnvironment) async throws -> Receipt?
    /// A user's receipts, oldest purchase first.
    func receipts(owner: UUID, environment: AppStoreEnvironment) async throws -> [Receipt]
    /// A user's receipts of the given products, oldest purchase first: what entitlements are computed
    /// from, without reading the user's consumable purchases.
    func receipts(owner: UUID, environment: AppStoreEnvironment, productIds: Set<String>) async throws -> [Receipt]
    /// A customer's lots, credits that expire (``CreditLot``), of every currency, soonest to end first: what is
    /// left of each. Every write keeps them true to the ledger in its own transaction (``CreditLots``).
    func creditLots(owner: UUID, environment: AppStoreEnvironment) async throws -> [CreditLot]
    /// Ends the lots of the environment (of one customer, when `owner` is given) whose end is at or before `now`,
    /// at most `limit` of them, in one commit: what is left of each leaves the balance by an entry of its own
    /// (`expiry:<id>`), once.
    ///
    /// - Returns: How many lots ended.
    func expireCredits(environment: AppStoreEnvironment, owner: UUID?, at now: Date, limit: Int) async throws -> Int
    /// The receipts of one subscription chain (or one non-renewing transaction), oldest purchase first.
    func receipts(originalTransactionId: String, environment: AppStoreEnvironment) async throws -> [Receipt]
}

extension LedgerStore {
    /// A customer's credits that expire, after ending those whose end has come at `now` (each by its `expiry:<id>`
    /// entry, once): what a read of the balance does first, so it never shows credits past their end. Writes only
    /// when some are due.
    ///
    /// - Returns: The lots left, soonest to end first.
    public func endingDueCredits(owner: UUID, environment: AppStoreEnvironment, at now: Date) async throws
        -> [CreditLot]
    {
        let lots = try await creditLots(owner: owner, environment: environment)
        guard !CreditLots.due(lots, at: now).isEmpty else { return lots }
        _ = try await expireCredits(environment: environment, owner: owner, at: now, limit: lots.count)
        return try await creditLots(owner: owner, environment: environment)
    }

    /// Applies one ledger request in its own commit.
    ///
    /// - Returns: The result once durable.
    /// - Throws: ``LedgerError`` when the ledger refuses it, or a storage failure.
    public func apply(_ request: LedgerRequest) async throws -> LedgerResult {
        let results = try await apply([request])
        guard let result = results.first else { throw StoreError.storage("no result for the request") }
        return try result.get()
    }
}
