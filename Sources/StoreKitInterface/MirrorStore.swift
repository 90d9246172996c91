import Foundation

/// Which of StoreKit's transaction sequences is asked for.
public enum MirrorFeed: Sendable, Equatable {
    /// `Transaction.updates`.
    case updates
    /// `Transaction.unfinished`.
    case unfinished
    /// `Transaction.all`.
    case all
    /// `Transaction.currentEntitlements`.
    case currentEntitlements
}

/// What stands behind the mirror's StoreKit in a test: the App Store and the device's StoreKit daemon.
public protocol MirrorStore: Sendable {
    /// `Product.products(for:)`.
    func products(for ids: [String]) async throws -> [Product]
    /// `Product.purchase(options:)`.
    func purchase(_ product: Product, options: Set<Product.PurchaseOption>) async throws -> Product.PurchaseResult
    /// `Product.purchase(confirmIn:options:)`: by default as `purchase(options:)`.
    func purchase(_ product: Product, options: Set<Product.PurchaseOption>, confirmIn scene: UIScene) async throws
        -> Product.PurchaseResult
    /// One of the transaction sequences.
    func transactions(_ feed: MirrorFeed) -> AsyncStream<VerificationResult<Transaction>>
    /// `Transaction.finish()`.
    func finish(_ transaction: Transaction) async
    /// `AppStore.sync()`.
    func sync() async throws
    /// `AppTransaction.shared` and `AppTransaction.refresh()`.
    func appTransaction(refresh: Bool) async throws -> VerificationResult<AppTransaction>
    /// `Product.SubscriptionInfo.isEligibleForIntroOffer(for:)`.
    func isEligibleForIntroOffer(groupID: String) async -> Bool
    /// `Product.SubscriptionInfo.status(for:)`.
    func statuses(groupID: String) async throws -> [Product.SubscriptionInfo.Status]
    /// `Transaction.beginRefundRequest(for:in:)`.
    func refundRequest(for transactionID: UInt64) async throws -> Transaction.RefundRequestStatus
    /// `AppStore.showManageSubscriptions(in:)`.
    func showManageSubscriptions() async throws
    /// `AppStore.presentOfferCodeRedeemSheet(in:)`.
    func presentOfferCodeRedeemSheet() async throws
}

extension MirrorStore {
    /// A purchase confirmed in a scene, answered as one without.
    public func purchase(_ product: Product, options: Set<Product.PurchaseOption>, confirmIn scene: UIScene)
        async throws -> Product.PurchaseResult
    {
        try await purchase(product, options: options)
    }
}

/// The store the mirror's StoreKit answers from: set per task by a test (`MirrorStoreKit.$store.withValue`),
/// so tests running side by side each see their own.
public enum MirrorStoreKit {
    /// The store for the current task; without one, the mirror's StoreKit has no products and no transactions
    /// and its calls that can throw throw ``MirrorStoreKitError/noStore``.
    @TaskLocal public static var store: (any MirrorStore)?

    static func current() throws -> any MirrorStore {
        guard let store else { throw MirrorStoreKitError.noStore }
        return store
    }
}

/// What the mirror's StoreKit throws without a store.
public enum MirrorStoreKitError: Error, Equatable, Sendable {
    /// No `MirrorStoreKit.store` was set for this task.
    case noStore
}
