import CofferCore
import CofferStoreKit
import Foundation
import Observation

/// What the seeds' screens show, as one observable model over ``CofferSDK``: the balance, the deficit, the
/// entitlements, loyalty progress, the purchase history, the backup's status and the Support ID, kept current
/// from the SDK's ``CofferSDK/changes()`` (purchases, refunds, grants, backups, the server's events).
///
/// SwiftUI views observe it directly (`@State var model = CofferModel(sdk: coffer)`; `.task { await
/// model.run() }`); it is `@MainActor`, as views are. Observation works on Linux too, so its behaviour is
/// tested there.
@MainActor
@Observable
public final class CofferModel {
    /// One subscription group's progress toward its loyalty lifetime.
    public struct LoyaltyProgress: Sendable, Equatable, Identifiable {
        /// The subscription group.
        public var group: String
        /// Paid periods counted (not refunded, not a free trial, not family-shared, not upgraded away).
        public var paidPeriods: Int
        /// Periods the rule needs.
        public var requiredPeriods: Int
        /// Whether the lifetime is earned now.
        public var isEarned: Bool

        /// The group.
        public var id: String { group }
        /// `0...1`, for a progress bar.
        public var fraction: Double {
            requiredPeriods > 0 ? min(1, Double(paidPeriods) / Double(requiredPeriods)) : 1
        }
    }

    /// One line of the Purchase History section, with the product's name.
    public struct HistoryLine: Sendable, Equatable, Identifiable {
        /// What the SDK knows of the transaction.
        public var item: CofferSDK.HistoryItem
        /// The product's display name (the App Store's, else its id).
        public var productName: String

        /// The transaction id.
        public var id: String { item.transactionId }
    }

    /// The SDK behind the model.
    public let sdk: CofferSDK

    /// The balance (the local ledger's or the server's).
    public private(set) var balance: Int64 = 0
    /// What refunds left owed (device wallet).
    public private(set) var deficit: Int64 = 0
    /// The unlocked entitlements.
    public private(set) var entitlements: [String] = []
    /// Every currency's balance by id (``CofferSDK/balances()``): the default currency's is ``balance``.
    public private(set) var balances: [String: Int64] = [:]
    /// Credits that end, soonest first (``CofferSDK/expiring()``): show them, so a customer knows what ends when.
    public private(set) var expiring: [CofferSDK.Expiring] = []
    /// Loyalty progress per subscription group of the catalog's loyalty rules.
    public private(set) var loyalty: [LoyaltyProgress] = []
    /// The purchase history, newest first.
    public private(set) var history: [HistoryLine] = []
    /// Whether the server's backup holds the device's balance.
    public private(set) var backup: CofferSDK.BackupStatus = .none
    /// The Support ID the customer quotes to support.
    public private(set) var supportId: String?
    /// Verify Purchases' results in words, after ``verifyPurchases()``.
    public private(set) var verifyResults: [String] = []
    /// "Move to my Apple account": what to tell support, after ``moveToAppleAccount()``.
    public private(set) var mergeCodeWords: String?
    /// The subscription group whose loyalty lifetime was just earned: show the celebration, then call
    /// ``celebrated()``. Set once per customer.
    public private(set) var celebration: String?
    /// The subscription group whose subscription just ended without a refund: say so and offer to subscribe again
    /// or manage it, then call ``lapseShown()``.
    public private(set) var lapsed: String?
    /// Whether a parent or guardian withdrew consent for the account while the app ran (Apple's RESCIND_CONSENT):
    /// stop offering purchases until consent is given again.
    public private(set) var consentRescinded = false
    /// What failed last, in words; `nil` after the next success.
    public private(set) var lastError: String?
    /// Whether a refresh is running.
    public private(set) var isRefreshing = false

    private var productNames: [String: String] = [:]
    /// Celebrations shown by this model (their acknowledgement reaches the SDK a moment later).
    private var shownCelebrations: Set<String> = []

    /// A model over `sdk`, showing what the app showed when it last ran (``CofferSDK/cachedStart``) until the first
    /// refresh: the entitlement gate never flashes, the balance never starts at zero.
    public init(sdk: CofferSDK) {
        self.sdk = sdk
        let start = sdk.cachedStart
        (balance, deficit, entitlements) = (start.balance, start.deficit, start.entitlements)
    }

