import CofferCore
import Foundation

/// A grant as support sees it, with its recipient's Support ID.
public struct GrantView: Sendable, Hashable, Codable {
    /// The grant's id.
    public var id: UUID
    /// The recipient's Support ID.
    public var supportId: String
    /// The credits.
    public var credits: Int64
    /// Why.
    public var reason: String
    /// Who created it.
    public var createdBy: String
    /// When.
    public var createdAt: Date
    /// When the app picked it up.
    public var claimedAt: Date?
    /// When support cancelled it.
    public var cancelledAt: Date?
    /// Who cancelled it.
    public var cancelledBy: String?
    /// Pending, claimed or cancelled.
    public var status: GrantStatus
    /// The currency of the credits by id, when not the default.
    public var currency: String?
    /// For credits that expire: how many days after the claim.
    public var expiresInDays: Int?

    /// Creates the view.
    public init(
        id: UUID, supportId: String, credits: Int64, reason: String, createdBy: String, createdAt: Date,
        claimedAt: Date? = nil, cancelledAt: Date? = nil, cancelledBy: String? = nil, status: GrantStatus
    ) {
        self.id = id
        self.supportId = supportId
        self.credits = credits
        self.reason = reason
        self.createdBy = createdBy
        self.createdAt = createdAt
        self.claimedAt = claimedAt
        self.cancelledAt = cancelledAt
        self.cancelledBy = cancelledBy
        self.status = status
    }
}
