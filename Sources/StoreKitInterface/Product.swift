// A mirror of the StoreKit 2 declarations `CofferStoreKit2` uses, for Linux, where StoreKit does not exist: the
// adapter compiles against it and its tests drive it through a `MirrorStore`. Every declaration has the name,
// type, isolation and throwing of Apple's, checked against Apple's documentation (the page is named beside
// each; "SK/" is https://developer.apple.com/documentation/storekit/). What Apple's types have beyond what the
// adapter uses is left out; the initializers, which StoreKit does not offer, are the mirror's own, for tests.
// Apple-platform builds never see this module: the adapter imports StoreKit there.
import Foundation

/// `struct Product` (iOS 15, macOS 12; SK/product): a product the App Store sells the app.
public struct Product: Identifiable, Equatable, Hashable, Sendable {
    /// `let id: String` (SK/product/id).
    public let id: String
    /// `let type: Product.ProductType` (SK/product/type).
    public let type: Product.ProductType
    /// `let displayName: String` (SK/product/displayname).
    public let displayName: String
    /// `let description: String` (SK/product/description).
    public let description: String
    /// `let price: Decimal` (SK/product/price).
    public let price: Decimal
    /// `let displayPrice: String` (SK/product/displayprice).
    public let displayPrice: String
    /// `var priceFormatStyle: Decimal.FormatStyle.Currency` (SK/product/priceformatstyle): its `currencyCode`
    /// names the price's currency.
    public let priceFormatStyle: Decimal.FormatStyle.Currency
    /// `let subscription: Product.SubscriptionInfo?` (SK/product/subscription): `nil` unless auto-renewable.
    public let subscription: Product.SubscriptionInfo?

    /// The mirror's own: a product for a test.
    public init(
        id: String, type: Product.ProductType, displayName: String, description: String, price: Decimal,
        displayPrice: String, currencyCode: String, subscription: Product.SubscriptionInfo? = nil
    ) {
        self.id = id
        self.type = type
        self.displayName = displayName
        self.description = description
        self.price = price
        self.displayPrice = displayPrice
        self.priceFormatStyle = Decimal.FormatStyle.Currency(code: currencyCode)
        self.subscription = subscription
    }

    /// `static func products<Identifiers>(for identifiers: Identifiers) async throws -> [Product] where
    /// Identifiers : Collection, Identifiers.Element == String` (SK/product/products(for:)).
    public static func products<Identifiers>(for identifiers: Identifiers) async throws -> [Product]
    where Identifiers: Collection, Identifiers.Element == String {
        try await MirrorStoreKit.current().products(for: Array(identifiers))
    }

    /// `@MainActor func purchase(options: Set<Product.PurchaseOption> = []) async throws ->
    /// Product.PurchaseResult` (SK/product/purchase(options:)).
    @MainActor
    public func purchase(options: Set<Product.PurchaseOption> = []) async throws -> Product.PurchaseResult {
        try await MirrorStoreKit.current().purchase(self, options: options)
    }

    /// `@MainActor func purchase(confirmIn scene: some UIScene, options: Set<Product.PurchaseOption> = []) async
    /// throws -> Product.PurchaseResult` (SK/product/purchase(confirmin:options:)-6dj6y; iOS 17, visionOS 1).
    @MainActor
    public func purchase(confirmIn scene: some UIScene, options: Set<Product.PurchaseOption> = []) async throws
        -> Product.PurchaseResult
    {
        try await MirrorStoreKit.current().purchase(self, options: options, confirmIn: scene)
    }
}

extension Product {
    /// `struct ProductType` (SK/product/producttype): a raw-value struct, not an enum.
    public struct ProductType: RawRepresentable, Equatable, Hashable, Sendable {
        /// The raw value.
        public let rawValue: String
        /// Creates a type from its raw value.
        public init(rawValue: String) { self.rawValue = rawValue }
        /// `static let consumable: Product.ProductType`.
        public static let consumable = ProductType(rawValue: "Consumable")
        /// `static let nonConsumable: Product.ProductType`.
        public static let nonConsumable = ProductType(rawValue: "Non-Consumable")
        /// `static let autoRenewable: Product.ProductType`.
        public static let autoRenewable = ProductType(rawValue: "Auto-Renewable Subscription")
        /// `static let nonRenewable: Product.ProductType`.
        public static let nonRenewable = ProductType(rawValue: "Non-Renewing Subscription")
    }

    /// `struct PurchaseOption` (SK/product/purchaseoption): `Equatable, Hashable, Sendable`.
    public struct PurchaseOption: Equatable, Hashable, Sendable {
        /// What the option says (the mirror's own, so a test can read it).
        public enum Value: Equatable, Hashable, Sendable {
            /// How many units.
            case quantity(Int)
            /// The app account token.
            case appAccountToken(UUID)
            /// A promotional offer with its JWS.
            case promotionalOffer(offerID: String, compactJWS: String)
            /// A promotional offer with the earlier signature.
            case promotionalOfferV1(offerID: String, keyID: String, nonce: UUID, signature: Data, timestamp: Int)
            /// The app's signed word on introductory-offer eligibility.
            case introductoryOfferEligibility(compactJWS: String)
            /// A win-back offer.
            case winBackOffer(Product.SubscriptionOffer)
        }