    /// Keeps the model current until the calling task is cancelled: a refresh now, then one after each change
    /// the SDK reports.
    public func run() async {
        let changes = await sdk.changes()
        // A lifetime earned while no screen listened (at launch, say) is celebrated now.
        if let pending = try? await sdk.pendingMilestones().first { celebrate(pending) }
        // StoreKit's entitlements first (no server step): the cached ones give way at once, even to a server that
        // does not answer.
        await attempt { entitlements = try await sdk.evaluateEntitlements().names }
        await reload()
        for await change in changes {
            switch change {
            case .loyaltyLifetimeEarned(let group):
                celebrate(group)
            case .subscriptionLapsed(let group):
                lapsed = group
            case .entitlements(let names):
                entitlements = names
                await refreshLoyalty()
            case .balance(let wallet):
                // A change made in play: the model takes it as it is, and asks the server nothing.
                (balance, deficit) = (wallet.balance, wallet.deficit)
                balances[await sdk.catalog.defaultCurrency.rawValue] = wallet.balance
                await attempt { backup = try await sdk.knownBackupStatus() }
            case .backup:
                // A backup written (or the server's taken): the balance from the local ledger, no request.
                await attempt {
                    let wallet = try await sdk.localWallet()
                    (balance, deficit) = (wallet.balance, wallet.deficit)
                    balances[await sdk.catalog.defaultCurrency.rawValue] = wallet.balance
                    backup = try await sdk.knownBackupStatus()
                }
            case .wallet:
                await reload()
            case .consentRescinded:
                consentRescinded = true
            }
        }
    }

    /// The balance title's refresh button: first picks up what the server holds for the customer (support's grants,
    /// its balance edits, refunds Apple told it of, the outbox: ``CofferSDK/enteredForeground()``), then reads
    /// everything again.
    public func refresh() async {
        isRefreshing = true
        defer { isRefreshing = false }
        await attempt { _ = try await sdk.enteredForeground() }
        await reload()
    }

    /// Reads everything again from the SDK (after a change it reported).
    func reload() async {
        isRefreshing = true
        defer { isRefreshing = false }
        await attempt {
            supportId = await sdk.credentials?.supportId
            if sdk.configuration.wallet == .device {
                let wallet = try await sdk.localWallet()
                (balance, deficit) = (wallet.balance, wallet.deficit)
                balances = [await sdk.catalog.defaultCurrency.rawValue: wallet.balance]
            } else {
                let wallet = try await sdk.currencyWallet()
                (balance, deficit, balances, expiring) = (wallet.balance, 0, wallet.balances, wallet.expiring)
            }
            backup = try await sdk.backupStatus()
        }
        await refreshLoyalty()
        await attempt {
            if productNames.isEmpty, let products = try? await sdk.products() {
                productNames = Dictionary(products.map { ($0.id, $0.displayName) }) { first, _ in first }
            }
            history = try await sdk.history().map {
                HistoryLine(item: $0, productName: productNames[$0.productId] ?? $0.productId)
            }
        }
    }

    /// The lapse was shown.
    public func lapseShown() { lapsed = nil }

    /// Buys a product; the model refreshes from the change it makes.
    @discardableResult
    public func purchase(_ productId: String, quantity: Int = 1) async -> PurchaseResult? {
        var result: PurchaseResult?
        await attempt { result = try await sdk.purchase(productId: productId, quantity: quantity) }
        await refresh()
        return result
    }

    /// Buys a subscription with an offer (``CofferSDK/purchase(_:offer:)``); the model refreshes from the change it
    /// makes.
    @discardableResult
    public func purchase(_ productId: String, offer: CofferOffer) async -> PurchaseResult? {
        var result: PurchaseResult?
        await attempt { result = try await sdk.purchase(productId, offer: offer) }
        await refresh()
        return result
    }

    /// "Verify Purchases", with its results in words in ``verifyResults``.
    public func verifyPurchases() async {
        await attempt {
            verifyResults = try await sdk.verifyPurchases().map { item in
                let name = productNames[item.transaction.productId] ?? item.transaction.productId
                return "\(name) (\(item.transaction.transactionId)): \(Self.words(item.verdict))"
            }
            if verifyResults.isEmpty { verifyResults = ["No purchases to verify."] }
        }
        await refresh()
    }

    /// "Move to my Apple account": asks for a one-time merge code and puts what to tell support in
    /// ``mergeCodeWords``.
    public func moveToAppleAccount() async {
        await attempt {
            let answer = try await sdk.mergeCode()
            mergeCodeWords = Self.words(
                mergeCode: answer.code, expiresAt: answer.expiresAt, appleAccount: answer.appleAccount)
        }
    }

