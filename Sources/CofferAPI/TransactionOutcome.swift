/// What posting a transaction did.
public enum TransactionOutcome: String, Codable, Sendable {
    /// Delivered now: credits added, entitlements updated.
    case delivered
    /// Delivered before; nothing changed. Finish the StoreKit transaction.
    case duplicate
    /// Apple refunded or revoked it: nothing is delivered (and anything delivered was taken back).
    case revoked
    /// Delivered by the app before it used Coffer (`previouslyDelivered`): on the ledger now, without credits.
    case recorded
}
