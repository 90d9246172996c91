import CofferCore
import Foundation

/// Everything Coffer keeps, one protocol per aggregate: the customers (``UserStore``), the ledger
/// (``LedgerStore``), backups (``BackupStore``), grants (``GrantStore``), Apple's notifications
/// (``NotificationStore``), admins and the audit log (``AdminStore``), support's views across customers
/// (``SupportViewStore``), the refund defence's consents and answers (``ConsumptionStore``), support's
/// entitlements for a time (``EntitlementGrantStore``), and the webhooks' outbox (``WebhookStore``). Every record is
/// tagged with its environment, and queries never cross environments.
///
/// Each engine (in-memory, SQLite, PostgreSQL) implements them all and passes the contract suite of each. An
/// operation either completes durably or changes nothing. The protocols carry the documentation; an engine's
/// methods do not repeat it.
public protocol CofferStore: UserStore, LedgerStore, BackupStore, GrantStore, NotificationStore, AdminStore,
    ConsumptionStore, EntitlementGrantStore, WebhookStore, ReconciliationStore,
    SupportViewStore
{
    /// One cheap round trip to the database (`SELECT 1`), within its deadline: what `/readyz` asks.
    func ping() async throws
}

extension CofferStore {
    /// A user's entitlements now, by the core's rules: computed from the receipts of products that can unlock
    /// something (so the cost does not grow with consumable purchases) and the grace periods of their chains.
    public func entitlements(of user: User, catalog: Catalog, at now: Date) async throws -> [String] {
        try await entitlementState(of: user, catalog: catalog, at: now).names
    }

    /// A user's entitlements now with the paid periods counted per subscription group (what loyalty lifetimes
    /// are earned by), by the core's rules, and support's entitlements for a time that have not ended.
    public func entitlementState(of user: User, catalog: Catalog, at now: Date) async throws -> EntitlementState {
        try await entitlementState(
            of: user, catalog: catalog, at: now,
            granting: try await entitlementGrants(environment: user.environment, recipient: user.id))
    }

    /// As ``entitlementState(of:catalog:at:)``, with the customer's entitlement grants already read (those that
    /// unlock at `now` count).
    public func entitlementState(of user: User, catalog: Catalog, at now: Date, granting grants: [EntitlementGrant])
        async throws -> EntitlementState
    {
        let granted = grants.filter { $0.isActive(at: now) }.map { (entitlement: $0.entitlement, endsAt: $0.until) }
        return try await purchasedEntitlements(of: user, catalog: catalog, at: now).granting(granted, at: now)
    }

    /// What the customer's purchases unlock now, by the core's rules (without support's grants).
    private func purchasedEntitlements(of user: User, catalog: Catalog, at now: Date) async throws
        -> EntitlementState
    {
        let products = Set(catalog.products.filter { $0.kind != .consumable }.map(\.id))
        guard !products.isEmpty else { return EntitlementState() }
        let receipts = try await receipts(owner: user.id, environment: user.environment, productIds: products)
        var grace: [String: Date] = [:]
        if catalog.products.contains(where: { $0.kind == .autoRenewable }) {
            for state in try await renewalStates(owner: user.id, environment: user.environment) {
                grace[state.originalTransactionId] = state.gracePeriodExpiresDate
            }
        }
        return Entitlements.evaluate(receipts.map(\.transaction), catalog: catalog, gracePeriods: grace, at: now)
    }
}
