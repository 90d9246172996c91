import CofferCore
import CofferStore
import Foundation

/// A subscription group as support sees it on a customer's page: its state now and the dates that matter, from
/// the receipts of its auto-renewable products and Apple's renewal info.
public struct SubscriptionView: Sendable, Hashable, Codable {
    /// Where a subscription stands: the core's ``SubscriptionState``.
    public typealias State = SubscriptionState

    /// The catalog's subscription group.
    public var group: String
    /// The product of the current period (its catalog name).
    public var product: String
    /// The state now.
    public var state: State
    /// When the chain began (its first purchase on record).
    public var startedAt: Date?
    /// When the current period ends (renews, or expires).
    public var expiresAt: Date?
    /// When the grace period ends, while in grace.
    public var graceUntil: Date?
    /// The product it renews into when that is another one (an upgrade or downgrade at renewal).
    public var renewsInto: String?
    /// Apple's `originalTransactionId` of the chain.
    public var originalTransactionId: String
    /// The environment Apple's data came from (Xcode for Xcode's StoreKit testing).
    public var dataEnvironment: DataEnvironment?
    /// Paid periods on record in this group, as loyalty counts them (``Entitlements/isPaidPeriod(_:revoked:)``):
    /// refunds, free trials, family-shared and upgraded-away periods left out.
    public var paidPeriods: Int
    /// The product the customer upgraded from into the current period's, when the current period began as an
    /// upgrade (Apple's `isUpgraded` on the period it replaced).
    public var upgradedFrom: String? = nil
    /// When that upgrade happened (the current period's purchase).
    public var upgradedAt: Date? = nil

    /// The customer's subscription groups, from their receipts and renewal states, at `now`.
    public static func groups(receipts: [Receipt], renewals: [RenewalState], catalog: Catalog, at now: Date)
        -> [SubscriptionView]
    {
        let renewalByChain = Dictionary(renewals.map { ($0.originalTransactionId, $0) }, uniquingKeysWith: { $1 })
        var byGroup: [String: [(Receipt, CatalogProduct)]] = [:]
        for receipt in receipts {
            guard let product = catalog.product(id: receipt.transaction.productId), product.kind == .autoRenewable,
                let group = product.group
            else { continue }
            byGroup[group, default: []].append((receipt, product))
        }
        return byGroup.keys.sorted().compactMap { group in
            let items = byGroup[group] ?? []
            // The period that matters: the latest-ending one not upgraded away (an upgrade's own receipt ends later).
            let current =
                items.filter { !$0.0.transaction.isUpgraded }.max { a, b in
                    (a.0.transaction.expiresDate ?? a.0.transaction.purchaseDate)
                        < (b.0.transaction.expiresDate ?? b.0.transaction.purchaseDate)
                } ?? items.max { $0.0.transaction.purchaseDate < $1.0.transaction.purchaseDate }
            guard let (receipt, product) = current else { return nil }
            let fact = receipt.transaction
            let renewal = renewalByChain[fact.originalTransactionId]
            let chain = items.filter { $0.0.transaction.originalTransactionId == fact.originalTransactionId }
            let state = State.of(
                revoked: receipt.isRevoked, expiresDate: fact.expiresDate, autoRenews: renewal?.autoRenews,
                graceUntil: renewal?.gracePeriodExpiresDate, inBillingRetry: renewal?.inBillingRetry == true, at: now)
            let grace = state == .inGrace ? renewal?.gracePeriodExpiresDate : nil
            let next = renewal?.autoRenewProductId.flatMap { $0 == fact.productId ? nil : $0 }
            // The period this one replaced by an upgrade, in the same chain: the latest upgraded-away one before it.
            let replaced = chain.filter {
                $0.0.transaction.isUpgraded && $0.0.transaction.productId != fact.productId
                    && $0.0.transaction.purchaseDate <= fact.purchaseDate
            }.max { $0.0.transaction.purchaseDate < $1.0.transaction.purchaseDate }
            return SubscriptionView(
                group: group, product: product.displayName, state: state,
                startedAt: chain.map(\.0.transaction.purchaseDate).min(), expiresAt: fact.expiresDate,
                graceUntil: grace, renewsInto: next.map { catalog.product(id: $0)?.displayName ?? $0 },
                originalTransactionId: fact.originalTransactionId, dataEnvironment: fact.dataEnvironment,
                paidPeriods: items.filter { Entitlements.isPaidPeriod($0.0.transaction, revoked: $0.0.isRevoked) }
                    .count,
                upgradedFrom: replaced?.1.displayName, upgradedAt: replaced.map { _ in fact.purchaseDate })
        }
    }

    /// The state and its dates in one sentence, times from `time`.
    public func sentence(_ time: (Date) -> String) -> String {
        let upgrade = upgradedFrom.map { " Upgraded from \($0) at \(upgradedAt.map(time) ?? "?")." } ?? ""
        return stateSentence(time) + upgrade
    }

    private func stateSentence(_ time: (Date) -> String) -> String {
        let ends = expiresAt.map(time) ?? "?"
        switch state {
        case .active:
            return "Active: renews at \(ends)" + (renewsInto.map { " into \($0)" } ?? "") + "."
        case .expiring: return "Set not to renew: access ends at \(ends)."
        case .inGrace:
            return "The renewal failed; Apple keeps access open until \(graceUntil.map(time) ?? "?") while it retries."
        case .inBillingRetry: return "The renewal failed at \(ends); Apple keeps trying to charge (no access)."
        case .expired: return "Expired at \(ends)."
        case .refunded: return "Refunded: access taken back."
        }
    }
}
