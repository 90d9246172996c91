/// What setting a customer's balance did: `POST /v1/admin/users/{supportId}/balance`.
public struct BalanceChange: Sendable, Hashable, Codable {
    /// Where a balance edit went.
    public enum Via: String, Sendable, Hashable, Codable, CaseIterable {
        /// The server wallet: an adjustment entry in the ledger.
        case ledger
        /// The device wallet: an admin backup the app accepts.
        case backup
    }

    /// The user.
    public var supportId: String
    /// The balance before (the backup's value in device-wallet mode).
    public var before: Int64
    /// The balance after.
    public var after: Int64
    /// Where the edit went.
    public var via: Via
    /// The currency whose balance was set by id, when not the default.
    public var currency: String?

    /// Creates a result.
    public init(supportId: String, before: Int64, after: Int64, via: Via, currency: String? = nil) {
        self.currency = currency
        self.supportId = supportId
        self.before = before
        self.after = after
        self.via = via
    }
}
