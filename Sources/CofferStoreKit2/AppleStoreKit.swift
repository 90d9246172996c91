// StoreKit 2 on Apple platforms. On Linux the same code compiles against `StoreKitInterface`, a mirror of
// exactly the StoreKit declarations used here, so its tests run the mapping and the calls' order; only the
// window-scene lookup (UIKit) is Apple-only.
import CofferStoreKit
import Foundation

#if canImport(StoreKit)
    import StoreKit
#else
    import StoreKitInterface
#endif
#if canImport(UIKit) && canImport(StoreKit)
    import UIKit
#endif

/// StoreKit 2 behind ``StoreKitProvider``: what an iOS or macOS app gives `CofferSDK`.
///
/// Entitlements and history come only from transactions StoreKit verified on the device. A purchase or an
/// unfinished transaction StoreKit could not verify is passed on marked (``StoreTransaction/verificationFailure``):
/// the SDK delivers nothing on its word, has the server verify its signed form, and finishes it once the server
/// refuses it too, so it is not met again on every launch. On iOS and visionOS a purchase is
/// confirmed in a window scene (`Product.purchase(confirmIn:options:)`), and the sheets (refund requests,
/// subscription management, offer codes) show in one: the scene the app names (an app extension, or an app with
/// several windows), else the app's foreground-active scene. The adapter never names `UIApplication.shared`, so
/// it compiles in app extensions too. On macOS a purchase uses `Product.purchase(options:)`, and where StoreKit
/// wants a view controller the app uses SwiftUI's `refundRequestSheet` and `offerCodeRedemption`.
public struct AppleStoreKit: StoreKitProvider {
    #if os(iOS) || os(visionOS) || !canImport(StoreKit)
        /// The window scene purchase confirmations and sheets show in, when the app names one.
        private let scene: (@MainActor @Sendable () -> UIWindowScene?)?

        /// StoreKit as the app sees it; `scene` names the window scene its purchase confirmations and sheets show
        /// in (an app extension's, or the window the customer tapped in), `nil` for the app's foreground-active
        /// scene.
        public init(scene: (@MainActor @Sendable () -> UIWindowScene?)? = nil) { self.scene = scene }
    #else
        /// StoreKit as the app sees it.
        public init() {}
    #endif

    /// Buys with the quantity and the Coffer user's account token: confirmed in the window scene on iOS and
    /// visionOS (`Product.purchase(confirmIn:options:)`), `Product.purchase(options:)` on macOS.
    public func purchase(productId: String, quantity: Int, appAccountToken: UUID?) async throws
        -> StorePurchaseResult
    {
        try await purchase(productId: productId, quantity: quantity, appAccountToken: appAccountToken, offer: nil)
    }

    /// Buys with an offer's purchase options too (``offerOptions(_:for:)``), confirmed as ``purchase(productId:quantity:appAccountToken:)``
    /// is.
    public func purchase(productId: String, quantity: Int, appAccountToken: UUID?, offer: StorePurchaseOffer?)
        async throws -> StorePurchaseResult
    {
        guard let product = try await Product.products(for: [productId]).first else {
            throw AppleStoreKitError.unknownProduct(productId)
        }
        var options = Self.options(quantity, appAccountToken)
        if let offer { options.formUnion(try Self.offerOptions(offer, for: product)) }
        #if os(iOS) || os(visionOS) || !canImport(StoreKit)
            return Self.purchaseResult(try await Self.purchase(product, options, in: scene))
        #else
            return Self.purchaseResult(try await product.purchase(options: options))
        #endif
    }

