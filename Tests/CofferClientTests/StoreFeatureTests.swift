import CofferAPI
import CofferClient
import CofferCore
import CofferSimulator
import CofferStoreKit
import Foundation
import Testing

/// What StoreKit offers an app, through the SDK, against the simulator and a real server: products with
/// prices and intro-offer eligibility, Restore Purchases, refund requests, subscription management, offer
/// codes, and a history that does not need StoreKit to keep finished consumables.
@Suite("SDK: what StoreKit offers", .timeLimit(.minutes(3)))
struct StoreFeatureTests {
    static let pro = "com.example.pro.monthly"
    static let products = [CatalogProduct(id: pro, kind: .autoRenewable, entitlements: ["premium"], group: "pro")]

    static func simulator(_ configuration: inout SimulatorConfiguration) {
        configuration.productNames = [PurchaseFlowTests.product: "100 Credits", pro: "Pro"]
        configuration.prices = [PurchaseFlowTests.product: 4_990, pro: 9_990]
        configuration.currency = "EUR"
        configuration.introductoryOffers = [
            pro: StoreIntroductoryOffer(
                paymentMode: .freeTrial, price: 0, displayPrice: "EUR 0.00", period: StorePeriod(value: 1, unit: .week),
                periodCount: 1)
        ]
        configuration.offerCodes = ["SPRING": PurchaseFlowTests.noAds]
    }

    static func withWorld(wallet: WalletMode, _ body: @Sendable (PurchaseFlowTests.World) async throws -> Void)
        async throws
    {
        try await PurchaseFlowTests.withWorld(wallet: wallet, products: products, simulator: simulator, body)
    }

