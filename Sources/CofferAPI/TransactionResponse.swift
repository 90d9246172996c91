/// `POST /v1/transactions` answers 200 with this.
public struct TransactionResponse: Codable, Sendable, Equatable {
    /// What happened.
    public var outcome: TransactionOutcome
    /// The transaction.
    public var transactionId: String
    /// Credits this transaction delivers (0 for duplicates of it, family-shared and non-consumables).
    public var credits: Int64
    /// The user's balance now.
    public var balance: Int64
    /// The user's entitlements now.
    public var entitlements: [String]

    /// Creates the answer.
    public init(
        outcome: TransactionOutcome, transactionId: String, credits: Int64, balance: Int64, entitlements: [String]
    ) {
        self.outcome = outcome
        self.transactionId = transactionId
        self.credits = credits
        self.balance = balance
        self.entitlements = entitlements
    }
}
