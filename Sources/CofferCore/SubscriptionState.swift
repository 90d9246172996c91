import Foundation

/// Where an auto-renewable subscription stands, decided once here for support's customer page and the admin API.
/// The dashboard counts the chains that give access in the same sense (``givesAccess``: paid up, or in Apple's
/// grace period) in each engine's query.
public enum SubscriptionState: String, Sendable, Hashable, Codable, CaseIterable {
    /// Paid up; renews when the period ends.
    case active
    /// Paid up, but set not to renew: it ends with the period.
    case expiring
    /// The renewal failed and Apple keeps access open through its grace period.
    case inGrace = "in grace"
    /// The renewal failed; Apple keeps trying to charge, without access.
    case inBillingRetry = "in billing retry"
    /// Ended.
    case expired
    /// Refunded or revoked.
    case refunded

    /// The status of a subscription's current period at `now`.
    ///
    /// - Parameters:
    ///   - revoked: Whether the period was refunded or revoked (and not reversed).
    ///   - expiresDate: When the period ends.
    ///   - autoRenews: Whether it is set to renew, from Apple's renewal info (`nil`: not known, taken as renewing).
    ///   - graceUntil: The end of Apple's grace period, from its renewal info.
    ///   - inBillingRetry: Whether Apple is retrying a failed renewal.
    ///   - now: The current time.
    public static func of(
        revoked: Bool, expiresDate: Date?, autoRenews: Bool?, graceUntil: Date?, inBillingRetry: Bool, at now: Date
    ) -> SubscriptionState {
        if revoked { return .refunded }
        if let expiresDate, expiresDate > now { return autoRenews == false ? .expiring : .active }
        if let graceUntil, graceUntil > now { return .inGrace }
        return inBillingRetry ? .inBillingRetry : .expired
    }

    /// Whether the customer has the subscription's access: paid up, or in Apple's grace period.
    public var givesAccess: Bool { self == .active || self == .expiring || self == .inGrace }
}

extension Entitlements {
    /// Whether a transaction is a paid period the loyalty rule counts: not refunded or revoked, not a free trial, not
    /// family-shared (the family organizer paid it), not upgraded away (its upgrade is the period that counts).
    ///
    /// - Parameter revoked: Whether it was revoked, when the caller knows better than the transaction (a receipt
    ///   whose refund Apple reversed); `nil` reads the transaction's revocation date.
    public static func isPaidPeriod(_ fact: TransactionFact, revoked: Bool? = nil) -> Bool {
        !(revoked ?? (fact.revocationDate != nil)) && !fact.isTrial && !fact.isFamilyShared && !fact.isUpgraded
    }
}
