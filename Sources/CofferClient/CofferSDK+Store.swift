import CofferCore
import CofferStoreKit
import Foundation

extension CofferSDK {
    /// The catalog's products as the App Store presents them to this customer, in the catalog's order:
    /// localized names and prices, the currency, and for a subscription its period, introductory offer and
    /// whether the customer may still take it. Products the App Store does not sell are left out.
    public func products() async throws -> [StoreProduct] {
        let ids = catalog.products.map(\.id)
        let offered = try await storeKit.products(ids: ids)
        return ids.compactMap { id in offered.first { $0.id == id } }
    }

    /// "Restore Purchases": syncs with the App Store (`AppStore.sync()`, which may ask the customer to sign
    /// in: call it from the button only); an install that started as a customer of its own because its
    /// AppTransaction was too old joins the Apple account's customer (`AppTransaction.refresh()`, also on this tap
    /// only, while the install holds nothing of its own); then verifies every purchase as ``verifyPurchases()``
    /// does (what was never delivered is delivered now) and refreshes the entitlements.
    ///
    /// - Returns: Verify Purchases' results.
    public func restorePurchases() async throws -> [ReconciliationItem] {
        try await storeKit.sync()
        // The customer's own tap: the one place the SDK may refresh the AppTransaction (it may ask them to sign in).
        do {
            try await joinAppleAccount()
        } catch let error as ServerClientError {
            // Out of reach or refused now: asked again on the next Restore Purchases.
            configuration.log(.warning, .launch, "joining the Apple account's customer waits: \(error)")
        }
        let items = try await verifyPurchases()
        try await refreshEntitlements()
        return items
    }

    /// Shows Apple's refund request sheet for one of the customer's transactions. Apple decides later: a granted
    /// refund comes back as a revoked transaction and a notification to the server, and is taken back once
    /// like any refund.
    public func requestRefund(transactionId: String) async throws -> RefundRequestStatus {
        try await storeKit.beginRefundRequest(transactionId: transactionId)
    }

    /// Shows the App Store's subscription management sheet, then refreshes the entitlements.
    public func manageSubscriptions() async throws {
        try await storeKit.showManageSubscriptions()
        try await refreshEntitlements()
    }

    /// Shows the sheet where the customer redeems an offer code. What the code buys arrives as a transaction
    /// through StoreKit's updates (``processUpdates()`` delivers it, or the next launch does).
    public func redeemOfferCode() async throws {
        try await storeKit.presentOfferCodeRedeemSheet()
    }
}
