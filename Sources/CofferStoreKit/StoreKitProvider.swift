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

    /// Buys a subscription with an offer applied (``StorePurchaseOffer``), as `Product.purchase(options:)` with the
    /// offer's purchase options does; `nil` buys without one. A default refuses every offer.
    func purchase(productId: String, quantity: Int, appAccountToken: UUID?, offer: StorePurchaseOffer?)
        async throws -> StorePurchaseResult

    /// Transactions that arrive outside a purchase call (renewals, Ask to Buy approvals, refunds, purchases
    /// on other devices), as `Transaction.updates`. A new stream starts with every unfinished transaction.
    /// Transactions StoreKit could not verify come too, marked (``StoreTransaction/verificationFailure``), so the
    /// SDK can have the server judge them and finish them instead of meeting them again on every launch.
    func updates() async -> AsyncStream<StoreTransaction>

    /// Transactions not yet finished, as `Transaction.unfinished`, the unverified ones marked.
    func unfinished() async -> [StoreTransaction]

    /// Every transaction of the account StoreKit verified, as `Transaction.all`.
    func all() async -> [StoreTransaction]

    /// The latest transaction of each product the account is entitled to now, as
    /// `Transaction.currentEntitlements`; only what StoreKit verified.
    func currentEntitlements() async -> [StoreTransaction]

    /// Marks a transaction finished, as `Transaction.finish()`; it is then no longer replayed. An unverified one
    /// is finished too.
    func finish(transactionId: String) async

    /// Syncs with the App Store, as `AppStore.sync()`.
    func sync() async throws

    /// The app's signed AppTransaction (`AppTransaction.shared`, or `AppTransaction.refresh()` when `refresh`,
    /// which may ask the customer to sign in), as its `jwsRepresentation`; `nil` when the system cannot give
    /// one. The server keys the customer by its `appTransactionId`.
    func appTransaction(refresh: Bool) async -> String?

    /// The products the App Store sells the app among `ids`, with their localized names and prices and, for a
    /// subscription, its introductory offer and whether the account may still take it, as
    /// `Product.products(for:)`. Ids the App Store does not know are left out.
    func products(ids: [String]) async throws -> [StoreProduct]

    /// When each subscription's billing grace period ends, by original transaction id, for the subscriptions
    /// of these groups (App Store Connect's group ids, as ``StoreTransaction/subscriptionGroupId`` carries them)
    /// in a grace period now: the renewal info's `gracePeriodExpirationDate`, as
    /// `Product.SubscriptionInfo.status(for:)` reports it. The entitlement rules keep a subscription through it,
    /// on the device as on the server.
    func gracePeriods(groups: [String]) async -> [String: Date]

    /// Shows Apple's refund request sheet for a transaction, as `Transaction.beginRefundRequest(in:)`. Apple
    /// decides later; a granted refund arrives as a revoked transaction (and a notification to the server).
    func beginRefundRequest(transactionId: String) async throws -> RefundRequestStatus

    /// Shows the App Store's subscription management sheet, as `AppStore.showManageSubscriptions(in:)`.
    func showManageSubscriptions() async throws

    /// Shows the sheet where the customer redeems an offer code, as `AppStore.presentOfferCodeRedeemSheet(in:)`.
    /// What the code buys arrives through ``updates()``.
    func presentOfferCodeRedeemSheet() async throws
}

/// How a refund request sheet ended, as `Transaction.RefundRequestStatus`.
public enum RefundRequestStatus: String, Sendable, Equatable, Codable {
    /// The customer sent the request; Apple decides later.
    case success
    /// The customer closed the sheet without asking.
    case userCancelled
}

/// A product as the App Store presents it on the device, as StoreKit's `Product`.
public struct StoreProduct: Sendable, Equatable, Hashable, Codable {
    /// The product identifier.
    public var id: String
    /// The kind of product.
    public var type: StoreTransaction.ProductType
    /// The localized name.
    public var displayName: String
    /// The localized description.
    public var description: String
    /// The price in the storefront's currency.
    public var price: Decimal
    /// The price, localized and formatted, e.g. `$4.99`.
    public var displayPrice: String
    /// The ISO 4217 currency code of the price, e.g. `USD`.
    public var currencyCode: String
    /// For an auto-renewable subscription: its group, period and introductory offer.
    public var subscription: StoreSubscriptionInfo?

    /// Creates a product.
    public init(
        id: String, type: StoreTransaction.ProductType, displayName: String, description: String, price: Decimal,
        displayPrice: String, currencyCode: String, subscription: StoreSubscriptionInfo? = nil
    ) {
        self.id = id
        self.type = type
        self.displayName = displayName
        self.description = description
        self.price = price
        self.displayPrice = displayPrice
        self.currencyCode = currencyCode
        self.subscription = subscription
    }
}

/// A length of time a subscription or an offer lasts, as `Product.SubscriptionPeriod`.
public struct StorePeriod: Sendable, Equatable, Hashable, Codable {
    /// The units of a period, as `Product.SubscriptionPeriod.Unit`.
    public enum Unit: String, Sendable, Hashable, Codable {
        /// Days.
        case day
        /// Weeks.
        case week
        /// Months.
        case month
        /// Years.
        case year
    }

    /// How many units.
    public var value: Int
    /// The unit.
    public var unit: Unit

    /// Creates a period.
    public init(value: Int, unit: Unit) {
        self.value = value
        self.unit = unit
    }
}

