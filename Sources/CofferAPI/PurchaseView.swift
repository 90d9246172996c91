import CofferCore
import Foundation

/// One purchase as support sees it: the product by name, what the customer paid, where it stands, and Apple's
/// reason for a refund.
public struct PurchaseView: Sendable, Hashable, Codable {
    /// Apple's transaction id.
    public var transactionId: String
    /// The product's id.
    public var productId: String
    /// The product's display name from the catalog, or its id.
    public var product: String
    /// When Apple says it was bought.
    public var purchaseDate: Date
    /// Units bought.
    public var quantity: Int
    /// What Apple's data says the customer paid, in milliunits of ``currency``, where it said.
    public var price: Int64?
    /// The price's currency.
    public var currency: String?
    /// The App Store storefront (country) it was bought in.
    public var storefront: String?
    /// The environment Apple's data came from, where it said (Xcode for Xcode's StoreKit testing).
    public var dataEnvironment: DataEnvironment?
    /// Whether it came through Family Sharing.
    public var familyShared: Bool
    /// Where it stands: pending, delivered, revoked (refunded) or restored (refund reversed).
    public var status: ReceiptStatus
    /// Credits it delivered.
    public var credits: Int64?
    /// When Apple refunded it, while the refund stands.
    public var refundedAt: Date?
    /// Apple's `revocationReason` (0 another reason, 1 an issue in the app), where Apple's data gave it.
    public var refundReason: Int?

    /// Creates the view.
    public init(
        transactionId: String, productId: String, product: String, purchaseDate: Date, quantity: Int,
        price: Int64? = nil, currency: String? = nil, storefront: String? = nil,
        dataEnvironment: DataEnvironment? = nil,
        familyShared: Bool = false, status: ReceiptStatus, credits: Int64? = nil, refundedAt: Date? = nil,
        refundReason: Int? = nil
    ) {
        self.transactionId = transactionId
        self.productId = productId
        self.product = product
        self.purchaseDate = purchaseDate
        self.quantity = quantity
        self.price = price
        self.currency = currency
        self.storefront = storefront
        self.dataEnvironment = dataEnvironment
        self.familyShared = familyShared
        self.status = status
        self.credits = credits
        self.refundedAt = refundedAt
        self.refundReason = refundReason
    }
}
