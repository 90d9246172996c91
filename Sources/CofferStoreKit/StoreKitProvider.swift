import Foundation

/// What the app side of Coffer needs from StoreKit, shaped like StoreKit 2 so the real StoreKit (on
/// Apple platforms) and the App Store simulator (everywhere) can stand behind it.
///
/// The SDK buys through ``purchase(productId:quantity:appAccountToken:)``, listens to ``updates()``,
/// recovers ``unfinished()`` transactions at launch, and calls ``finish(transactionId:)`` only once a
/// delivery is durable.
public protocol StoreKitProvider: Sendable {
    /// Buys a product, as `Product.purchase(options:)` does.
    ///
    /// - Parameters:
    ///   - productId: The App Store product identifier.
    ///   - quantity: How many units (consumables only).
    ///   - appAccountToken: The Coffer user's account token, carried in the signed transaction.
    func purchase(productId: String, quantity: Int, appAccountToken: UUID?) async throws -> StorePurchaseResult

    /// Transactions that arrive outside a purchase call (renewals, Ask to Buy approvals, refunds, purchases
    /// on other devices), as `Transaction.updates`. A new stream starts with every unfinished transaction.
    func updates() async -> AsyncStream<StoreTransaction>

    /// Transactions not yet finished, as `Transaction.unfinished`.
    func unfinished() async -> [StoreTransaction]

    /// Every transaction of the account, as `Transaction.all`.
    func all() async -> [StoreTransaction]

    /// The latest transaction of each product the account is entitled to now, as
    /// `Transaction.currentEntitlements`.
    func currentEntitlements() async -> [StoreTransaction]

    /// Marks a transaction finished, as `Transaction.finish()`; it is then no longer replayed.
    func finish(transactionId: String) async

    /// Syncs with the App Store, as `AppStore.sync()`.
    func sync() async throws

    /// The app's signed AppTransaction (`AppTransaction.shared`, or `AppTransaction.refresh()` when `refresh`,
    /// which may ask the customer to sign in), as its `jwsRepresentation`; `nil` when the system cannot give
    /// one. The server keys the customer by its `appTransactionId`.
    func appTransaction(refresh: Bool) async -> String?
}

/// How a purchase ended, as `Product.PurchaseResult`.
public enum StorePurchaseResult: Sendable, Equatable {
    /// The purchase went through; deliver it, then finish it.
    case success(StoreTransaction)
    /// The customer cancelled.
    case userCancelled
    /// Waiting for approval (Ask to Buy) or another action; the outcome arrives through `updates()`.
    case pending
}

/// A transaction as the device sees it: the fields the SDK reads, and the signed form it posts to the
/// server.
public struct StoreTransaction: Sendable, Equatable, Hashable, Codable {
    /// The kinds of product, as StoreKit names them.
    public enum ProductType: String, Sendable, Hashable, Codable {
        /// A consumable.
        case consumable = "Consumable"
        /// A non-consumable.
        case nonConsumable = "Non-Consumable"
        /// An auto-renewable subscription.
        case autoRenewable = "Auto-Renewable Subscription"
        /// A non-renewing subscription.
        case nonRenewing = "Non-Renewing Subscription"
    }

    /// The transaction identifier.
    public var id: String
    /// The identifier of the first transaction of this purchase (subscriptions keep it across renewals).
    public var originalId: String
    /// The product.
    public var productId: String
    /// The kind of product.
    public var productType: ProductType
    /// When it was bought.
    public var purchaseDate: Date
    /// How many units.
    public var quantity: Int
    /// When a subscription period ends.
    public var expirationDate: Date?
    /// When it was refunded or revoked, if it was.
    public var revocationDate: Date?
    /// Whether a family member's purchase shares it.
    public var isFamilyShared: Bool
    /// Whether a higher subscription in the group replaced it.
    public var isUpgraded: Bool
    /// The app account token given at purchase.
    public var appAccountToken: UUID?
    /// The signed transaction (JWS), as `VerificationResult.jwsRepresentation`.
    public var jwsRepresentation: String

    /// Creates a transaction.
    public init(
        id: String, originalId: String, productId: String, productType: ProductType, purchaseDate: Date, quantity: Int,
        expirationDate: Date? = nil, revocationDate: Date? = nil, isFamilyShared: Bool = false,
        isUpgraded: Bool = false, appAccountToken: UUID? = nil, jwsRepresentation: String
    ) {
        self.id = id
        self.originalId = originalId
        self.productId = productId
        self.productType = productType
        self.purchaseDate = purchaseDate
        self.quantity = quantity
        self.expirationDate = expirationDate
        self.revocationDate = revocationDate
        self.isFamilyShared = isFamilyShared
        self.isUpgraded = isUpgraded
        self.appAccountToken = appAccountToken
        self.jwsRepresentation = jwsRepresentation
    }
}

/// One account's device as the App Store simulator reports it over HTTP (`GET /simulator/device`), for a
/// ``StoreKitProvider`` that drives a simulator running in another process.
public struct SimulatedDeviceState: Codable, Sendable, Equatable {
    /// Every transaction of the account, oldest first (`Transaction.all`).
    public var transactions: [StoreTransaction]
    /// The ids of those not finished yet (`Transaction.unfinished`).
    public var unfinished: [String]
    /// The ids of those the account is entitled to now (`Transaction.currentEntitlements`).
    public var entitled: [String]

    /// Creates the state.
    public init(transactions: [StoreTransaction], unfinished: [String], entitled: [String]) {
        self.transactions = transactions
        self.unfinished = unfinished
        self.entitled = entitled
    }

    /// Encodes the state as the simulator sends it (dates in milliseconds, as Apple's).
    public static func encode(_ state: SimulatedDeviceState) throws -> Data {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .millisecondsSince1970
        encoder.outputFormatting = [.sortedKeys]
        return try encoder.encode(state)
    }

    /// Decodes what ``encode(_:)`` wrote.
    public static func decode(_ data: Data) throws -> SimulatedDeviceState {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .millisecondsSince1970
        return try decoder.decode(SimulatedDeviceState.self, from: data)
    }
}