/// What a subscription product says about its subscription, as `Product.SubscriptionInfo`.
public struct StoreSubscriptionInfo: Sendable, Equatable, Hashable, Codable {
    /// The subscription group.
    public var groupId: String
    /// How long one period lasts.
    public var period: StorePeriod
    /// The introductory offer, if the product has one.
    public var introductoryOffer: StoreIntroductoryOffer?
    /// Whether this account may still take an introductory offer in the group (it never has).
    public var isEligibleForIntroOffer: Bool

    /// Creates the subscription's description.
    public init(
        groupId: String, period: StorePeriod, introductoryOffer: StoreIntroductoryOffer? = nil,
        isEligibleForIntroOffer: Bool
    ) {
        self.groupId = groupId
        self.period = period
        self.introductoryOffer = introductoryOffer
        self.isEligibleForIntroOffer = isEligibleForIntroOffer
    }
}

/// An introductory offer of a subscription, as `Product.SubscriptionOffer`.
public struct StoreIntroductoryOffer: Sendable, Equatable, Hashable, Codable {
    /// How the customer pays during the offer, as `Product.SubscriptionOffer.PaymentMode`.
    public enum PaymentMode: String, Sendable, Hashable, Codable {
        /// Nothing: a free trial.
        case freeTrial
        /// A reduced price each period.
        case payAsYouGo
        /// One reduced price for the whole offer.
        case payUpFront
    }

    /// How the customer pays.
    public var paymentMode: PaymentMode
    /// The offer's price.
    public var price: Decimal
    /// The offer's price, localized.
    public var displayPrice: String
    /// One period of the offer.
    public var period: StorePeriod
    /// How many periods it lasts.
    public var periodCount: Int

    /// Creates an offer.
    public init(paymentMode: PaymentMode, price: Decimal, displayPrice: String, period: StorePeriod, periodCount: Int) {
        self.paymentMode = paymentMode
        self.price = price
        self.displayPrice = displayPrice
        self.period = period
        self.periodCount = periodCount
    }
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
    /// The share refunded in milliunits of a percent, from StoreKit's `revocationPercentage`: 1-99999 for a
    /// prorated refund, 100000 for a full one; `nil` when StoreKit does not say.
    public var revocationPercentage: Int?
    /// Whether a family member's purchase shares it.
    public var isFamilyShared: Bool
    /// Whether a higher subscription in the group replaced it.
    public var isUpgraded: Bool
    /// Whether it is a free trial (an introductory offer paid nothing: not a paid period).
    public var isTrial: Bool
    /// The app account token given at purchase.
    public var appAccountToken: UUID?
    /// For an auto-renewable subscription, its group's id in App Store Connect (digits, e.g. `21482456`; never the
    /// catalog's group name), as `Transaction.subscriptionGroupID`: what `Product.SubscriptionInfo.status(for:)`
    /// takes.
    public var subscriptionGroupId: String?
    /// The signed transaction (JWS), as `VerificationResult.jwsRepresentation`.
    public var jwsRepresentation: String
    /// Why StoreKit could not verify the transaction on the device (`VerificationResult.unverified`'s error, e.g.
    /// `invalidSignature`); `nil` when it verified. An unverified transaction is never delivered on the device's
    /// word: the SDK asks the server, and finishes it (reported) when the server refuses it too.
    public var verificationFailure: String?

    /// Whether StoreKit verified the transaction on the device.
    public var isVerified: Bool { verificationFailure == nil }

    /// Creates a transaction.
    public init(
        id: String, originalId: String, productId: String, productType: ProductType, purchaseDate: Date, quantity: Int,
        expirationDate: Date? = nil, revocationDate: Date? = nil, isFamilyShared: Bool = false,
        isUpgraded: Bool = false, isTrial: Bool = false, appAccountToken: UUID? = nil,
        subscriptionGroupId: String? = nil, jwsRepresentation: String, verificationFailure: String? = nil,
        revocationPercentage: Int? = nil
    ) {
        self.id = id
        self.originalId = originalId
        self.productId = productId
        self.productType = productType
        self.purchaseDate = purchaseDate
        self.quantity = quantity
        self.expirationDate = expirationDate
        self.revocationDate = revocationDate
        self.revocationPercentage = revocationPercentage
        self.isFamilyShared = isFamilyShared
        self.isUpgraded = isUpgraded
        self.isTrial = isTrial
        self.appAccountToken = appAccountToken
        self.subscriptionGroupId = subscriptionGroupId
        self.jwsRepresentation = jwsRepresentation
        self.verificationFailure = verificationFailure
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
    /// Grace periods' ends by original transaction id, for subscriptions in one now.
    public var gracePeriods: [String: Date]

    /// Creates the state.
    public init(
        transactions: [StoreTransaction], unfinished: [String], entitled: [String], gracePeriods: [String: Date] = [:]
    ) {
        self.transactions = transactions
        self.unfinished = unfinished
        self.entitled = entitled
        self.gracePeriods = gracePeriods
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

/// What the simulated customer does on StoreKit's sheets shown on a simulated device (`SimulatedDevice`,
/// `SimulatorStoreKit`).
public struct SimulatedSheetChoices: Sendable, Equatable {
    /// The code typed on the next offer-code sheet; `nil` closes the sheet. It is used once.
    public var offerCode: String?
    /// How the customer answers a refund request sheet.
    public var refundRequest: RefundRequestStatus = .success
    /// Whether the customer turns auto-renew off on the subscription management sheet.
    public var cancelsSubscriptions = false
    /// How many subscription management sheets were shown.
    public var manageSubscriptionsShown = 0

    /// The customer's defaults: closes the offer-code sheet, sends refund requests, keeps subscriptions.
    public init() {}
}
