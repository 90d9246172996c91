/// What happened to one in-app purchase of a legacy receipt.
public struct ReceiptTransactionOutcome: Codable, Sendable, Equatable {
    /// Apple's transaction id.
    public var transactionId: String
    /// The product.
    public var productId: String
    /// `delivered`, `duplicate`, `revoked`, `wrong-user` (another user delivered it first) or
    /// `unknown-product` (the catalog does not sell it).
    public var outcome: String

    /// Creates the outcome.
    public init(transactionId: String, productId: String, outcome: String) {
        self.transactionId = transactionId
        self.productId = productId
        self.outcome = outcome
    }
}