    /// `Transaction.updates` (it starts with the unfinished transactions, once per launch).
    public func updates() async -> AsyncStream<StoreTransaction> {
        let (stream, continuation) = AsyncStream<StoreTransaction>.makeStream()
        let task = Task {
            for await result in Transaction.updates { continuation.yield(Self.transaction(result)) }
            continuation.finish()
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }

    /// `Transaction.unfinished`, the unverified ones marked.
    public func unfinished() async -> [StoreTransaction] {
        await Self.collect(Transaction.unfinished, verifiedOnly: false)
    }

    /// `Transaction.all` (without `SKIncludeConsumableInAppPurchaseHistory`, finished consumables are not in it);
    /// only what StoreKit verified.
    public func all() async -> [StoreTransaction] { await Self.collect(Transaction.all, verifiedOnly: true) }

    /// `Transaction.currentEntitlements`; only what StoreKit verified.
    public func currentEntitlements() async -> [StoreTransaction] {
        await Self.collect(Transaction.currentEntitlements, verifiedOnly: true)
    }

    /// Finishes the unfinished transaction with this id (`Transaction.finish()`), verified or not: an unverified
    /// one is finished once the server refused it too.
    public func finish(transactionId: String) async {
        for await result in Transaction.unfinished {
            let transaction: Transaction
            switch result {
            case .verified(let verified): transaction = verified
            case .unverified(let unverified, _): transaction = unverified
            }
            guard String(transaction.id) == transactionId else { continue }
            await transaction.finish()
            return
        }
    }

    /// `AppStore.sync()`: asks the customer to sign in; for a Restore Purchases button only.
    public func sync() async throws { try await AppStore.sync() }

    /// `AppTransaction.shared`, or `AppTransaction.refresh()`; only what StoreKit verified.
    public func appTransaction(refresh: Bool) async -> String? {
        do {
            let result = refresh ? try await AppTransaction.refresh() : try await AppTransaction.shared
            guard case .verified = result else { return nil }
            return result.jwsRepresentation
        } catch {
            return nil
        }
    }

    /// `Product.products(for:)`, each with its subscription's introductory offer and the account's eligibility
    /// (`Product.SubscriptionInfo.isEligibleForIntroOffer`).
    public func products(ids: [String]) async throws -> [StoreProduct] {
        var products: [StoreProduct] = []
        for product in try await Product.products(for: ids) { products.append(await Self.product(product)) }
        return products
    }

    /// The renewal info's `gracePeriodExpirationDate` of each subscription of these groups in a billing grace
    /// period now (`Product.SubscriptionInfo.status(for:)`), by original transaction id; only what StoreKit
    /// verified.
    public func gracePeriods(groups: [String]) async -> [String: Date] {
        var ends: [String: Date] = [:]
        for group in groups {
            guard let statuses = try? await Product.SubscriptionInfo.status(for: group) else { continue }
            for status in statuses {
                guard case .verified(let info) = status.renewalInfo, let end = info.gracePeriodExpirationDate else {
                    continue
                }
                ends[String(info.originalTransactionID)] = end
            }
        }
        return ends
    }

    /// `Transaction.beginRefundRequest(for:in:)` in the app's foreground window scene.
    public func beginRefundRequest(transactionId: String) async throws -> RefundRequestStatus {
        guard let id = UInt64(transactionId) else { throw AppleStoreKitError.unknownTransaction(transactionId) }
        #if os(iOS) || os(visionOS) || !canImport(StoreKit)
            return Self.refundStatus(try await Self.refundRequest(id, in: scene))
        #else
            throw AppleStoreKitError.needsSwiftUISheet("refundRequestSheet(for:isPresented:onDismiss:)")
        #endif
    }

    /// `AppStore.showManageSubscriptions(in:)` in the app's foreground window scene.
    public func showManageSubscriptions() async throws {
        #if os(iOS) || os(visionOS) || !canImport(StoreKit)
            try await Self.manageSubscriptions(in: scene)
        #else
            throw AppleStoreKitError.needsSwiftUISheet("the App Store app's subscriptions page")
        #endif
    }

    /// `AppStore.presentOfferCodeRedeemSheet(in:)` in the app's foreground window scene; the redeemed
    /// transaction arrives through ``updates()``.
    public func presentOfferCodeRedeemSheet() async throws {
        #if os(iOS) || os(visionOS) || !canImport(StoreKit)
            try await Self.offerCodeSheet(in: scene)
        #else
            throw AppleStoreKitError.needsSwiftUISheet("offerCodeRedemption(isPresented:onCompletion:)")
        #endif
    }

    // MARK: - The calls that need a window scene

    #if os(iOS) || os(visionOS) || !canImport(StoreKit)
        @MainActor
        private static func purchase(
            _ product: Product, _ options: Set<Product.PurchaseOption>,
            in chosen: (@MainActor @Sendable () -> UIWindowScene?)?
        ) async throws -> Product.PurchaseResult {
            try await product.purchase(confirmIn: try foregroundScene(chosen), options: options)
        }

        @MainActor
        private static func refundRequest(_ id: UInt64, in chosen: (@MainActor @Sendable () -> UIWindowScene?)?)
            async throws -> Transaction.RefundRequestStatus
        {
            try await Transaction.beginRefundRequest(for: id, in: try foregroundScene(chosen))
        }

        @MainActor
        private static func manageSubscriptions(in chosen: (@MainActor @Sendable () -> UIWindowScene?)?) async throws {
            try await AppStore.showManageSubscriptions(in: try foregroundScene(chosen))
        }

        @MainActor
        private static func offerCodeSheet(in chosen: (@MainActor @Sendable () -> UIWindowScene?)?) async throws {
            try await AppStore.presentOfferCodeRedeemSheet(in: try foregroundScene(chosen))
        }
    #endif

    #if (os(iOS) || os(visionOS)) && canImport(StoreKit)
        /// The scene the app names, else the one the customer sees: the foreground-active window scene, else the
        /// first one. The application is found by key-value coding (`sharedApplication`), never by
        /// `UIApplication.shared`, which app extensions cannot name: in an extension there is none, and the app
        /// names its scene.
        @MainActor
        private static func foregroundScene(_ chosen: (@MainActor @Sendable () -> UIWindowScene?)?) throws
            -> UIWindowScene
        {
            if let named = chosen?() { return named }
            let application = UIApplication.value(forKey: "sharedApplication") as? UIApplication
            let scenes = application?.connectedScenes.compactMap { $0 as? UIWindowScene } ?? []
            guard let scene = scenes.first(where: { $0.activationState == .foregroundActive }) ?? scenes.first else {
                throw AppleStoreKitError.noWindowScene
            }
            return scene
        }
    #elseif !canImport(StoreKit)
        /// The scene the test names, else the mirror's stand-in.
        @MainActor
        private static func foregroundScene(_ chosen: (@MainActor @Sendable () -> UIWindowScene?)?) throws
            -> UIWindowScene
        {
            chosen?() ?? UIWindowScene()
        }
    #endif

    // MARK: - StoreKit's values as the SDK reads them

    static func options(_ quantity: Int, _ appAccountToken: UUID?) -> Set<Product.PurchaseOption> {
        var options: Set<Product.PurchaseOption> = [.quantity(quantity)]
        if let appAccountToken { options.insert(.appAccountToken(appAccountToken)) }
        return options
    }

    /// An offer's purchase options: a promotional offer's JWS (`promotionalOffer(_:compactJWS:)`, Xcode 26's SDK)
    /// or, from an older SDK, its earlier signature (`promotionalOffer(offerID:keyID:nonce:signature:timestamp:)`);
    /// the server's word on the introductory offer (`introductoryOfferEligibility(compactJWS:)`, Xcode 16.3's SDK; an
    /// older one leaves StoreKit's own eligibility); a win-back offer of the product's (`winBackOffer(_:)`, iOS 18).
    static func offerOptions(_ offer: StorePurchaseOffer, for product: Product) throws -> Set<Product.PurchaseOption> {
        switch offer {
        case .promotional(let offerId, let compactJWS, let signature):
            #if compiler(>=6.2)
                _ = signature
                return Set(Product.PurchaseOption.promotionalOffer(offerId, compactJWS: compactJWS))
            #else
                _ = compactJWS
                return [
                    .promotionalOffer(
                        offerID: offerId, keyID: signature.keyId, nonce: signature.nonce,
                        signature: signature.signature, timestamp: signature.timestamp)
                ]
            #endif
        case .introductoryEligibility(let compactJWS):
            #if compiler(>=6.1)
                return [.introductoryOfferEligibility(compactJWS: compactJWS)]
            #else
                _ = compactJWS
                return []
            #endif
        case .winBack(let offerId):
            // iOS 18 and macOS 15 are the package's own floor; the other systems may be older.
            #if os(tvOS) || os(watchOS) || os(visionOS)
                guard #available(tvOS 18.0, watchOS 11.0, visionOS 2.0, *) else {
                    throw StorePurchaseOfferError.needsNewerSystem(
                        "a win-back offer needs tvOS 18, watchOS 11 or visionOS 2")
                }
            #endif
            guard let found = product.subscription?.winBackOffers.first(where: { $0.id == offerId }) else {
                throw StorePurchaseOfferError.unknownOffer(offerId)
            }
            return [.winBackOffer(found)]
        }
    }

