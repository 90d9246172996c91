/// `POST /v1/me/grants/{id}/claim` answers with this.
public struct ClaimResponse: Codable, Sendable, Equatable {
    /// The claimed grant.
    public var grant: GrantBody
    /// The balance after it (server wallet); in the device wallet the app adds the credits itself.
    public var balance: Int64

    /// Creates the answer.
    public init(grant: GrantBody, balance: Int64) {
        self.grant = grant
        self.balance = balance
    }
}
