import CofferAPI
import CofferCore
import CofferStore
import Foundation

extension SubscriptionSummary {
    /// The customer's subscription groups, from their receipts and renewal states, at `now`.
    public static func groups(receipts: [Receipt], renewals: [RenewalState], catalog: Catalog, at now: Date)
        -> [SubscriptionSummary]
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
            return SubscriptionSummary(
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
