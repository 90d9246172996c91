/// The body of `POST /v1/me/spend` (with an `Idempotency-Key` header).
public struct SpendRequest: Codable, Sendable, Equatable {
    /// Credits to spend.
    public var amount: Int64
    /// The currency to spend, by its catalog id (`coins`); absent, the catalog's default currency.
    public var currency: String?

    /// Creates the body.
    public init(amount: Int64, currency: String? = nil) {
        self.amount = amount
        self.currency = currency
    }
}
