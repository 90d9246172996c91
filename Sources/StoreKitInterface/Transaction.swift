import Foundation

/// `struct Transaction` (iOS 15, macOS 12; SK/transaction): `Identifiable` with `ID = UInt64`, `Sendable`.
public struct Transaction: Identifiable, Equatable, Hashable, Sendable {
    /// `let id: UInt64` (SK/transaction/id).
    public let id: UInt64
    /// `let originalID: UInt64` (SK/transaction/originalid).
    public let originalID: UInt64
    /// `let productID: String` (SK/transaction/productid).
    public let productID: String
    /// `let productType: Product.ProductType` (SK/transaction/producttype).
    public let productType: Product.ProductType
    /// `let purchaseDate: Date` (SK/transaction/purchasedate).
    public let purchaseDate: Date
    /// `let purchasedQuantity: Int` (SK/transaction/purchasedquantity).
    public let purchasedQuantity: Int
    /// `let expirationDate: Date?` (SK/transaction/expirationdate).
    public let expirationDate: Date?
    /// `let revocationDate: Date?` (SK/transaction/revocationdate).
    public let revocationDate: Date?
    /// `var revocationPercentage: Decimal? { get }` (SK/transaction/revocationpercentage; back-deployed before iOS
    /// 26.4): the share refunded, a percentage 0.0-100.0, present only while a refund stands.
    public var revocationPercentage: Decimal? { percentageRefunded }
    /// `let ownershipType: Transaction.OwnershipType` (SK/transaction/ownershiptype-swift.property).
    public let ownershipType: Transaction.OwnershipType
    /// `let isUpgraded: Bool` (SK/transaction/isupgraded).
    public let isUpgraded: Bool
    /// `let appAccountToken: UUID?` (SK/transaction/appaccounttoken).
    public let appAccountToken: UUID?
    /// `let offer: Transaction.Offer?` (SK/transaction/offer-swift.property; iOS 17.2, macOS 14.2).
    public let offer: Transaction.Offer?
    /// `let subscriptionGroupID: String?` (SK/transaction/subscriptiongroupid): App Store Connect's id of the
    /// subscription's group.
    public let subscriptionGroupID: String?
    /// The signed form StoreKit keeps behind `VerificationResult<Transaction>.jwsRepresentation` (the mirror's
    /// own).
    public let signed: String
    /// The mirror's own storage behind ``revocationPercentage``.
    let percentageRefunded: Decimal?

    /// The mirror's own: a transaction for a test.
    public init(
        id: UInt64, originalID: UInt64, productID: String, productType: Product.ProductType, purchaseDate: Date,
        purchasedQuantity: Int = 1, expirationDate: Date? = nil, revocationDate: Date? = nil,
        ownershipType: Transaction.OwnershipType = .purchased, isUpgraded: Bool = false, appAccountToken: UUID? = nil,
        offer: Transaction.Offer? = nil, subscriptionGroupID: String? = nil, signed: String,
        revocationPercentage: Decimal? = nil
    ) {
        self.id = id
        self.originalID = originalID
        self.productID = productID
        self.productType = productType
        self.purchaseDate = purchaseDate
        self.purchasedQuantity = purchasedQuantity
        self.expirationDate = expirationDate
        self.revocationDate = revocationDate
        self.ownershipType = ownershipType
        self.isUpgraded = isUpgraded
        self.appAccountToken = appAccountToken
        self.offer = offer
        self.subscriptionGroupID = subscriptionGroupID
        self.signed = signed
        self.percentageRefunded = revocationPercentage
    }

    /// `func finish() async` (SK/transaction/finish()).
    public func finish() async { await MirrorStoreKit.store?.finish(self) }

    /// `static var updates: Transaction.Transactions { get }` (SK/transaction/updates).
    public static var updates: Transaction.Transactions { Transactions(feed: .updates) }
    /// `static var unfinished: Transaction.Transactions { get }` (SK/transaction/unfinished).
    public static var unfinished: Transaction.Transactions { Transactions(feed: .unfinished) }
    /// `static var all: Transaction.Transactions { get }` (SK/transaction/all).
    public static var all: Transaction.Transactions { Transactions(feed: .all) }
    /// `static var currentEntitlements: Transaction.Transactions { get }` (SK/transaction/currententitlements).
    public static var currentEntitlements: Transaction.Transactions { Transactions(feed: .currentEntitlements) }

