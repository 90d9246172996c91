/// The body of `POST /v1/transactions`.
public struct TransactionRequest: Codable, Sendable, Equatable {
    /// A StoreKit 2 signed transaction (`jwsRepresentation`).
    public var signedTransaction: String
    /// `true` for a purchase the app delivered before it used Coffer (StoreKit listed it finished at the SDK's first
    /// launch): recorded on the ledger without credits (``TransactionOutcome/recorded``); its entitlements count
    /// and a refund takes back the catalog's credits. Absent or `false`: delivered now.
    public var previouslyDelivered: Bool?

    /// Creates the body.
    public init(signedTransaction: String, previouslyDelivered: Bool? = nil) {
        self.signedTransaction = signedTransaction
        self.previouslyDelivered = previouslyDelivered
    }
}
