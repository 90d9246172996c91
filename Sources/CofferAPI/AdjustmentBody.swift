import Foundation

/// A change to the balance the server detected and the app must apply itself (device wallet): a
/// refund or revocation Apple told the server about, its reversal, or an admin edit. Apply each `key`
/// once.
public struct AdjustmentBody: Codable, Sendable, Equatable {
    /// The idempotency key, e.g. `revocation:2000000123`, or for another currency than the default
    /// `gems:revocation:2000000123`; the app keeps the keys it applied.
    public var key: String
    /// `revocation`, `reversal` or `adjustment`.
    public var kind: String
    /// Credits to add (negative to take back).
    public var amount: Int64
    /// The transaction, for revocations and reversals.
    public var transactionId: String?
    /// The product, for revocations and reversals.
    public var productId: String?
    /// Why, for admin edits.
    public var reason: String?
    /// When the server recorded it.
    public var createdAt: Date
    /// The currency by id when not the default (listed only to an app that asks, `?currencies=1`); `amount` is of it.
    public var currency: String?

    /// Creates the body.
    public init(
        key: String, kind: String, amount: Int64, transactionId: String?, productId: String?, reason: String?,
        createdAt: Date, currency: String? = nil
    ) {
        self.currency = currency
        self.key = key
        self.kind = kind
        self.amount = amount
        self.transactionId = transactionId
        self.productId = productId
        self.reason = reason
        self.createdAt = createdAt
    }
}
