import CofferCore
import Foundation

/// An entitlement support granted a customer for a time: theirs from `startsAt` until `endsAt`, unless cancelled.
/// It unlocks, and counts toward nothing else (not a paid period: loyalty never counts it).
public struct EntitlementGrant: Sendable, Hashable, Codable {
    /// The grant's id.
    public var id: UUID
    /// The environment.
    public var environment: AppStoreEnvironment
    /// The customer.
    public var recipient: UUID
    /// The entitlement, e.g. `premium`.
    public var entitlement: String
    /// When it began.
    public var startsAt: Date
    /// When it ends.
    public var endsAt: Date
    /// Why, e.g. "Ticket #42".
    public var reason: String
    /// Who granted it.
    public var createdBy: String
    /// When support cancelled it, `nil` unless cancelled.
    public var cancelledAt: Date?
    /// Who cancelled it.
    public var cancelledBy: String?

    /// Creates a grant.
    public init(
        id: UUID = UUID(), environment: AppStoreEnvironment, recipient: UUID, entitlement: String, startsAt: Date,
        endsAt: Date, reason: String, createdBy: String, cancelledAt: Date? = nil, cancelledBy: String? = nil
    ) {
        self.id = id
        self.environment = environment
        self.recipient = recipient
        self.entitlement = entitlement
        self.startsAt = startsAt
        self.endsAt = endsAt
        self.reason = reason
        self.createdBy = createdBy
        self.cancelledAt = cancelledAt
        self.cancelledBy = cancelledBy
    }

    /// When it stops unlocking: its end, or its cancellation when earlier.
    public var until: Date { min(endsAt, cancelledAt ?? endsAt) }

    /// Whether it unlocks at `now`.
    public func isActive(at now: Date) -> Bool { startsAt <= now && until > now }
}

/// Support's entitlements for a time.
public protocol EntitlementGrantStore: Sendable {
    /// Adds a grant with the audit entries that record it, in one transaction. Throws ``StoreError/notFound(_:)``
    /// for a recipient that is not a live customer of the environment, ``StoreError/alreadyExists(_:)`` for an id
    /// taken.
    func createEntitlementGrant(_ grant: EntitlementGrant, audit: [AuditEvent]) async throws
    /// A customer's entitlement grants, newest first (at most 200).
    func entitlementGrants(environment: AppStoreEnvironment, recipient: UUID) async throws -> [EntitlementGrant]
    /// Cancels a grant not cancelled yet, with its audit entries, in one transaction; one cancelled before is
    /// returned unchanged (and nothing audited).
    ///
    /// - Returns: The grant as it is after.
    /// - Throws: ``StoreError/notFound(_:)``.
    func cancelEntitlementGrant(
        id: UUID, environment: AppStoreEnvironment, by actor: String, at: Date,
        audit: @escaping @Sendable (EntitlementGrant) -> [AuditEvent]
    ) async throws -> EntitlementGrant
}
