/// One transaction of a Verify Purchases report.
public struct VerifyReportItem: Codable, Sendable, Equatable {
    /// Apple's transaction id: 1 to 64 printable ASCII characters.
    public var transactionId: String
    /// The product: 1 to 200 printable ASCII characters.
    public var productId: String
    /// Whether the app had finished the transaction.
    public var finished: Bool
    /// Whether StoreKit verified its signature.
    public var verified: Bool
    /// The verdict: `deliverNow`, `alreadyRecorded`, `finishOnly` or `couldNotBeVerified`.
    public var verdict: String

    /// Creates an item.
    public init(transactionId: String, productId: String, finished: Bool, verified: Bool, verdict: String) {
        self.transactionId = transactionId
        self.productId = productId
        self.finished = finished
        self.verified = verified
        self.verdict = verdict
    }
}
