import CofferAPI
import CofferCore
import CofferSimulator
import CofferStoreKit
import Foundation
import Testing

@testable import CofferClient

/// Customers who bought before Coffer: the first launch records what StoreKit lists as finished, so nothing is
/// "Not delivered", Verify Purchases calls nothing unverified, and a refund takes back what the old app gave.
@Suite("SDK: purchases delivered before Coffer", .timeLimit(.minutes(2)))
struct DeliveredBeforeTests {
    /// The simulator's devices list finished consumables too (`SKIncludeConsumableInAppPurchaseHistory`).
    static func consumableHistory(_ configuration: inout SimulatorConfiguration) {
        configuration.includeConsumableHistory = true
    }

    /// The old app bought and finished these before Coffer: 2 x 100 credits, and no ads.
    static func boughtBefore(_ world: PurchaseFlowTests.World) async throws -> (credits: String, noAds: String) {
        let device = world.apple.device(account: "alice")
        let credits = try #require(
            try await world.apple.purchase(account: "alice", productId: PurchaseFlowTests.product, quantity: 2)
                .transactionIds.first)
        let noAds = try #require(
            try await world.apple.purchase(account: "alice", productId: PurchaseFlowTests.noAds).transactionIds.first)
        await device.finish(transactionId: credits)
        await device.finish(transactionId: noAds)
        return (credits, noAds)
    }

    @Test(
        "the first launch records what the old app delivered: no credits, its entitlements, delivered before Coffer",
        arguments: WalletMode.allCases)
    func firstLaunch(wallet: WalletMode) async throws {
        try await PurchaseFlowTests.withWorld(wallet: wallet, simulator: Self.consumableHistory) { world in
            let (credits, noAds) = try await Self.boughtBefore(world)
            let app = try world.app()
            let report = try await app.launch()
            #expect(report.recovered.isEmpty && report.posted == 2)
            #expect(try await app.balance() == 0)
            #expect(try await app.refreshEntitlements().names == ["adFree"])
            let history = try await app.history()
            #expect(history.map(\.status) == [CofferSDK.deliveredBefore, CofferSDK.deliveredBefore])
            #expect(Set(history.map(\.transactionId)) == [credits, noAds])
            #expect(CofferModel.words(status: history[0].status) == "Delivered before this update")
            let verified = try await app.verifyPurchases()
            #expect(verified.count == 2 && verified.allSatisfy { $0.verdict == .alreadyRecorded })
            // The server holds both, recorded without credits.
            let token = try #require(await app.credentials?.token)
            let onServer = try await world.server.purchases(token: token)
            #expect(Set(onServer.filter { $0.deliveredBeforeCoffer == true }.map(\.transactionId)) == [credits, noAds])
            // A later launch records nothing again, and a new purchase is delivered as always.
            let again = try world.app()
            _ = try await again.launch()
            #expect(try await again.recordDeliveredBeforeCoffer() == 0)
            guard case .delivered(_, 100) = try await again.purchase(productId: PurchaseFlowTests.product) else {
                Issue.record("a purchase after the first launch was not delivered")
                return
            }
            #expect(try await again.balance() == 100)
        }
    }

    @Test("a refund of a purchase delivered before Coffer takes back what the old app gave, a deficit where spent")
    func refundTakesBack() async throws {
        try await PurchaseFlowTests.withWorld(wallet: .device, simulator: Self.consumableHistory) { world in
            let (credits, _) = try await Self.boughtBefore(world)
            let app = try world.app()
            _ = try await app.launch()
            // The game carried the old app's balance over: 50 of the 200 are left.
            #expect(try await app.earn(50, key: "moved-in") == 50)
            try await world.apple.refund(transactionId: credits)
            #expect(try await app.refundCheck() == 1)
            #expect(try await app.localWallet() == Wallet(balance: 0, deficit: 150))
            #expect(try await app.history().first { $0.transactionId == credits }?.status == "refunded")
        }
    }

    @Test(
        "a product giving several currencies is recorded in each ledger at the first launch; its refund takes back each"
    )
    func severalCurrencies() async throws {
        try await PurchaseFlowTests.withWorld(wallet: .device, simulator: Self.consumableHistory) { world in
            let (_, noAds) = try await Self.boughtBefore(world)
            let gems = try #require(Currency(rawValue: "gems"))
            var products = world.catalog.products
            let index = try #require(products.firstIndex { $0.id == PurchaseFlowTests.noAds })
            products[index].otherCredits = [gems: 5]
            let several = try Catalog(
                products: products,
                currencies: [
                    CurrencyDefinition(id: .credits, name: "Credits"), CurrencyDefinition(id: gems, name: "Gems"),
                ])
            let app = try world.app(offline: true, bundled: several)
            _ = try await app.launch()
            #expect(try await app.deliveredBeforeCoffer(noAds))
            #expect(try await app.refreshEntitlements().names == ["adFree"])
            // Recorded without credits in each currency: the old app gave what it gave.
            #expect(try await app.balances() == ["credits": 0, "gems": 0])
            let user = try await app.localUser()
            let receipt = try await app.ledger.receipt(transactionId: noAds, environment: .sandbox, currency: gems)
            #expect(receipt?.deliveredBeforeCoffer == true && receipt?.owner == user.id)
            // The game carried 2 of the old app's gems over; Apple refunds the purchase: 5 go back out, 3 owed.
            #expect(try await app.earn(2, of: "gems", key: "moved-in") == 2)
            try await world.apple.refund(transactionId: noAds)
            #expect(try await app.refundCheck() == 1)
            #expect(try await app.localWallets()[gems] == Wallet(balance: 0, deficit: 3))
        }
    }
}
