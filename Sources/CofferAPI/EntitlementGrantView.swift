import Foundation

/// `POST /v1/admin/entitlement-grants`: support grants a customer an entitlement for a number of days.
public struct EntitlementGrantRequest: Codable, Sendable, Equatable {
    /// The customer's Support ID.
    public var supportId: String
    /// The entitlement, one the catalog's products or loyalty rules unlock, e.g. `premium`.
    public var entitlement: String
    /// For how many days, from now: 1 to 3,650.
    public var days: Int
    /// Why, e.g. "Ticket #42".
    public var reason: String

    /// Creates the request.
    public init(supportId: String, entitlement: String, days: Int, reason: String) {
        self.supportId = supportId
        self.entitlement = entitlement
        self.days = days
        self.reason = reason
    }
}

/// An entitlement support granted for a time, as the admin API, the panel and the customer's app see it.
public struct EntitlementGrantView: Codable, Sendable, Hashable {
    /// The grant's id.
    public var id: UUID
    /// The customer's Support ID.
    public var supportId: String
    /// The entitlement.
    public var entitlement: String
    /// When it began.
    public var startsAt: Date
    /// When it ends.
    public var endsAt: Date
    /// Why.
    public var reason: String
    /// Who granted it.
    public var createdBy: String
    /// When support cancelled it, if it did.
    public var cancelledAt: Date?
    /// Who cancelled it.
    public var cancelledBy: String?
    /// Whether it unlocks now.
    public var active: Bool

    /// Creates the view.
    public init(
        id: UUID, supportId: String, entitlement: String, startsAt: Date, endsAt: Date, reason: String,
        createdBy: String, cancelledAt: Date? = nil, cancelledBy: String? = nil, active: Bool
    ) {
        self.id = id
        self.supportId = supportId
        self.entitlement = entitlement
        self.startsAt = startsAt
        self.endsAt = endsAt
        self.reason = reason
        self.createdBy = createdBy
        self.cancelledAt = cancelledAt
        self.cancelledBy = cancelledBy
        self.active = active
    }
}

/// An entitlement support granted the customer that unlocks now, as `GET /v1/me` lists it for the app.
public struct GrantedEntitlement: Codable, Sendable, Hashable {
    /// The entitlement.
    public var entitlement: String
    /// When it ends (ISO 8601): the app closes the gate then, even offline.
    public var endsAt: String

    /// Creates the item.
    public init(entitlement: String, endsAt: String) {
        self.entitlement = entitlement
        self.endsAt = endsAt
    }
}
