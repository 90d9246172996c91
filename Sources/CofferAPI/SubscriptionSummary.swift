import CofferCore
import Foundation

/// A subscription group as support sees it on a customer's page: its state now and the dates that matter, from
/// the receipts of its auto-renewable products and Apple's renewal info.
public struct SubscriptionSummary: Sendable, Hashable, Codable {
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
    /// Paid periods on record in this group, as loyalty counts them (the core's `Entitlements.isPaidPeriod`):
    /// refunds, free trials, family-shared and upgraded-away periods left out.
    public var paidPeriods: Int
    /// The product the customer upgraded from into the current period's, when the current period began as an
    /// upgrade (Apple's `isUpgraded` on the period it replaced).
    public var upgradedFrom: String?
    /// When that upgrade happened (the current period's purchase).
    public var upgradedAt: Date?

    /// Creates the view.
    public init(
        group: String, product: String, state: State, startedAt: Date? = nil, expiresAt: Date? = nil,
        graceUntil: Date? = nil, renewsInto: String? = nil, originalTransactionId: String,
        dataEnvironment: DataEnvironment? = nil, paidPeriods: Int, upgradedFrom: String? = nil, upgradedAt: Date? = nil
    ) {
        self.group = group
        self.product = product
        self.state = state
        self.startedAt = startedAt
        self.expiresAt = expiresAt
        self.graceUntil = graceUntil
        self.renewsInto = renewsInto
        self.originalTransactionId = originalTransactionId
        self.dataEnvironment = dataEnvironment
        self.paidPeriods = paidPeriods
        self.upgradedFrom = upgradedFrom
        self.upgradedAt = upgradedAt
    }
}
