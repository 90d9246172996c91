import CofferAPI
import CofferClient
import CofferCore
import Foundation
import Testing

/// The SDK with a catalog of several currencies (issue 39): in the server wallet every currency's balance comes
/// from the server and a spend names its currency; the device wallet keeps the default currency only and says so.
@Suite("SDK: several currencies")
struct CurrencySDKTests {
    static let (coins, gems) = (Currency(rawValue: "coins")!, Currency(rawValue: "gems")!)
    static let currencies = [CurrencyDefinition(id: coins, name: "Coins"), CurrencyDefinition(id: gems, name: "Gems")]
    static let gemPack = CatalogProduct(id: "com.example.gems", kind: .consumable, credits: 0, otherCredits: [gems: 30])

    @Test("server wallet: a purchase of gems shows in balances(); spending names its currency, once per key")
    func serverWallet() async throws {
        try await PurchaseFlowTests.withWorld(wallet: .server, products: [Self.gemPack], currencies: Self.currencies) {
            world in
            let app = try world.app()
            try await app.launch()
            _ = try await app.purchase(productId: Self.gemPack.id)
            _ = try await app.purchase(productId: PurchaseFlowTests.product)
            #expect(try await app.balances() == ["coins": 100, "gems": 30])
            #expect(try await app.balance() == 100)

            #expect(try await app.spend(12, of: "gems", key: "sword") == 18)
            #expect(try await app.spend(12, of: "gems", key: "sword") == 18)
            await #expect(throws: LedgerError.insufficientBalance(balance: 18, requested: 19)) {
                try await app.spend(19, of: "gems", key: "castle")
            }
            await #expect(throws: SDKError.self) { try await app.spend(1, of: "stars", key: "x") }
            // The default currency by its id is spend(_:key:).
            #expect(try await app.spend(40, of: "coins", key: "potion") == 60)
            #expect(try await app.balances() == ["coins": 60, "gems": 18])
        }
    }

    @Test("device wallet: balances() is the default currency's; another currency's spend is refused, nothing moves")
    func deviceWallet() async throws {
        try await PurchaseFlowTests.withWorld(wallet: .device, currencies: Self.currencies) { world in
            let app = try world.app()
            try await app.launch()
            _ = try await app.purchase(productId: PurchaseFlowTests.product)
            #expect(try await app.balances() == ["coins": 100])
            await #expect {
                try await app.spend(1, of: "gems", key: "x")
            } throws: { error in
                if case SDKError.currencyNotKept(let why) = error { why.contains("server wallet") } else { false }
            }
            #expect(try await app.balance() == 100)
        }
    }

    @Test("server wallet: a subscription's allowance shows in expiring(), and in the SwiftUI model's balances")
    func allowance() async throws {
        let pro = CatalogProduct(
            id: "com.example.pro", kind: .autoRenewable, entitlements: ["premium"], group: "pro", durationDays: 30,
            allowance: [Self.coins: 500, Self.gems: 5])
        try await PurchaseFlowTests.withWorld(
            wallet: .server, serverOnSimulatedTime: true, products: [pro], currencies: Self.currencies
        ) { world in
            try await Self.allowance(world, pro)
        }
    }

    @MainActor
    static func allowance(_ world: PurchaseFlowTests.World, _ pro: CatalogProduct) async throws {
        let app = try world.app()
        try await app.launch()
        #expect(try await app.expiring() == [])
        _ = try await app.purchase(productId: pro.id)
        #expect(try await app.balances() == ["coins": 500, "gems": 5])
        let expiring = try await app.expiring()
        #expect(expiring.map(\.amount).sorted() == [5, 500] && Set(expiring.map(\.currency)) == ["coins", "gems"])
        #expect(expiring.allSatisfy { $0.expiresAt > PurchaseFlowTests.start.addingTimeInterval(29 * 86_400) })
        let model = CofferModel(sdk: app)
        await model.refresh()
        #expect(model.balances == ["coins": 500, "gems": 5] && model.balance == 500)
        #expect(model.expiring.count == 2)
        // A spend takes the allowance first; the model reads it again.
        #expect(try await app.spend(2, of: "gems", key: "potion") == 3)
        await model.refresh()
        #expect(model.balances["gems"] == 3 && model.expiring.first { $0.currency == "gems" }?.amount == 3)
    }
}
