import Foundation

/// What Coffer needs to know about one App Store transaction, independent of how it arrived (a StoreKit 2
/// signed transaction, a notification, a legacy receipt or the simulator).
public struct TransactionFact: Sendable, Hashable, Codable {
    /// Apple's `transactionId`.
    public var transactionId: String
    /// Apple's `originalTransactionId`: the first transaction of a subscription chain.
    public var originalTransactionId: String
    /// Apple's `productId`.
    public var productId: String
    /// Units bought (Apple's `quantity`, at least 1).
    public var quantity: Int
    /// Apple's `purchaseDate`: for a subscription, the start of the period this transaction paid for.
    public var purchaseDate: Date
    /// Apple's `expiresDate`, for subscriptions.
    public var expiresDate: Date?
    /// Apple's `revocationDate`: set when Apple refunded or revoked the transaction.
    public var revocationDate: Date?
    /// Whether the user received this through Family Sharing (`inAppOwnershipType` = `FAMILY_SHARED`).
    public var isFamilyShared: Bool
    /// Whether the period was free (an introductory free trial): it unlocks access but is not a paid period.
    public var isTrial: Bool
    /// Apple's `isUpgraded`: the subscription was replaced by a higher one in its group.
    public var isUpgraded: Bool
    /// The environment Apple's data names (`environment`), or `nil` where the source did not say. On a
    /// Production server it can be Sandbox: App Review and TestFlight buy in the sandbox with the production
    /// build, and such a purchase stays marked Sandbox on its receipt and ledger entries.
    public var environment: Environment?

    /// Creates a transaction fact.
    public init(
        transactionId: String, originalTransactionId: String? = nil, productId: String, quantity: Int = 1,
        purchaseDate: Date, expiresDate: Date? = nil, revocationDate: Date? = nil, isFamilyShared: Bool = false,
        isTrial: Bool = false, isUpgraded: Bool = false, environment: Environment? = nil
    ) {
        self.transactionId = transactionId
        self.originalTransactionId = originalTransactionId ?? transactionId
        self.productId = productId
        self.quantity = quantity
        self.purchaseDate = purchaseDate
        self.expiresDate = expiresDate
        self.revocationDate = revocationDate
        self.isFamilyShared = isFamilyShared
        self.isTrial = isTrial
        self.isUpgraded = isUpgraded
        self.environment = environment
    }
}
