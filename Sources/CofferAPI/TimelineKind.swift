/// What happened in a user's timeline.
public enum TimelineKind: String, Sendable, Hashable, Codable, CaseIterable {
    /// A purchase delivered.
    case purchase
    /// A refund or revocation taken back.
    case refund
    /// A refund Apple reversed.
    case reversal
    /// Support created a grant.
    case grantCreated = "grant-created"
    /// Support cancelled a grant before the app claimed it.
    case grantCancelled = "grant-cancelled"
    /// The app claimed a grant.
    case grantClaimed = "grant-claimed"
    /// An admin changed the balance in the ledger.
    case adjustment
    /// The app spent credits (server wallet).
    case spend
    /// A device or admin wrote the backup.
    case backup
    /// Support merged customers.
    case merge
    /// Credits of a grant or an allowance that expired: what was left of them at their end (or the period's refund).
    case expiry
    /// A paid subscription period's allowance credited, ending with the period.
    case allowance
    /// Any other admin action about this user.
    case admin
}