    static func purchaseResult(_ result: Product.PurchaseResult) -> StorePurchaseResult {
        switch result {
        case .success(let verification): .success(transaction(verification))
        case .userCancelled: .userCancelled
        case .pending: .pending
        @unknown default: .pending
        }
    }

    private static func collect(_ results: Transaction.Transactions, verifiedOnly: Bool) async -> [StoreTransaction] {
        var transactions: [StoreTransaction] = []
        for await result in results {
            let transaction = transaction(result)
            if transaction.isVerified || !verifiedOnly { transactions.append(transaction) }
        }
        return transactions
    }

    /// A StoreKit transaction as the SDK reads it, with its signed form; one StoreKit could not verify carries
    /// why (its fields are then only the device's word, never delivered on it).
    static func transaction(_ result: VerificationResult<Transaction>) -> StoreTransaction {
        let transaction: Transaction
        var failure: String?
        switch result {
        case .verified(let verified):
            transaction = verified
        case .unverified(let unverified, let error):
            transaction = unverified
            failure = String(describing: error)
        }
        return StoreTransaction(
            id: String(transaction.id), originalId: String(transaction.originalID),
            productId: transaction.productID, productType: productType(transaction.productType),
            purchaseDate: transaction.purchaseDate, quantity: transaction.purchasedQuantity,
            expirationDate: transaction.expirationDate, revocationDate: transaction.revocationDate,
            isFamilyShared: transaction.ownershipType == .familyShared, isUpgraded: transaction.isUpgraded,
            isTrial: transaction.offer?.paymentMode == .freeTrial, appAccountToken: transaction.appAccountToken,
            subscriptionGroupId: transaction.subscriptionGroupID, jwsRepresentation: result.jwsRepresentation,
            verificationFailure: failure, revocationPercentage: refundedShare(transaction))
    }

