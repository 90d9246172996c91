import Foundation

/// One purchase the server recorded for the customer (`GET /v1/me/purchases`).
public struct PurchaseRecord: Codable, Sendable, Equatable {
    /// Apple's transaction id.
    public var transactionId: String
    /// The product.
    public var productId: String
    /// `pending`, `delivered`, `revoked` (refunded) or `restored` (a refund Apple reversed).
    public var status: String
    /// The credits it delivered, once delivered.
    public var credits: Int64?
    /// When it was delivered.
    public var deliveredAt: Date?
    /// The environment Apple's data named (Sandbox for App Review on a Production server), when known.
    public var environment: String?
    /// When the customer bought it, as Apple signed it (absent from servers older than this field).
    public var purchaseDate: Date?
    /// `true` for a purchase the app delivered before it used Coffer (`previouslyDelivered`); absent otherwise.
    public var deliveredBeforeCoffer: Bool?

    /// Creates a record.
    public init(
        transactionId: String, productId: String, status: String, credits: Int64?, deliveredAt: Date?,
        environment: String?, purchaseDate: Date? = nil, deliveredBeforeCoffer: Bool? = nil
    ) {
        self.deliveredBeforeCoffer = deliveredBeforeCoffer
        self.transactionId = transactionId
        self.productId = productId
        self.status = status
        self.credits = credits
        self.deliveredAt = deliveredAt
        self.environment = environment
        self.purchaseDate = purchaseDate
    }
}
