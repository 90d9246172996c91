/// `POST /v1/admin/users/{supportId}/balance`: the balance to set, with a reason.
public struct BalanceRequest: Sendable, Hashable, Codable {
    /// The new balance.
    public var balance: Int64
    /// Why.
    public var reason: String
    /// The balance support saw (the server wallet's balance, or the device wallet's backed-up balance): when
    /// given, the edit is refused (409 `balance-changed`) unless the balance is still this inside its
    /// transaction.
    public var expected: Int64?
    /// The currency whose balance to set by id; `nil` (or the default's id) for the default currency. In the device
    /// wallet another currency is set in the app's backup, once the app has backed up.
    public var currency: String?

    /// Creates a request.
    public init(balance: Int64, reason: String, expected: Int64? = nil, currency: String? = nil) {
        self.currency = currency
        self.balance = balance
        self.reason = reason
        self.expected = expected
    }
}
