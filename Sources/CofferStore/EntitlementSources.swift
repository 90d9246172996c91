import CofferCore
import Foundation

/// What a customer's entitlements are computed from: the receipts of products that can unlock something, the
/// renewal states of their subscriptions (the grace periods), and support's entitlements for a time. Every engine
/// reads these, after a request or inside a ledger write (``LedgerRequest/entitlementCatalog``), and the one rule
/// below turns them into the entitlements.
public struct EntitlementSources: Sendable, Hashable {
    /// The receipts of the products that can unlock something (``Catalog/unlockingProducts``), in purchase order.
    public var receipts: [Receipt]
    /// The renewal states of the customer's subscriptions (read only when the catalog sells subscriptions).
    public var renewals: [RenewalState]
    /// Support's entitlements for a time, newest first (at most 200, as ``EntitlementGrantStore`` reads them).
    public var grants: [EntitlementGrant]

    /// Sources read from the store.
    public init(receipts: [Receipt] = [], renewals: [RenewalState] = [], grants: [EntitlementGrant] = []) {
        self.receipts = receipts
        self.renewals = renewals
        self.grants = grants
    }

    /// The entitlements these sources unlock at `now`, by the core's rules
    /// (``Entitlements/evaluate(_:catalog:gracePeriods:at:)``), with support's grants that unlock at `now`.
    public func state(catalog: Catalog, at now: Date) -> EntitlementState {
        let products = catalog.unlockingProducts
        var purchased = EntitlementState()
        if !products.isEmpty {
            var grace: [String: Date] = [:]
            if catalog.sellsSubscriptions {
                for renewal in renewals { grace[renewal.originalTransactionId] = renewal.gracePeriodExpiresDate }
            }
            let facts = receipts.map(\.transaction).filter { products.contains($0.productId) }
            purchased = Entitlements.evaluate(facts, catalog: catalog, gracePeriods: grace, at: now)
        }
        let granted = grants.filter { $0.isActive(at: now) }.map { (entitlement: $0.entitlement, endsAt: $0.until) }
        return purchased.granting(granted, at: now)
    }

    /// Fills each applied result whose request named a catalog with its user's entitlements, from the sources read
    /// once per user after the batch's writes (`read` is called once per user, in the batch's order).
    ///
    /// - Parameters:
    ///   - results: The batch's results, one per request.
    ///   - requests: The batch's requests.
    ///   - read: The sources of one user, read inside the batch's write transaction.
    /// - Returns: The results, entitlements filled.
    public static func answer(
        _ results: [Result<LedgerResult, LedgerError>], for requests: [LedgerRequest],
        read: (_ asked: Asked) throws -> EntitlementSources
    ) rethrows -> [Result<LedgerResult, LedgerError>] {
        var sources: [UUID: EntitlementSources] = [:]
        for asked in Asked.of(requests, results) { sources[asked.owner] = try read(asked) }
        return fill(results, for: requests, from: sources)
    }

    /// As ``answer(_:for:read:)``, with every user's sources already read (an engine that reads a whole batch's in
    /// one statement).
    public static func fill(
        _ results: [Result<LedgerResult, LedgerError>], for requests: [LedgerRequest],
        from sources: [UUID: EntitlementSources]
    ) -> [Result<LedgerResult, LedgerError>] {
        zip(results, requests).map { result, request in
            guard case .success(var applied) = result, let catalog = request.entitlementCatalog,
                let found = sources[request.owner]
            else { return result }
            applied.entitlements = found.state(catalog: catalog, at: request.at)
            return .success(applied)
        }
    }

    /// A user whose entitlements a batch's results carry, with what to read: the products that can unlock
    /// something in any of the catalogs named for them, and whether any of those sells subscriptions.
    public struct Asked: Sendable, Hashable {
        /// The user.
        public var owner: UUID
        /// The user's environment.
        public var environment: AppStoreEnvironment
        /// The products whose receipts count.
        public var products: Set<String>
        /// Whether renewal states count.
        public var renewals: Bool

        /// The users of a batch's applied requests that named a catalog, each once, in the batch's order.
        public static func of(_ requests: [LedgerRequest], _ results: [Result<LedgerResult, LedgerError>])
            -> [Asked]
        {
            var order: [UUID] = []
            var asked: [UUID: Asked] = [:]
            for (request, result) in zip(requests, results) {
                guard case .success = result, let catalog = request.entitlementCatalog else { continue }
                var customer =
                    asked[request.owner]
                    ?? Asked(owner: request.owner, environment: request.environment, products: [], renewals: false)
                if asked[request.owner] == nil { order.append(request.owner) }
                customer.products.formUnion(catalog.unlockingProducts)
                customer.renewals = customer.renewals || catalog.sellsSubscriptions
                asked[request.owner] = customer
            }
            return order.compactMap { asked[$0] }
        }
    }
}
