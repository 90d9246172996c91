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
        let products = catalog.unlockingProducts
        var sources = EntitlementSources(grants: grants)
        if !products.isEmpty {
            sources.receipts = try await receipts(owner: user.id, environment: user.environment, productIds: products)
            if catalog.sellsSubscriptions {
                sources.renewals = try await renewalStates(owner: user.id, environment: user.environment)
            }
        }
        return sources.state(catalog: catalog, at: now)
    }
}