    /// `@MainActor static func beginRefundRequest(for transactionID: UInt64, in scene: UIWindowScene) async throws
    /// -> Transaction.RefundRequestStatus` (SK/transaction/beginrefundrequest(for:in:)).
    @MainActor
    public static func beginRefundRequest(for transactionID: UInt64, in scene: UIWindowScene) async throws
        -> Transaction.RefundRequestStatus
    {
        try await MirrorStoreKit.current().refundRequest(for: transactionID)
    }

    /// `struct OwnershipType` (SK/transaction/ownershiptype-swift.struct): a raw-value struct.
    public struct OwnershipType: RawRepresentable, Equatable, Hashable, Sendable {
        /// The raw value.
        public let rawValue: String
        /// Creates a type from its raw value.
        public init(rawValue: String) { self.rawValue = rawValue }
        /// `static let purchased: Transaction.OwnershipType`.
        public static let purchased = OwnershipType(rawValue: "PURCHASED")
        /// `static let familyShared: Transaction.OwnershipType`.
        public static let familyShared = OwnershipType(rawValue: "FAMILY_SHARED")
    }

    /// `struct Offer: Equatable, Hashable, Sendable` (SK/transaction/offer-swift.struct; iOS 17.2, macOS 14.2).
    public struct Offer: Equatable, Hashable, Sendable {
        /// `let id: String?`.
        public let id: String?
        /// `let type: Transaction.OfferType`.
        public let type: Transaction.OfferType
        /// `let paymentMode: Transaction.Offer.PaymentMode?`.
        public let paymentMode: Transaction.Offer.PaymentMode?

        /// The mirror's own: an offer for a test.
        public init(id: String? = nil, type: Transaction.OfferType, paymentMode: Transaction.Offer.PaymentMode?) {
            self.id = id
            self.type = type
            self.paymentMode = paymentMode
        }

        /// `struct PaymentMode` (SK/transaction/offer-swift.struct/paymentmode-swift.struct; iOS 17.2): a
        /// raw-value struct.
        public struct PaymentMode: RawRepresentable, Equatable, Hashable, Sendable {
            /// The raw value.
            public let rawValue: String
            /// Creates a mode from its raw value.
            public init(rawValue: String) { self.rawValue = rawValue }
            /// `static let freeTrial: Transaction.Offer.PaymentMode`.
            public static let freeTrial = PaymentMode(rawValue: "FREE_TRIAL")
            /// `static let payAsYouGo: Transaction.Offer.PaymentMode`.
            public static let payAsYouGo = PaymentMode(rawValue: "PAY_AS_YOU_GO")
            /// `static let payUpFront: Transaction.Offer.PaymentMode`.
            public static let payUpFront = PaymentMode(rawValue: "PAY_UP_FRONT")
        }
    }

    /// `struct OfferType` (SK/transaction/offertype-swift.struct): a raw-value struct, `rawValue: Int`.
    public struct OfferType: RawRepresentable, Equatable, Hashable, Sendable {
        /// The raw value.
        public let rawValue: Int
        /// Creates a type from its raw value.
        public init(rawValue: Int) { self.rawValue = rawValue }
        /// `static let introductory: Transaction.OfferType`.
        public static let introductory = OfferType(rawValue: 1)
        /// `static let promotional: Transaction.OfferType`.
        public static let promotional = OfferType(rawValue: 2)
        /// `static let code: Transaction.OfferType`.
        public static let code = OfferType(rawValue: 3)
    }

    /// `enum RefundRequestStatus` (SK/transaction/refundrequeststatus).
    public enum RefundRequestStatus: Equatable, Hashable, Sendable {
        /// `case success`.
        case success
        /// `case userCancelled`.
        case userCancelled
    }

    /// `enum RefundRequestError: Error` (SK/transaction/refundrequesterror).
    public enum RefundRequestError: Error, Equatable, Hashable, Sendable {
        /// `case duplicateRequest`.
        case duplicateRequest
        /// `case failed`.
        case failed
    }

    /// `struct Transactions: AsyncSequence, Sendable` with `Element = VerificationResult<Transaction>`
    /// (SK/transaction/transactions).
    public struct Transactions: AsyncSequence, Sendable {
        /// The element, as Apple's.
        public typealias Element = VerificationResult<Transaction>

        let feed: MirrorFeed

        /// `struct AsyncIterator: AsyncIteratorProtocol`.
        public struct AsyncIterator: AsyncIteratorProtocol {
            var base: AsyncStream<VerificationResult<Transaction>>.Iterator

            /// `mutating func next() async -> VerificationResult<Transaction>?`.
            public mutating func next() async -> VerificationResult<Transaction>? { await base.next() }
        }

