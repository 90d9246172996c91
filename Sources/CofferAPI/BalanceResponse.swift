/// `POST /v1/me/spend` answers with this.
public struct BalanceResponse: Codable, Sendable, Equatable {
    /// The balance now.
    public var balance: Int64

    /// Creates the answer.
    public init(balance: Int64) { self.balance = balance }
}
