import CofferStoreKit
import Foundation
import Synchronization

/// One simulated device signed in to an App Store account: StoreKit, as the SDK sees it, backed by a
/// ``SimulatedAppStore``. Purchases made here go through the payment sheet with the outcome set in
/// ``nextOutcome``.
public final class SimulatedDevice: StoreKitProvider {
    /// The store behind the device.
    public let store: SimulatedAppStore
    /// The signed-in account.
    public let account: String
    private let outcome = OutcomeBox()
    private let cachedAppTransaction = Mutex<String?>(nil)
    private let refreshes = Mutex(0)
    private let choices = Mutex(SimulatedSheetChoices())

    /// What the customer does on StoreKit's sheets.
    public var sheetChoices: SimulatedSheetChoices {
        get { choices.withLock { $0 } }
        set { choices.withLock { $0 = newValue } }
    }

    init(store: SimulatedAppStore, account: String) {
        self.store = store
        self.account = account
    }

    /// What the customer does on the next payment sheet (success unless told otherwise); it resets to
    /// success after each purchase.
    public var nextOutcome: PurchaseOutcome {
        get { outcome.take(keep: true) }
        set { outcome.set(newValue) }
    }

    /// Buys through the simulated payment sheet.
    public func purchase(productId: String, quantity: Int, appAccountToken: UUID?) async throws -> StorePurchaseResult {
        try await purchase(productId: productId, quantity: quantity, appAccountToken: appAccountToken, offer: nil)
    }

    /// Buys through the simulated payment sheet with an offer, checked as the App Store checks it
    /// (``SimulatedAppStore/purchase(account:productId:appAccountToken:offer:outcome:)``).
    public func purchase(productId: String, quantity: Int, appAccountToken: UUID?, offer: StorePurchaseOffer?)
        async throws -> StorePurchaseResult
    {
        let chosen = outcome.take(keep: false)
        let report =
            if let offer {
                try await store.purchase(
                    account: account, productId: productId, appAccountToken: appAccountToken, offer: offer,
                    outcome: chosen)
            } else {
                try await store.purchase(
                    account: account, productId: productId, quantity: quantity, appAccountToken: appAccountToken,
                    outcome: chosen)
            }
        switch chosen {
        case .userCancelled: return .userCancelled
        case .askToBuy: return .pending
        case .success:
            let all = await store.deviceTransactions(account: account)
            guard let transaction = all.last(where: { report.transactionIds.contains($0.id) && !$0.isFamilyShared })
            else { return .pending }
            return .success(transaction)
        }
    }

    /// The account's updates; a new stream starts with every unfinished transaction.
    public func updates() async -> AsyncStream<StoreTransaction> { await store.updates(account: account) }

    /// Unfinished transactions.
    public func unfinished() async -> [StoreTransaction] { await store.unfinishedTransactions(account: account) }

    /// Every transaction of the account.
    public func all() async -> [StoreTransaction] { await store.deviceTransactions(account: account) }

    /// The latest transaction of each product the account is entitled to now.
    public func currentEntitlements() async -> [StoreTransaction] {
        await store.currentEntitlements(account: account)
    }

    /// Finishes a transaction.
    public func finish(transactionId: String) async { await store.finish(transactionId: transactionId) }

    /// Nothing to sync: the simulated device always sees the store's state.
    public func sync() async throws {}

    /// The products the simulator sells, as the account's device shows them.
    public func products(ids: [String]) async throws -> [StoreProduct] {
        await store.products(ids: ids, account: account)
    }

    /// The account's subscriptions in a billing grace period now, as their renewal info says.
    public func gracePeriods(groups: [String]) async -> [String: Date] {
        await store.gracePeriods(account: account, groups: groups)
    }

    /// Sends a refund request (Apple asks the server for consumption information and decides later), unless
    /// ``sheetChoices`` has the customer close the sheet.
    public func beginRefundRequest(transactionId: String) async throws -> RefundRequestStatus {
        guard sheetChoices.refundRequest == .success else { return .userCancelled }
        try await store.requestRefund(transactionId: transactionId, account: account)
        return .success
    }

    /// The subscription management sheet: the customer turns auto-renew off when ``sheetChoices`` says so.
    public func showManageSubscriptions() async throws {
        let cancels = choices.withLock { choices in
            choices.manageSubscriptionsShown += 1
            return choices.cancelsSubscriptions
        }
        if cancels { try await store.cancelSubscriptions(account: account) }
    }

    /// The offer-code sheet: the customer types ``SimulatedSheetChoices/offerCode`` (once); what it buys arrives
    /// through ``updates()``.
    public func presentOfferCodeRedeemSheet() async throws {
        let code = choices.withLock { choices in
            defer { choices.offerCode = nil }
            return choices.offerCode
        }
        if let code { try await store.redeemOfferCode(code, account: account) }
    }

    /// How many times the app asked for a fresh app transaction (`AppTransaction.refresh()`, which shows the
    /// customer an App Store sign-in on a device: only on their own action).
    public var appTransactionRefreshes: Int { refreshes.withLock { $0 } }

    /// The account's app transaction, signed when first asked for and kept, as StoreKit caches
    /// `AppTransaction.shared`; `refresh` signs a new one.
    public func appTransaction(refresh: Bool) async -> String? {
        if refresh { refreshes.withLock { $0 += 1 } }
        if !refresh, let cached = cachedAppTransaction.withLock({ $0 }) { return cached }
        guard let signed = try? await store.signedAppTransaction(account: account) else { return nil }
        cachedAppTransaction.withLock { $0 = signed }
        return signed
    }
}

/// The next payment-sheet outcome, shared across tasks.
private final class OutcomeBox: Sendable {
    private let value = Mutex(PurchaseOutcome.success)

    func set(_ outcome: PurchaseOutcome) { value.withLock { $0 = outcome } }

    func take(keep: Bool) -> PurchaseOutcome {
        value.withLock { current in
            let chosen = current
            if !keep { current = .success }
            return chosen
        }
    }
}
