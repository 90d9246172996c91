import CofferAppStore
import CofferCore
import CofferStoreKit
import Foundation

/// How the simulated customer answers the payment sheet.
public enum PurchaseOutcome: String, Sendable, Codable, CaseIterable {
    /// The customer pays.
    case success
    /// The customer cancels the sheet.
    case userCancelled = "cancelled"
    /// The purchase waits for a parent's approval (Ask to Buy).
    case askToBuy = "ask-to-buy"
}

/// What one simulator action did, in words and identifiers, for the CLI and for tests.
public struct SimulatorReport: Sendable, Codable, Equatable {
    /// One line per thing that happened, e.g. `purchased com.example.credits ×3: transaction 2000000001`.
    public var happened: [String] = []
    /// The transactions created or changed.
    public var transactionIds: [String] = []
    /// The notifications sent, as `TYPE` or `TYPE/SUBTYPE`.
    public var notifications: [String] = []
    /// The id of an Ask to Buy request waiting for approval.
    public var pendingId: String?
    /// The order id of each transaction in ``transactionIds`` (what the customer's emailed receipt shows, and
    /// Look Up Order ID takes), by transaction id. The HTTP controls fill it in.
    public var orderIds: [String: String] = [:]

    /// An empty report.
    public init() {}

    mutating func append(_ other: SimulatorReport) {
        happened += other.happened
        transactionIds += other.transactionIds
        notifications += other.notifications
        pendingId = other.pendingId ?? pendingId
        orderIds.merge(other.orderIds) { _, new in new }
    }
}

/// Why the simulator refused an action.
public struct SimulatorError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A stable code: `unknown-product`, `unknown-transaction`, `unknown-pending`, `invalid-state`, `invalid-offer`,
    /// `invalid-request`.
    public var code: String
    /// What is wrong.
    public var message: String

    /// Creates an error.
    public init(_ code: String, _ message: String) {
        self.code = code
        self.message = message
    }

    /// `code: message`.
    public var description: String { "\(code): \(message)" }
}

/// The simulator's settings: the app it plays the App Store for.
public struct SimulatorConfiguration: Sendable {
    /// The app's bundle id.
    public var bundleId: String
    /// The app's Apple id.
    public var appAppleId: Int64
    /// The environment its data says it comes from (Sandbox by default).
    public var environment: SignedDataEnvironment
    /// The app's version, for app transactions and notifications.
    public var bundleVersion = "1.0"
    /// Prices in milliunits of `currency` by product id; products not listed cost 990 (0.99).
    public var prices: [String: Int64] = [:]
    /// The currency prices are in.
    public var currency = "USD"
    /// The storefront, ISO 3166-1 alpha-3.
    public var storefront = "USA"
    /// Days of billing grace period after a failed renewal; 0 turns grace periods off.
    public var gracePeriodDays = 16
    /// Days Apple keeps retrying a failed renewal before the subscription expires.
    public var billingRetryDays = 60
    /// The verifyReceipt shared secret; when set, receipts with subscriptions need it.
    public var sharedSecret: String?
    /// The first transaction id handed out.
    public var firstTransactionId: Int64 = 2_000_000_000
    /// Accounts that buy in the sandbox from the production build, as App Review and TestFlight testers do:
    /// with a Production simulator, everything of theirs (transactions, renewal info, notifications, receipts,
    /// app transactions, the Server API's answers) says Sandbox.
    public var reviewers: Set<String> = []
    /// Products' display names on the device by product id; a product not listed shows its id.
    public var productNames: [String: String] = [:]
    /// Introductory offers of subscriptions by product id, as the device's `Product` shows them. A customer who
    /// never subscribed in the group gets the offer on the first period: a free trial lasts the offer's period
    /// and pays nothing; the other modes pay the offer's price for one period of the product.
    public var introductoryOffers: [String: StoreIntroductoryOffer] = [:]
    /// Offer codes the customer can redeem by code: each buys its product once per account.
    public var offerCodes: [String: String] = [:]
    /// `SKIncludeConsumableInAppPurchaseHistory`: off (as on a real device by default), finished consumables
    /// that were not refunded are missing from the device's `Transaction.all`.
    public var includeConsumableHistory = false
    /// The In-App Purchase keys the app signs offers with (the App Store Server API key's), as the App Store knows
    /// them; `nil` refuses every signed offer (promotional offers, introductory-offer eligibility).
    public var offerKeys: APITokenVerifier?
    /// Win-back offers by subscription product id, as App Store Connect lists them: an account whose subscription
    /// of the group lapsed may buy with one.
    public var winBackOffers: [String: [String]] = [:]

