import CofferAppStore
import CofferCore
import CofferStoreKit
import Foundation

extension SimulatedAppStore {
    /// Marks a transaction finished on the account's devices; it is no longer replayed.
    public func finish(transactionId: String) {
        update(transactionId) { $0.finished = true }
        forged[transactionId]?.finished = true
    }

    /// The account's transactions as its device sees them, oldest first.
    /// Without ``SimulatorConfiguration/includeConsumableHistory``, finished consumables that were not refunded
    /// are left out, as on a real device.
    public func deviceTransactions(account: String) -> [StoreTransaction] {
        transactions.filter { record in
            record.account == account
                && (configuration.includeConsumableHistory || record.product.kind != .consumable
                    || !record.finished || record.isRevoked)
        }
        .map(storeTransaction)
    }

    /// Every transaction Apple holds for the account, oldest first, whatever its device shows (finished
    /// consumables included): what the App Store Server API's transaction history answers.
    public func accountTransactions(account: String) -> [StoreTransaction] {
        transactions.filter { $0.account == account }.map(storeTransaction)
    }

    /// The account's unfinished transactions, those StoreKit cannot verify (``forgeTransaction(account:productId:quantity:appAccountToken:)``)
    /// last, marked.
    public func unfinishedTransactions(account: String) -> [StoreTransaction] {
        transactions.filter { $0.account == account && !$0.finished }.map(storeTransaction)
            + unfinishedForged(account: account)
    }

    /// The latest transaction of each product the account is entitled to now.
    public func currentEntitlements(account: String) -> [StoreTransaction] {
        let now = clock.now()
        var latest: [String: SimulatedTransaction] = [:]
        for record in transactions where record.account == account && record.product.kind != .consumable {
            if let seen = latest[record.product.id], seen.purchaseDate > record.purchaseDate { continue }
            latest[record.product.id] = record
        }
        return latest.values.filter { record in
            guard !record.isRevoked, !record.isUpgraded else { return false }
            if let key = subscriptionKeyFor(record), let subscription = subscriptions[key],
                record.id == subscription.latestTransactionId || record.familyShared
            {
                return subscription.state == .gracePeriod || (record.expiresDate ?? now) > now
            }
            return (record.expiresDate ?? .distantFuture) > now
        }
        .sorted { $0.purchaseDate < $1.purchaseDate }
        .map(storeTransaction)
    }

    /// The account's device in one answer, for a StoreKit provider in another process: the unfinished
    /// transactions StoreKit cannot verify are among `transactions`, marked.
    public func deviceState(account: String) -> SimulatedDeviceState {
        SimulatedDeviceState(
            transactions: deviceTransactions(account: account) + unfinishedForged(account: account),
            unfinished: unfinishedTransactions(account: account).map(\.id),
            entitled: currentEntitlements(account: account).map(\.id),
            gracePeriods: gracePeriods(
                account: account, groups: catalog.products.compactMap { $0.group.map(Self.groupId) }))
    }

    /// A stream of the account's transaction updates that starts with every unfinished transaction.
    public func updates(account: String) -> AsyncStream<StoreTransaction> {
        let (stream, continuation) = AsyncStream<StoreTransaction>.makeStream()
        let id = UUID()
        updateStreams[account, default: [:]][id] = continuation
        for transaction in unfinishedTransactions(account: account) { continuation.yield(transaction) }
        continuation.onTermination = { [weak self] _ in
            Task { await self?.dropStream(account: account, id: id) }
        }
        return stream
    }

    func dropStream(account: String, id: UUID) { updateStreams[account]?[id] = nil }

    /// A device of `account`, standing in for StoreKit.
    public nonisolated func device(account: String) -> SimulatedDevice {
        SimulatedDevice(store: self, account: account)
    }

    /// The account's app transaction, signed.
    public func signedAppTransaction(account: String) throws(SimulatorError) -> String {
        var app = AppTransaction()
        app.rawReceiptType = environment(of: account).rawValue
        app.appAppleId = configuration.appAppleId
        app.bundleId = configuration.bundleId
        app.applicationVersion = configuration.bundleVersion
        app.originalApplicationVersion = configuration.bundleVersion
        app.receiptCreationDate = clock.now()
        app.originalPurchaseDate = clock.now()
        app.appTransactionId = appTransactionId(account)
        app.rawOriginalPlatform = "iOS"
        return try sign(app)
    }
}
