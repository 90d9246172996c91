/// The body of `POST /v1/me/spend` (with an `Idempotency-Key` header).
public struct SpendRequest: Codable, Sendable, Equatable {
    /// Credits to spend.
    public var amount: Int64

    /// Creates the body.
    public init(amount: Int64) { self.amount = amount }
}