    /// The share refunded in milliunits of a percent, from StoreKit's `revocationPercentage` (a percentage, 0-100,
    /// back-deployed with Xcode 26.4's SDK): 100000 for a full refund; `nil` when StoreKit does not say (no refund,
    /// an older SDK).
    static func refundedShare(_ transaction: Transaction) -> Int? {
        #if compiler(>=6.3)
            guard let percentage = transaction.revocationPercentage, percentage > 0 else { return nil }
            guard percentage < 100 else { return 100_000 }
            return min(99_999, max(1, Int(NSDecimalNumber(decimal: percentage * 1_000).doubleValue.rounded())))
        #else
            return nil
        #endif
    }

    static func productType(_ type: Product.ProductType) -> StoreTransaction.ProductType {
        switch type {
        case .consumable: .consumable
        case .nonConsumable: .nonConsumable
        case .autoRenewable: .autoRenewable
        default: .nonRenewing
        }
    }

    static func product(_ product: Product) async -> StoreProduct {
        var subscription: StoreSubscriptionInfo?
        if let info = product.subscription {
            subscription = StoreSubscriptionInfo(
                groupId: info.subscriptionGroupID, period: period(info.subscriptionPeriod),
                introductoryOffer: info.introductoryOffer.map(offer),
                isEligibleForIntroOffer: await info.isEligibleForIntroOffer)
        }
        return StoreProduct(
            id: product.id, type: productType(product.type), displayName: product.displayName,
            description: product.description, price: product.price, displayPrice: product.displayPrice,
            currencyCode: product.priceFormatStyle.currencyCode, subscription: subscription)
    }

    static func offer(_ offer: Product.SubscriptionOffer) -> StoreIntroductoryOffer {
        let mode: StoreIntroductoryOffer.PaymentMode =
            switch offer.paymentMode {
            case .freeTrial: .freeTrial
            case .payUpFront: .payUpFront
            default: .payAsYouGo
            }
        return StoreIntroductoryOffer(
            paymentMode: mode, price: offer.price, displayPrice: offer.displayPrice, period: period(offer.period),
            periodCount: offer.periodCount)
    }

    static func period(_ period: Product.SubscriptionPeriod) -> StorePeriod {
        let unit: StorePeriod.Unit =
            switch period.unit {
            case .day: .day
            case .week: .week
            case .month: .month
            case .year: .year
            @unknown default: .month
            }
        return StorePeriod(value: period.value, unit: unit)
    }

    static func refundStatus(_ status: Transaction.RefundRequestStatus) -> RefundRequestStatus {
        switch status {
        case .success: .success
        case .userCancelled: .userCancelled
        @unknown default: .userCancelled
        }
    }
}

/// What ``AppleStoreKit`` refuses.
public enum AppleStoreKitError: Error, Equatable, Sendable {
    /// The App Store does not sell a product with this id to this app.
    case unknownProduct(String)
    /// No transaction has this id.
    case unknownTransaction(String)
    /// The app has no window scene to show StoreKit's sheet in.
    case noWindowScene
    /// StoreKit shows this sheet here only from a view: use the SwiftUI modifier named.
    case needsSwiftUISheet(String)
}
