import Foundation

/// `POST /v1/admin/grants`: credits for a user, with a reason.
public struct GrantRequest: Sendable, Hashable, Codable {
    /// The recipient's Support ID.
    public var supportId: String
    /// The credits.
    public var credits: Int64
    /// Why, e.g. "Ticket #42".
    public var reason: String
    /// The grant's id, chosen by the caller (a UUID), so that asking again after a lost answer returns the same
    /// grant instead of making a second; `nil` for one the server names.
    public var id: String?
    /// The currency of the credits by id; `nil` (or the default's id) for the default currency.
    public var currency: String?
    /// For credits that expire: how many days after the app claims them (1 to 3650, server wallet); `nil`, never.
    public var expiresInDays: Int?

    /// Creates a request.
    public init(
        supportId: String, credits: Int64, reason: String, id: String? = nil, currency: String? = nil,
        expiresInDays: Int? = nil
    ) {
        self.currency = currency
        self.expiresInDays = expiresInDays
        self.supportId = supportId
        self.credits = credits
        self.reason = reason
        self.id = id
    }
}
