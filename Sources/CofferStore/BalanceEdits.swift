import CofferCore
import Foundation

/// Support setting a customer's balance in the server wallet (``BackupStore/setBalance(_:audit:)``): a ledger
/// adjustment of the difference from the wallet as it is inside the store's transaction, so a purchase or a spend
/// landing meanwhile is never overwritten by a difference worked out before it.
public struct BalanceEdit: Sendable, Hashable {
    /// The customer.
    public var owner: UUID
    /// Their environment.
    public var environment: AppStoreEnvironment
    /// The balance to set.
    public var balance: Int64
    /// The balance support saw when it decided the edit, checked inside the store's transaction
    /// (``SupportRules/check(expected:current:)``); `nil` sets the balance whatever it is.
    public var expected: Int64?
    /// The adjustment entry's id (its key is `adjustment:<id>`).
    public var entryId: String
    /// Why, kept with the entry.
    public var reason: String
    /// When.
    public var at: Date
    /// The currency whose balance is set, when not the default (``LedgerRequest/currency``).
    public var currency: Currency?

    /// Creates the edit.
    public init(
        owner: UUID, environment: AppStoreEnvironment, balance: Int64, expected: Int64? = nil, entryId: String,
        reason: String, at: Date, currency: Currency? = nil
    ) {
        self.currency = currency
        self.owner = owner
        self.environment = environment
        self.balance = balance
        self.expected = expected
        self.entryId = entryId
        self.reason = reason
        self.at = at
    }

    /// The adjustment's key.
    public var key: IdempotencyKey { IdempotencyKey(.adjustment, entryId) }

    /// The ledger request that takes `wallet` to the balance, `nil` when it holds it already.
    ///
    /// - Throws: ``BalanceChanged`` when `wallet` is not at the balance support saw.
    public func request(from wallet: Wallet) throws(BalanceChanged) -> LedgerRequest? {
        try SupportRules.check(expected: expected, current: wallet.balance)
        guard wallet.balance != balance else { return nil }
        return LedgerRequest(
            owner: owner, environment: environment,
            event: .adjustment(id: entryId, delta: balance - wallet.balance, reason: reason), at: at,
            currency: currency)
    }
}

/// What a balance edit did.
public struct BalanceEditResult: Sendable, Hashable {
    /// The wallet before, as the transaction read it.
    public var before: Wallet
    /// The wallet after.
    public var after: Wallet
    /// The adjustment entry, `nil` when the balance was the one asked for already.
    public var entry: LedgerEntry?

    /// Creates the result.
    public init(before: Wallet, after: Wallet, entry: LedgerEntry?) {
        self.before = before
        self.after = after
        self.entry = entry
    }
}
