// swift-format-ignore-file: AllPublicDeclarationsHaveDocumentation

// The public methods here are the store protocols' requirements, documented there (`CofferStore/Stores`).
import CofferCore
import Foundation

/// The in-memory store's entitlements for a time.
extension InMemoryStore {
    public func createEntitlementGrant(_ grant: EntitlementGrant, audit events: [AuditEvent]) throws {
        guard isLive(grant.recipient), state.users[grant.recipient]?.environment == grant.environment else {
            throw StoreError.notFound("user \(grant.recipient)")
        }
        guard !entitlementGrantList.contains(where: { $0.id == grant.id }) else {
            throw StoreError.alreadyExists("entitlement grant \(grant.id)")
        }
        entitlementGrantList.append(grant)
        appendAudit(events)
    }

    public func entitlementGrants(environment: AppStoreEnvironment, recipient: UUID) -> [EntitlementGrant] {
        Array(
            entitlementGrantList.filter { $0.environment == environment && $0.recipient == recipient }
                .sorted { ($0.startsAt, $0.id.uuidString) > ($1.startsAt, $1.id.uuidString) }.prefix(200))
    }

    public func cancelEntitlementGrant(
        id: UUID, environment: AppStoreEnvironment, by actor: String, at: Date,
        audit events: @Sendable (EntitlementGrant) -> [AuditEvent]
    ) throws -> EntitlementGrant {
        guard let index = entitlementGrantList.firstIndex(where: { $0.id == id && $0.environment == environment })
        else { throw StoreError.notFound("entitlement grant \(id)") }
        guard entitlementGrantList[index].cancelledAt == nil else { return entitlementGrantList[index] }
        entitlementGrantList[index].cancelledAt = at
        entitlementGrantList[index].cancelledBy = actor
        appendAudit(events(entitlementGrantList[index]))
        return entitlementGrantList[index]
    }
}
