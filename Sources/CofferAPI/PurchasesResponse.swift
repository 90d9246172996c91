/// `GET /v1/me/purchases` answers with this: every purchase the server holds for the customer, from any of
/// its devices, oldest first.
public struct PurchasesResponse: Codable, Sendable, Equatable {
    /// The purchases.
    public var purchases: [PurchaseRecord]

    /// Creates the answer.
    public init(purchases: [PurchaseRecord]) { self.purchases = purchases }
}