    @Test("products come in the catalog's order with names, prices, the currency and intro-offer eligibility")
    func products() async throws {
        try await Self.withWorld(wallet: .server) { world in
            let app = try world.app()
            try await app.launch()
            let products = try await app.products()
            #expect(products.map(\.id) == [PurchaseFlowTests.product, PurchaseFlowTests.noAds, Self.pro])
            let credits = try #require(products.first)
            #expect(credits.displayName == "100 Credits" && credits.price == Decimal(string: "4.99")!)
            #expect(credits.displayPrice == "EUR 4.99" && credits.currencyCode == "EUR" && credits.subscription == nil)
            #expect(products[1].displayName == PurchaseFlowTests.noAds)  // no name set: the id
            let pro = try #require(products.last?.subscription)
            #expect(
                pro.groupId == SimulatedAppStore.groupId("pro") && pro.period == StorePeriod(value: 1, unit: .month))
            #expect(pro.groupId.count == 8 && pro.groupId.allSatisfy(\.isNumber))  // App Store Connect's shape
            #expect(pro.introductoryOffer?.paymentMode == .freeTrial && pro.isEligibleForIntroOffer)
            guard case .delivered = try await app.purchase(productId: Self.pro) else {
                Issue.record("the subscription was not delivered")
                return
            }
            // Once subscribed in the group, the customer may not take its introductory offer again.
            #expect(try await app.products().last?.subscription?.isEligibleForIntroOffer == false)
        }
    }

    @Test("Restore Purchases delivers what was bought outside the app and reports it", arguments: WalletMode.allCases)
    func restore(wallet: WalletMode) async throws {
        try await Self.withWorld(wallet: wallet) { world in
            let app = try world.app()
            try await app.launch()
            try await world.apple.purchase(account: "alice", productId: PurchaseFlowTests.noAds)
            let items = try await app.restorePurchases()
            #expect(items.map(\.verdict) == [.deliverNow])
            #expect(try await app.cachedEntitlements() == ["adFree"])
            #expect(try await app.restorePurchases().map(\.verdict) == [.alreadyRecorded])
        }
    }

    @Test(
        "a finished consumable leaves StoreKit's history; the SDK's history and Verify Purchases still know it",
        arguments: WalletMode.allCases)
    func consumableHistory(wallet: WalletMode) async throws {
        try await Self.withWorld(wallet: wallet) { world in
            let device = world.apple.device(account: "alice")
            let app = try world.app(device: device)
            try await app.launch()
            guard
                case .delivered(let id, 300) = try await app.purchase(productId: PurchaseFlowTests.product, quantity: 3)
            else {
                Issue.record("not delivered")
                return
            }
            #expect(await device.all().isEmpty)
            let history = try await app.history()
            #expect(history.map(\.transactionId) == [id] && history.map(\.status) == ["delivered"])
            #expect(history.map(\.credits) == [300] && history.first?.productId == PurchaseFlowTests.product)
            #expect(try await app.verifyPurchases().map(\.verdict) == [.alreadyRecorded])
            // A refunded consumable is back in StoreKit's history (Apple lists refunded ones) and taken back once.
            try await world.apple.refund(transactionId: id)
            #expect(await device.all().map(\.id) == [id])
            #expect(try await app.refundCheck() == 1)
            #expect(try await app.history().map(\.status) == ["refunded"])
        }
    }

    @Test("a refund request goes to Apple, which asks the server; the refund Apple grants is taken back")
    func refundRequest() async throws {
        try await Self.withWorld(wallet: .device) { world in
            let device = world.apple.device(account: "alice")
            let app = try world.app(device: device)
            try await app.launch()
            guard case .delivered(let id, 100) = try await app.purchase(productId: PurchaseFlowTests.product) else {
                Issue.record("not delivered")
                return
            }
            let sent = await world.apple.sentNotifications().count
            device.sheetChoices.refundRequest = .userCancelled
            #expect(try await app.requestRefund(transactionId: id) == .userCancelled)
            #expect(await world.apple.sentNotifications().count == sent)
            device.sheetChoices.refundRequest = .success
            #expect(try await app.requestRefund(transactionId: id) == .success)
            #expect(await world.apple.sentNotifications().count == sent + 1)  // CONSUMPTION_REQUEST to the server
            await #expect(throws: SimulatorError.self) { try await app.requestRefund(transactionId: "999") }
            try await world.apple.refund(transactionId: id)
            #expect(try await app.refundCheck() == 1)
            #expect(try await app.balance() == 0)
        }
    }

    @Test("an offer code's purchase arrives through StoreKit's updates and is delivered once")
    func offerCode() async throws {
        try await Self.withWorld(wallet: .server) { world in
            let device = world.apple.device(account: "alice")
            let app = try world.app(device: device)
            try await app.launch()
            try await app.redeemOfferCode()  // the customer closes the sheet
            #expect(await world.apple.accountTransactions(account: "alice").isEmpty)
            device.sheetChoices.offerCode = "SPRING"
            try await app.redeemOfferCode()
            let listening = Task { await app.processUpdates() }
            defer { listening.cancel() }
            var entitlements: [String] = []
            for _ in 0..<100 where entitlements.isEmpty {
                try await Task.sleep(for: .milliseconds(50))
                entitlements = try await app.cachedEntitlements()
            }
            #expect(entitlements == ["adFree"])
            let redeemed = try #require(await world.apple.accountTransactions(account: "alice").first)
            #expect(redeemed.appAccountToken == nil)  // the sheet carries no account token
            #expect(try await world.serverRecords(app).receipts.map(\.transaction.transactionId) == [redeemed.id])
            #expect(await device.unfinished().isEmpty)
            device.sheetChoices.offerCode = "SPRING"
            await #expect(throws: SimulatorError.self) { try await app.redeemOfferCode() }  // once per account
        }
    }

    @Test("the subscription management sheet: auto-renew off keeps the period paid for, then it lapses")
    func manageSubscriptions() async throws {
        try await Self.withWorld(wallet: .device) { world in
            let device = world.apple.device(account: "alice")
            let app = try world.app(device: device)
            try await app.launch()
            guard case .delivered = try await app.purchase(productId: Self.pro) else {
                Issue.record("not delivered")
                return
            }
            #expect(try await app.refreshEntitlements().names == ["premium"])
            try await app.manageSubscriptions()  // the customer keeps it
            #expect(device.sheetChoices.manageSubscriptionsShown == 1)
            device.sheetChoices.cancelsSubscriptions = true
            try await app.manageSubscriptions()
            #expect(try await app.cachedEntitlements() == ["premium"])
            try await world.apple.advanceClock(by: 31 * 86_400)
            #expect(try await app.refreshEntitlements().names.isEmpty)
            #expect(await world.apple.accountTransactions(account: "alice").count == 1)  // nothing renewed
        }
    }

    @Test("a renewal whose billing fails keeps the subscription through Apple's grace period on the device")
    func gracePeriodOnDevice() async throws {
        try await Self.withWorld(wallet: .device) { world in
            let app = try world.app()
            try await app.launch()
            guard case .delivered = try await app.purchase(productId: Self.pro) else {
                Issue.record("not delivered")
                return
            }
            _ = try await world.apple.setBillingFails(account: "alice", true)
            // The week's free trial ends, the first renewal fails: the grace period (16 days) keeps it.
            try await world.apple.advanceClock(by: 8 * 86_400)
            let state = try await app.refreshEntitlements()
            #expect(state.names == ["premium"], "StoreKit is asked by the group id the transaction carries")
            try await world.apple.advanceClock(by: 20 * 86_400)
            #expect(try await app.refreshEntitlements().names.isEmpty)
        }
    }

    @Test("a subscription that ends is a lapse (CofferChange.subscriptionLapsed); a refunded one is not")
    func lapse() async throws {
        try await Self.withWorld(wallet: .device) { world in
            let device = world.apple.device(account: "alice")
            let app = try world.app(device: device)
            try await app.launch()
            let changes = await app.changes()
            guard case .delivered = try await app.purchase(productId: Self.pro) else {
                Issue.record("not delivered")
                return
            }
            #expect(try await app.refreshEntitlements().names == ["premium"])
            device.sheetChoices.cancelsSubscriptions = true
            try await app.manageSubscriptions()
            try await world.apple.advanceClock(by: 31 * 86_400)
            #expect(try await app.refreshEntitlements().names.isEmpty)
            var lapsed: [String] = []
            for await change in changes {
                if case .subscriptionLapsed(let group) = change {
                    lapsed.append(group)
                    break
                }
            }
            #expect(lapsed == ["pro"])
        }
        try await Self.withWorld(wallet: .device) { world in
            let app = try world.app()
            try await app.launch()
            guard case .delivered(let id, _) = try await app.purchase(productId: Self.pro) else {
                Issue.record("not delivered")
                return
            }
            #expect(try await app.refreshEntitlements().names == ["premium"])
            try await world.apple.refund(transactionId: id)
            let changes = await app.changes()
            #expect(try await app.refreshEntitlements().names.isEmpty)
            // The refresh published what it changed, and no lapse among it.
            var seen: [CofferChange] = []
            for await change in changes {
                seen.append(change)
                if case .entitlements = change { break }
            }
            #expect(!seen.contains { if case .subscriptionLapsed = $0 { true } else { false } })
        }
    }
}
