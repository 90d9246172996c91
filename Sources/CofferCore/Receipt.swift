import Foundation

/// The ledger's record of one App Store transaction: who owns it, what it delivered and whether it
/// was taken back. Transaction ids are unique per environment, so a receipt belongs to one user.
public struct Receipt: Sendable, Hashable, Codable {
    /// The user the transaction was delivered to (or first presented by).
    public var owner: UUID
    /// The latest facts known about the transaction.
    public var transaction: TransactionFact
    /// Credits the purchase delivered, or `nil` while it has not been delivered.
    public var deliveredCredits: Int64?
    /// When it was delivered (for a purchase delivered before Coffer, when Coffer recorded it).
    public var deliveredAt: Date?
    /// Whether the app delivered it before it used Coffer (``LedgerEvent/deliveredBeforeCoffer(_:credits:)``): the
    /// balance never received its credits from Coffer, but a refund takes them back.
    public var deliveredBeforeCoffer = false
    /// When Apple last revoked it (Apple's `revocationDate`), once a revocation is applied.
    public var revokedAt: Date?
    /// What the revocation took from the balance.
    public var takenFromBalance: Int64 = 0
    /// What the revocation could not take and recorded as deficit.
    public var addedToDeficit: Int64 = 0
    /// When Apple last reversed a refund of it (the reversal's `signedDate`).
    public var reversedAt: Date?

    /// Creates a receipt for a transaction nothing has been applied to yet.
    public init(owner: UUID, transaction: TransactionFact) {
        self.owner = owner
        self.transaction = transaction
    }

    /// What the refunds on record took back (from the balance and as deficit): all that was delivered, or a
    /// prorated share; 0 while not refunded.
    public var refundedCredits: Int64 { isRevoked ? takenFromBalance + addedToDeficit : 0 }

    /// Whether the transaction currently counts as refunded: Apple's latest word on it, by Apple's dates, is a
    /// revocation (refund -> reversal -> refund again is refunded, whatever order the three arrive in).
    public var isRevoked: Bool {
        guard let revokedAt else { return false }
        guard let reversedAt else { return true }
        return revokedAt > reversedAt
    }

    /// Where the transaction stands, for support screens.
    public var status: ReceiptStatus {
        if isRevoked { return .revoked }
        if deliveredCredits == nil { return .pending }
        return reversedAt == nil ? .delivered : .restored
    }
}

/// Where a receipt stands.
public enum ReceiptStatus: String, Codable, Sendable {
    /// Known but not delivered (a refund reversal arrived before the purchase, say).
    case pending
    /// Delivered and paid.
    case delivered
    /// Refunded or revoked by Apple.
    case revoked
    /// Refunded, then the refund was reversed: delivered again.
    case restored
}
