import Foundation

/// A support grant as the app sees it.
public struct GrantBody: Codable, Sendable, Equatable {
    /// The grant's id; claim it with `POST /v1/me/grants/{id}/claim`.
    public var id: UUID
    /// The credits granted.
    public var credits: Int64
    /// Why.
    public var reason: String
    /// When support created it.
    public var createdAt: Date
    /// When the app claimed it, `nil` while pending.
    public var claimedAt: Date?
    /// When support cancelled it (before any claim); a cancelled grant is never credited.
    public var cancelledAt: Date?
    /// The currency of the credits by id, when not the default (server wallet only).
    public var currency: String?
    /// For credits that expire: how many days after the claim they end (server wallet only).
    public var expiresInDays: Int?

    /// Creates the body.
    public init(id: UUID, credits: Int64, reason: String, createdAt: Date, claimedAt: Date?, cancelledAt: Date? = nil) {
        self.id = id
        self.credits = credits
        self.reason = reason
        self.createdAt = createdAt
        self.claimedAt = claimedAt
        self.cancelledAt = cancelledAt
    }
}