    /// What the customer tells support with a merge code: an anonymous install's moves its purchases to their
    /// Apple account; an Apple account's lets another install of theirs sign in as them, so it says to give it only
    /// to support the customer wrote to themself.
    public static func words(mergeCode code: String, expiresAt: Date, appleAccount: Bool = false) -> String {
        let until = "It works once, until " + expiresAt.formatted(date: .omitted, time: .shortened) + "."
        guard appleAccount else {
            return "Tell support your Support ID and this code: \(code). It moves this install's purchases to your "
                + "Apple account. " + until
        }
        return "This code lets support move another install of yours into this Apple account, where it signs in as "
            + "you: \(code). Give it, with your Support ID, only to support you wrote to yourself. " + until
    }

    /// Shows the App Store's subscription management (the loyalty celebration's "Manage Subscription", a Settings
    /// row); a failure is kept in ``lastError``.
    public func manageSubscriptions() async {
        await attempt { try await sdk.manageSubscriptions() }
    }

    /// What the loyalty celebration says, in the customer's words (seed 002).
    public struct CelebrationWords: Sendable, Equatable {
        /// The headline: the app is theirs.
        public var title: String
        /// Why, and that the subscription is no longer needed.
        public var message: String
        /// The button that opens the subscription management sheet.
        public var manage: String
        /// The button that closes the celebration.
        public var close: String
    }

    /// The loyalty celebration's words: the app is theirs to keep, everything the subscription unlocks stays
    /// unlocked, and they no longer need the subscription, which they can cancel from the button that follows.
    public nonisolated static func celebrationWords(appName: String) -> CelebrationWords {
        CelebrationWords(
            title: "\(appName) is yours",
            message: "Thank you for subscribing all this time. \(appName) is now yours to keep: everything your "
                + "subscription unlocks stays unlocked, even if it ends. You don't need the subscription anymore, "
                + "and you can cancel it whenever you like.",
            manage: "Manage Subscription", close: "Done")
    }

    /// The app's name as the customer sees it under its icon: the bundle's `CFBundleDisplayName`, else its
    /// `CFBundleName`, else "This app".
    public nonisolated static func appName(_ bundle: Bundle = .main) -> String {
        for key in ["CFBundleDisplayName", "CFBundleName"] {
            if let name = bundle.object(forInfoDictionaryKey: key) as? String, !name.isEmpty { return name }
        }
        return "This app"
    }

    /// The celebration was shown: it is not shown again, on any launch.
    public func celebrated() {
        guard let group = celebration else { return }
        celebration = nil
        shownCelebrations.insert(group)
        Task { [sdk] in try? await sdk.acknowledgeMilestone(group) }
    }

    private func celebrate(_ group: String) {
        guard celebration == nil, !shownCelebrations.contains(group) else { return }
        celebration = group
    }

    /// Whether the server's backup holds what this device holds (or nothing needs backing up).
    public var backupMatches: Bool {
        switch backup {
        case .matches, .notNeeded: true
        case .differs, .none: false
        }
    }

    /// The backup's status as the customer reads it.
    public var backupWords: String {
        switch backup {
        case .matches(let since):
            "Backed up \(since.formatted(date: .abbreviated, time: .shortened))"
        case .differs(let device, let server):
            "Not backed up yet: this device has \(device.formatted()), the backup \(server.formatted())"
        case .none: "Not backed up yet"
        case .notNeeded: "Kept safe on the server"
        }
    }

    /// A history line's status as the customer reads it.
    public nonisolated static func words(status: String) -> String {
        switch status {
        case "delivered": "Delivered"
        case CofferSDK.deliveredBefore: "Delivered before this update"
        case "refunded": "Refunded"
        case "waiting": "Waiting to be delivered"
        case "not delivered": "Not delivered: tap Verify Purchases"
        case "another device": "Delivered on another device"
        default: status
        }
    }

    /// A Verify Purchases verdict as the customer reads it.
    public nonisolated static func words(_ verdict: ReconciliationVerdict) -> String {
        switch verdict {
        case .deliverNow: "delivered now"
        case .alreadyRecorded: "delivered"
        case .finishOnly: "delivered earlier; completed with the App Store now"
        case .couldNotBeVerified: "could not be verified: contact support with your Support ID"
        }
    }

    private func refreshLoyalty() async {
        await attempt {
            let state = try await sdk.refreshEntitlements()
            entitlements = state.names
            loyalty = await sdk.catalog.loyalty.map { rule in
                let paid = state.paidPeriods[rule.group] ?? 0
                return LoyaltyProgress(
                    group: rule.group, paidPeriods: paid, requiredPeriods: rule.periods, isEarned: paid >= rule.periods)
            }
        }
    }

    private func attempt(_ body: () async throws -> Void) async {
        do {
            try await body()
            lastError = nil
        } catch {
            lastError = "\(error)"
        }
    }
}