        /// What the option says.
        public let value: Value

        /// `static func quantity(_ quantity: Int) -> Product.PurchaseOption`.
        public static func quantity(_ quantity: Int) -> PurchaseOption { PurchaseOption(value: .quantity(quantity)) }

        /// `static func appAccountToken(_ token: UUID) -> Product.PurchaseOption`.
        public static func appAccountToken(_ token: UUID) -> PurchaseOption {
            PurchaseOption(value: .appAccountToken(token))
        }

        /// `@backDeployed(before: iOS 26.0, macOS 26.0, tvOS 26.0, watchOS 26.0, visionOS 26.0) static func
        /// promotionalOffer(_ offerID: String, compactJWS: String) -> [Product.PurchaseOption]`
        /// (SK/product/purchaseoption/promotionaloffer(_:compactjws:); Xcode 26's SDK).
        public static func promotionalOffer(_ offerID: String, compactJWS: String) -> [PurchaseOption] {
            [PurchaseOption(value: .promotionalOffer(offerID: offerID, compactJWS: compactJWS))]
        }

        /// `static func promotionalOffer(offerID: String, keyID: String, nonce: UUID, signature: Data, timestamp:
        /// Int) -> Product.PurchaseOption` (SK/product/purchaseoption/promotionaloffer(offerid:keyid:nonce:signature:timestamp:);
        /// deprecated in iOS 26).
        public static func promotionalOffer(
            offerID: String, keyID: String, nonce: UUID, signature: Data, timestamp: Int
        )
            -> PurchaseOption
        {
            PurchaseOption(
                value: .promotionalOfferV1(
                    offerID: offerID, keyID: keyID, nonce: nonce, signature: signature, timestamp: timestamp))
        }

        /// `@backDeployed(before: iOS 18.4, macOS 15.4, tvOS 18.4, watchOS 11.4, visionOS 2.4) static func
        /// introductoryOfferEligibility(compactJWS: String) -> Product.PurchaseOption`
        /// (SK/product/purchaseoption/introductoryoffereligibility(compactjws:); Xcode 16.3's SDK).
        public static func introductoryOfferEligibility(compactJWS: String) -> PurchaseOption {
            PurchaseOption(value: .introductoryOfferEligibility(compactJWS: compactJWS))
        }

        /// `static func winBackOffer(_ offer: Product.SubscriptionOffer) -> Product.PurchaseOption`
        /// (SK/product/purchaseoption/winbackoffer(_:); iOS 18, macOS 15, tvOS 18, watchOS 11, visionOS 2).
        public static func winBackOffer(_ offer: Product.SubscriptionOffer) -> PurchaseOption {
            PurchaseOption(value: .winBackOffer(offer))
        }
    }

    /// `enum PurchaseResult` (SK/product/purchaseresult).
    public enum PurchaseResult: Sendable {
        /// `case success(VerificationResult<Transaction>)`.
        case success(VerificationResult<Transaction>)
        /// `case userCancelled`.
        case userCancelled
        /// `case pending`.
        case pending
    }

    /// `struct SubscriptionInfo` (SK/product/subscriptioninfo): `Equatable, Hashable`.
    public struct SubscriptionInfo: Equatable, Hashable, Sendable {
        /// `let subscriptionGroupID: String`.
        public let subscriptionGroupID: String
        /// `let subscriptionPeriod: Product.SubscriptionPeriod`.
        public let subscriptionPeriod: Product.SubscriptionPeriod
        /// `let introductoryOffer: Product.SubscriptionOffer?`.
        public let introductoryOffer: Product.SubscriptionOffer?
        /// `let winBackOffers: [Product.SubscriptionOffer]` (SK/product/subscriptioninfo/winbackoffers; iOS 18): every
        /// win-back offer configured, eligible or not.
        public let winBackOffers: [Product.SubscriptionOffer]

        /// The mirror's own: a subscription for a test.
        public init(
            subscriptionGroupID: String, subscriptionPeriod: Product.SubscriptionPeriod,
            introductoryOffer: Product.SubscriptionOffer? = nil, winBackOffers: [Product.SubscriptionOffer] = []
        ) {
            self.subscriptionGroupID = subscriptionGroupID
            self.subscriptionPeriod = subscriptionPeriod
            self.introductoryOffer = introductoryOffer
            self.winBackOffers = winBackOffers
        }

        /// `var isEligibleForIntroOffer: Bool { get async }`
        /// (SK/product/subscriptioninfo/iseligibleforintrooffer).
        public var isEligibleForIntroOffer: Bool {
            get async { await Self.isEligibleForIntroOffer(for: subscriptionGroupID) }
        }

