import Foundation

/// Why a user holds an entitlement.
public enum EntitlementSource: Sendable, Hashable, Codable {
    /// A non-consumable or non-renewing product whose latest transaction is paid and not revoked.
    case purchase(productId: String)
    /// An active auto-renewable subscription (until `expiresDate`, or through its grace period).
    case subscription(productId: String, expiresDate: Date)
    /// The loyalty rule of a subscription group: `periods` paid periods reached.
    case loyalty(group: String, periods: Int)
    /// Support granted it for a time, until `endsAt` (never a paid period: loyalty does not count it).
    case granted(until: Date)
}

/// What a user is entitled to now, and why. Tracks each source apart, so a purchased lifetime is never
/// taken away by loyalty and a loyalty lifetime is taken away when refunds drop the count.
public struct EntitlementState: Sendable, Hashable, Codable {
    /// Each unlocked entitlement with the sources that unlock it.
    public var sources: [String: [EntitlementSource]]
    /// Paid, non-revoked subscription periods counted per subscription group.
    public var paidPeriods: [String: Int]

    /// Creates a state.
    public init(sources: [String: [EntitlementSource]] = [:], paidPeriods: [String: Int] = [:]) {
        self.sources = sources
        self.paidPeriods = paidPeriods
    }

    /// The state with the entitlements support granted for a time and not cancelled, those not ended at `now`
    /// (``EntitlementSource/granted(until:)``): they unlock, and count toward nothing else.
    public func granting(_ grants: [(entitlement: String, endsAt: Date)], at now: Date) -> EntitlementState {
        var state = self
        for grant in grants where grant.endsAt > now {
            state.sources[grant.entitlement, default: []].append(.granted(until: grant.endsAt))
        }
        return state
    }

    /// The unlocked entitlement names, sorted.
    public var names: [String] { sources.keys.sorted() }

    /// Whether the named entitlement is unlocked: the one gate every feature check goes through.
    ///
    /// - Parameter entitlement: An entitlement name from the catalog, e.g. `premium`.
    public func isUnlocked(_ entitlement: String) -> Bool { !(sources[entitlement] ?? []).isEmpty }

    /// `isPremium = hasLifetime || isSubscribed`: the catalog's `premium` entitlement.
    public var isPremium: Bool { isUnlocked("premium") }

    /// Whether an auto-renewable subscription is active now.
    public var isSubscribed: Bool {
        sources.values.contains { $0.contains { if case .subscription = $0 { true } else { false } } }
    }

    /// Whether the `lifetime` entitlement is held, bought or earned.
    public var hasLifetime: Bool { isUnlocked("lifetime") }

    /// Whether the `lifetime` entitlement was bought.
    public var hasPurchasedLifetime: Bool {
        (sources["lifetime"] ?? []).contains { if case .purchase = $0 { true } else { false } }
    }

    /// Whether the `lifetime` entitlement was earned through loyalty.
    public var hasLoyaltyLifetime: Bool {
        (sources["lifetime"] ?? []).contains { if case .loyalty = $0 { true } else { false } }
    }
}

/// The entitlement rules, as a pure function of the transaction history.
public enum Entitlements {
    /// How far after `now` a transaction may be dated and still count: its date is Apple's clock, and this
    /// machine's may trail it (an NTP correction steps it back), so a purchase made this minute is not hidden
    /// from its customer. A transaction dated later than this is a history evaluated at a past moment.
    public static let clockTolerance: TimeInterval = 3_600

    /// Computes what a user is entitled to from every transaction Apple reports for them.
    ///
    /// - Only the latest transaction of each product counts (buy, refund, buy again: entitled); one dated after
    ///   `now` counts within ``clockTolerance``.
    /// - A subscription is active until `expiresDate`, or until its grace period ends; never once revoked
    ///   or upgraded away.
    /// - Loyalty counts paid periods of a group: not revoked, not a free trial, not family-shared, not
    ///   upgraded away; not necessarily consecutive.
    ///
    /// - Parameters:
    ///   - transactions: The history; a transaction id seen twice keeps its last occurrence.
    ///   - catalog: The products and loyalty rules. Transactions of products it does not sell are ignored.
    ///   - gracePeriods: Grace period end per `originalTransactionId`, from renewal info.
    ///   - now: The current time.
    /// - Returns: The entitlements and their sources.
    public static func evaluate(
        _ transactions: [TransactionFact],
        catalog: Catalog,
        gracePeriods: [String: Date] = [:],
        at now: Date
    ) -> EntitlementState {
        var unique: [String: TransactionFact] = [:]
        for fact in transactions { unique[fact.transactionId] = fact }
        let history = unique.values.filter { $0.purchaseDate <= now.addingTimeInterval(clockTolerance) }

        var latest: [String: TransactionFact] = [:]
        for fact in history {
            if let current = latest[fact.productId],
                (current.purchaseDate, current.transactionId) > (fact.purchaseDate, fact.transactionId)
            {
                continue
            }
            latest[fact.productId] = fact
        }

        var state = EntitlementState()
        func unlock(_ names: [String], by source: EntitlementSource) {
            for name in names { state.sources[name, default: []].append(source) }
        }
        for (productId, fact) in latest.sorted(by: { $0.key < $1.key }) {
            guard let product = catalog.product(id: productId), fact.revocationDate == nil else { continue }
            switch product.kind {
            case .consumable:
                continue
            case .nonConsumable:
                unlock(product.entitlements, by: .purchase(productId: productId))
            case .nonRenewing:
                if let days = product.durationDays,
                    now >= fact.purchaseDate.addingTimeInterval(TimeInterval(days) * 86_400)
                {
                    continue
                }
                unlock(product.entitlements, by: .purchase(productId: productId))
            case .autoRenewable:
                guard !fact.isUpgraded, let expires = fact.expiresDate else { continue }
                let grace = gracePeriods[fact.originalTransactionId]
                let end = max(expires, grace ?? expires)
                if now < end { unlock(product.entitlements, by: .subscription(productId: productId, expiresDate: end)) }
            }
        }

        for rule in catalog.loyalty {
            let paid = history.filter { fact in
                guard let product = catalog.product(id: fact.productId) else { return false }
                return product.kind == .autoRenewable && product.group == rule.group && isPaidPeriod(fact)
            }.count
            state.paidPeriods[rule.group] = paid
            if paid >= rule.periods { unlock(rule.entitlements, by: .loyalty(group: rule.group, periods: paid)) }
        }
        return state
    }
}