    /// Creates a configuration.
    public init(bundleId: String, appAppleId: Int64, environment: SignedDataEnvironment = .sandbox) {
        self.bundleId = bundleId
        self.appAppleId = appAppleId
        self.environment = environment
    }
}

/// One transaction the simulated App Store holds.
struct SimulatedTransaction: Sendable {
    var id: String
    var originalId: String
    var webOrderLineItemId: String?
    var orderId: String
    var account: String
    var product: CatalogProduct
    var purchaseDate: Date
    var originalPurchaseDate: Date
    var expiresDate: Date?
    var quantity: Int
    var appAccountToken: UUID?
    var familyShared: Bool
    var renewal: Bool
    var price: Int64
    var revocationDate: Date?
    var revocationReason: Int32?
    var revocationPercentage: Int32?
    var isUpgraded = false
    var finished = false
    /// The introductory offer this period was bought with, if any (a free trial pays nothing).
    var introductoryOffer: StoreIntroductoryOffer.PaymentMode?
    /// The offer this transaction was redeemed with, if any (a promotional or win-back offer, an offer code).
    var offer: RedeemedOffer?
    /// When this record last changed (purchase, refund, reversal), for history order.
    var modified: Date

    var isRevoked: Bool { revocationDate != nil }
}

/// An offer a subscription transaction was bought with, as its `offerType` and `offerIdentifier` say.
struct RedeemedOffer: Sendable, Equatable {
    /// Apple's kind of offer.
    var type: OfferType
    /// The offer's identifier (a promotional or win-back offer's id, or the offer code).
    var identifier: String
}

/// The state of one auto-renewable subscription (one per account and group).
struct SimulatedSubscription: Sendable {
    enum State: Int32, Sendable {
        case active = 1
        case expired = 2
        case billingRetry = 3
        case gracePeriod = 4
        case revoked = 5
    }

    var originalId: String
    var account: String
    var group: String
    var productId: String
    var autoRenewProductId: String
    var autoRenew = true
    var expiresDate: Date
    var latestTransactionId: String
    var state: State = .active
    var gracePeriodExpiresDate: Date?
    var billingRetryEnds: Date?
    var expirationIntent: Int32?
    var recentStartDate: Date
    /// A price increase announced for the next renewal, and whether the customer accepted it (or needed not to).
    var priceIncrease: (price: Int64, accepted: Bool)?
    /// What the subscription renews at once an accepted increase took effect, for the product it applies to.
    var renewalPrice: (productId: String, price: Int64)?

    /// Renewed and paid (`active`, renewing) or ended (`expired` for `intent`, not renewing): out of grace and
    /// billing retry either way.
    mutating func settle(_ state: State, intent: Int32? = nil) {
        self.state = state
        autoRenew = state == .active
        expirationIntent = intent
        gracePeriodExpiresDate = nil
        billingRetryEnds = nil
    }
}

/// One notification the simulator sent or is sending, with every delivery attempt.
struct SimulatedNotification: Sendable {
    var uuid: String
    var type: String
    var subtype: String?
    var transactionId: String?
    var signedPayload: String
    var created: Date
    var attempts: [SendAttemptItem] = []
    var delivered = false
}
