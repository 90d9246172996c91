/// What deleting a customer at their request did.
public struct DeletionView: Sendable, Hashable, Codable {
    /// The customer's Support ID (kept, anonymised, so a ticket can still name it).
    public var supportId: String
    /// The balance the closing ledger entry took to zero.
    public var closedBalance: Int64
    /// The deficit it took to zero.
    public var closedDeficit: Int64
    /// User records anonymised: the customer and the installs merged into them.
    public var users: Int
    /// Pending grants cancelled.
    public var cancelledGrants: Int

    /// Creates the view.
    public init(supportId: String, closedBalance: Int64, closedDeficit: Int64, users: Int, cancelledGrants: Int) {
        self.supportId = supportId
        self.closedBalance = closedBalance
        self.closedDeficit = closedDeficit
        self.users = users
        self.cancelledGrants = cancelledGrants
    }
}