        /// `static func isEligibleForIntroOffer(for groupID: String) async -> Bool`
        /// (SK/product/subscriptioninfo/iseligibleforintrooffer(for:)).
        public static func isEligibleForIntroOffer(for groupID: String) async -> Bool {
            guard let store = MirrorStoreKit.store else { return false }
            return await store.isEligibleForIntroOffer(groupID: groupID)
        }

        /// `static func status(for groupID: String) async throws -> [Product.SubscriptionInfo.Status]`
        /// (SK/product/subscriptioninfo/status(for:)).
        public static func status(for groupID: String) async throws -> [Product.SubscriptionInfo.Status] {
            try await MirrorStoreKit.current().statuses(groupID: groupID)
        }

        /// `struct Status` (SK/product/subscriptioninfo/status-swift.struct): one subscription of the group.
        public struct Status: Equatable, Hashable, Sendable {
            /// `let renewalInfo: VerificationResult<Product.SubscriptionInfo.RenewalInfo>`.
            public let renewalInfo: VerificationResult<Product.SubscriptionInfo.RenewalInfo>

            /// The mirror's own: a status for a test.
            public init(renewalInfo: VerificationResult<Product.SubscriptionInfo.RenewalInfo>) {
                self.renewalInfo = renewalInfo
            }
        }

        /// `struct RenewalInfo` (SK/product/subscriptioninfo/renewalinfo).
        public struct RenewalInfo: Equatable, Hashable, Sendable {
            /// `let originalTransactionID: UInt64`.
            public let originalTransactionID: UInt64
            /// `let gracePeriodExpirationDate: Date?`.
            public let gracePeriodExpirationDate: Date?

            /// The mirror's own: renewal info for a test.
            public init(originalTransactionID: UInt64, gracePeriodExpirationDate: Date?) {
                self.originalTransactionID = originalTransactionID
                self.gracePeriodExpirationDate = gracePeriodExpirationDate
            }
        }
    }

    /// `struct SubscriptionOffer` (SK/product/subscriptionoffer): `Equatable, Hashable`.
    public struct SubscriptionOffer: Equatable, Hashable, Sendable {
        /// `let id: String?` (SK/product/subscriptionoffer/id): `nil` for an introductory offer.
        public let id: String?
        /// `let price: Decimal`.
        public let price: Decimal
        /// `let displayPrice: String`.
        public let displayPrice: String
        /// `let period: Product.SubscriptionPeriod`.
        public let period: Product.SubscriptionPeriod
        /// `let periodCount: Int`.
        public let periodCount: Int
        /// `let paymentMode: Product.SubscriptionOffer.PaymentMode`.
        public let paymentMode: Product.SubscriptionOffer.PaymentMode

        /// The mirror's own: an offer for a test.
        public init(
            id: String? = nil, price: Decimal, displayPrice: String, period: Product.SubscriptionPeriod,
            periodCount: Int, paymentMode: Product.SubscriptionOffer.PaymentMode
        ) {
            self.id = id
            self.price = price
            self.displayPrice = displayPrice
            self.period = period
            self.periodCount = periodCount
            self.paymentMode = paymentMode
        }

        /// `struct PaymentMode` (SK/product/subscriptionoffer/paymentmode-swift.struct): a raw-value struct.
        public struct PaymentMode: RawRepresentable, Equatable, Hashable, Sendable {
            /// The raw value.
            public let rawValue: String
            /// Creates a mode from its raw value.
            public init(rawValue: String) { self.rawValue = rawValue }
            /// `static let freeTrial: Product.SubscriptionOffer.PaymentMode`.
            public static let freeTrial = PaymentMode(rawValue: "FreeTrial")
            /// `static let payAsYouGo: Product.SubscriptionOffer.PaymentMode`.
            public static let payAsYouGo = PaymentMode(rawValue: "PayAsYouGo")
            /// `static let payUpFront: Product.SubscriptionOffer.PaymentMode`.
            public static let payUpFront = PaymentMode(rawValue: "PayUpFront")
        }
    }

    /// `struct SubscriptionPeriod` (SK/product/subscriptionperiod): `Equatable, Hashable`.
    public struct SubscriptionPeriod: Equatable, Hashable, Sendable {
        /// `let value: Int`.
        public let value: Int
        /// `let unit: Product.SubscriptionPeriod.Unit`.
        public let unit: Product.SubscriptionPeriod.Unit

        /// The mirror's own: a period for a test.
        public init(value: Int, unit: Product.SubscriptionPeriod.Unit) {
            self.value = value
            self.unit = unit
        }

        /// `enum Unit` (SK/product/subscriptionperiod/unit-swift.enum), in Apple's order.
        public enum Unit: Equatable, Hashable, Sendable {
            /// `case day`.
            case day
            /// `case week`.
            case week
            /// `case month`.
            case month
            /// `case year`.
            case year
        }
    }
}
