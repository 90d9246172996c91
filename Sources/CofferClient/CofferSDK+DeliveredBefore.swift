import CofferCore
import CofferStoreKit
import Foundation

extension CofferSDK {
    /// On the install's first launch with Coffer, records what the app delivered before it used Coffer: every
    /// transaction StoreKit lists as finished then (non-consumables and subscriptions; StoreKit keeps finished
    /// consumables out of its history) is put on the ledger without credits
    /// (``LedgerEvent/deliveredBeforeCoffer(_:credits:)``), in the device wallet's local ledger and through the
    /// outbox on the server (`"previouslyDelivered": true`). Its entitlements count, the history shows it as
    /// delivered before Coffer, Verify Purchases never calls it unverified, and a refund takes back the catalog's
    /// credits as the old app would have. Runs once per install (a reinstall's records are duplicates the ledger
    /// ignores).
    ///
    /// - Returns: How many transactions it recorded now.
    @discardableResult
    func recordDeliveredBeforeCoffer() async throws -> Int {
        guard try state.value(Self.firstLaunchKey) == nil else { return 0 }
        let user = try await localUser()
        // Every transaction first, then the unfinished ones: one that arrives in between is unfinished, never taken for
        // an old one. One bought with this user's account token, or after the SDK first started, was bought through
        // Coffer: it is delivered as any purchase.
        let all = await storeKit.all()
        let unfinished = Set(await storeKit.unfinished().map(\.id))
        let started = try firstStart()
        var recorded = 0
        for transaction in all
        where !unfinished.contains(transaction.id) && catalog.product(id: transaction.productId) != nil
            && transaction.purchaseDate <= started && transaction.appAccountToken != user.appAccountToken
        {
            if try await boughtByAnotherUser(transaction) || state.isRemembered(id: transaction.id) { continue }
            let fact = Self.fact(transaction)
            // What a refund takes back in each currency, known before anything is marked: an amount past the ledger's
            // largest stops the launch here, with nothing remembered.
            // Refunded before Coffer too, it is recorded as delivered at 0: a later reversal restores nothing.
            let request = LedgerRequest(
                owner: user.id, environment: configuration.environment,
                event: .deliveredBeforeCoffer(fact, credits: try catalog.defaultCredits(for: fact)),
                policy: configuration.deficitPolicy, at: now())
            if configuration.wallet == .device { _ = try catalog.inEveryCurrency(request, allowances: false) }
            try state.set(Self.deliveredBeforeKey(transaction.id), "1")
            try state.remember(id: transaction.id, jws: transaction.jwsRepresentation, at: now())
            if configuration.wallet == .device { _ = try await applyInEveryCurrency(request) }
            recorded += 1
        }
        try state.set(Self.firstLaunchKey, String(now().timeIntervalSince1970))
        if recorded > 0 { publish(.wallet) }
        return recorded
    }

    /// When the SDK first started on this install (the initializer keeps it).
    func firstStart() throws -> Date {
        try state.value(Self.firstStartKey).flatMap(Double.init).map(Date.init(timeIntervalSince1970:)) ?? now()
    }

    /// The state's record of the SDK's first start.
    static let firstStartKey = "firstStartedAt"

    /// Whether the app delivered this transaction before it used Coffer (recorded at the first launch).
    func deliveredBeforeCoffer(_ transactionId: String) throws -> Bool {
        try state.value(Self.deliveredBeforeKey(transactionId)) != nil
    }

    /// The state's note that the first launch recorded what was delivered before Coffer.
    static let firstLaunchKey = "deliveredBeforeCofferRecordedAt"

    /// The state's note that a transaction was delivered before Coffer.
    static func deliveredBeforeKey(_ transactionId: String) -> String { "deliveredBeforeCoffer:" + transactionId }
}