        /// `func makeAsyncIterator() -> Transaction.Transactions.AsyncIterator`.
        public func makeAsyncIterator() -> AsyncIterator {
            let stream = MirrorStoreKit.store?.transactions(feed) ?? AsyncStream { $0.finish() }
            return AsyncIterator(base: stream.makeAsyncIterator())
        }
    }
}

/// `@frozen enum VerificationResult<SignedType>` (SK/verificationresult), `unverified` declared first, as
/// Apple's.
@frozen
public enum VerificationResult<SignedType: Sendable>: Sendable {
    /// `case unverified(SignedType, VerificationResult<SignedType>.VerificationError)`.
    case unverified(SignedType, VerificationResult<SignedType>.VerificationError)
    /// `case verified(SignedType)`.
    case verified(SignedType)

    /// `enum VerificationError: Error` (SK/verificationresult/verificationerror).
    public enum VerificationError: Error, Equatable, Sendable {
        /// `case revokedCertificate`.
        case revokedCertificate
        /// `case invalidCertificateChain`.
        case invalidCertificateChain
        /// `case invalidDeviceVerification`.
        case invalidDeviceVerification
        /// `case invalidEncoding`.
        case invalidEncoding
        /// `case invalidSignature`.
        case invalidSignature
        /// `case missingRequiredProperties`.
        case missingRequiredProperties
    }

    var signedValue: SignedType {
        switch self {
        case .unverified(let value, _), .verified(let value): value
        }
    }
}

extension VerificationResult: Equatable where SignedType: Equatable {}

extension VerificationResult: Hashable where SignedType: Hashable {}

extension VerificationResult where SignedType == Transaction {
    /// `var jwsRepresentation: String { get }` (SK/verificationresult/jwsrepresentation-21vgo), declared only
    /// where `SignedType == Transaction`, as Apple's.
    public var jwsRepresentation: String { signedValue.signed }
}

extension VerificationResult where SignedType == AppTransaction {
    /// `var jwsRepresentation: String { get }` (SK/verificationresult/jwsrepresentation-6ma59, iOS 16, macOS 13).
    public var jwsRepresentation: String { signedValue.signed }
}

/// `struct AppTransaction: Sendable` (iOS 16, macOS 13; SK/apptransaction).
public struct AppTransaction: Equatable, Hashable, Sendable {
    /// `var appTransactionID: String { get }` (SK/apptransaction/apptransactionid, back-deployed to iOS 16).
    public let appTransactionID: String
    /// The signed form (the mirror's own).
    public let signed: String

    /// The mirror's own: an app transaction for a test.
    public init(appTransactionID: String, signed: String) {
        self.appTransactionID = appTransactionID
        self.signed = signed
    }

    /// `static var shared: VerificationResult<AppTransaction> { get async throws }` (SK/apptransaction/shared).
    public static var shared: VerificationResult<AppTransaction> {
        get async throws { try await MirrorStoreKit.current().appTransaction(refresh: false) }
    }

    /// `static func refresh() async throws -> VerificationResult<AppTransaction>` (SK/apptransaction/refresh()).
    public static func refresh() async throws -> VerificationResult<AppTransaction> {
        try await MirrorStoreKit.current().appTransaction(refresh: true)
    }
}

/// `enum AppStore` (iOS 15, macOS 12): the App Store's calls.
public enum AppStore {
    /// `static func sync() async throws` (SK/appstore/sync()).
    public static func sync() async throws { try await MirrorStoreKit.current().sync() }

    /// `@MainActor static func showManageSubscriptions(in scene: UIWindowScene) async throws`
    /// (SK/appstore/showmanagesubscriptions(in:); iOS 15, no macOS form before 27.3).
    @MainActor
    public static func showManageSubscriptions(in scene: UIWindowScene) async throws {
        try await MirrorStoreKit.current().showManageSubscriptions()
    }

    /// `@MainActor static func presentOfferCodeRedeemSheet(in scene: UIWindowScene) async throws`
    /// (SK/appstore/presentoffercoderedeemsheet(in:); iOS 16). The redeemed transaction arrives in
    /// `Transaction.updates`.
    @MainActor
    public static func presentOfferCodeRedeemSheet(in scene: UIWindowScene) async throws {
        try await MirrorStoreKit.current().presentOfferCodeRedeemSheet()
    }
}

/// UIKit's `UIScene`: an opaque stand-in (the adapter only passes one through).
public class UIScene: @unchecked Sendable {
    /// The mirror's own: a scene for a test.
    public init() {}
}

/// UIKit's `UIWindowScene`, which StoreKit's sheets and purchase confirmations are shown in.
public final class UIWindowScene: UIScene, @unchecked Sendable {}
