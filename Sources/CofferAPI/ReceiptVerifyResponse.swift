/// `POST /v1/receipts/verify` answers with this.
public struct ReceiptVerifyResponse: Codable, Sendable, Equatable {
    /// One outcome per in-app purchase in the receipt, in its order.
    public var transactions: [ReceiptTransactionOutcome]
    /// The balance after them.
    public var balance: Int64
    /// The entitlements after them.
    public var entitlements: [String]

    /// Creates the answer.
    public init(transactions: [ReceiptTransactionOutcome], balance: Int64, entitlements: [String]) {
        self.transactions = transactions
        self.balance = balance
        self.entitlements = entitlements
    }
}
