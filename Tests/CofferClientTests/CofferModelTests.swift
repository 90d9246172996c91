import CofferClient
import CofferCore
import CofferSimulator
import CofferStore
import CofferStoreKit
import Foundation
import Observation
import Synchronization
import Testing

/// The seeds' screens' model, observed as SwiftUI would, against the simulator and a real server; and the
/// loyalty milestone, once per customer.
@Suite("SDK: the observable model", .timeLimit(.minutes(3)))
struct CofferModelTests {
    static let pro = "com.example.pro.monthly"
    static let products = [CatalogProduct(id: pro, kind: .autoRenewable, entitlements: ["premium"], group: "pro")]
    static let loyalty = [LoyaltyRule(group: "pro", periods: 2, entitlements: ["lifetime"])]

    /// Waits (up to 10 s) until `condition` holds on the main actor.
    @MainActor
    static func eventually(_ condition: @MainActor () -> Bool) async throws -> Bool {
        for _ in 0..<200 {
            if condition() { return true }
            try await Task.sleep(for: .milliseconds(50))
        }
        return condition()
    }

    @Test("the model follows purchases, grants and refunds, names products, and words Verify Purchases")
    func follows() async throws {
        try await PurchaseFlowTests.withWorld(
            wallet: .device, simulator: { $0.productNames = [PurchaseFlowTests.product: "100 Credits"] },
            Self.follows)
    }

    @MainActor
    static func follows(_ world: PurchaseFlowTests.World) async throws {
        do {
            let app = try world.app()
            try await app.launch()
            let model = CofferModel(sdk: app)
            let running = Task { await model.run() }
            defer { running.cancel() }
            #expect(try await Self.eventually { model.supportId != nil })

            // Observed as SwiftUI observes it: a change to the balance is announced.
            let announced = Mutex(false)
            withObservationTracking {
                _ = model.balance
            } onChange: {
                announced.withLock { $0 = true }
            }
            await model.purchase(PurchaseFlowTests.product, quantity: 2)
            #expect(model.balance == 200)
            #expect(announced.withLock { $0 })
            #expect(model.history.map(\.productName) == ["100 Credits"])
            #expect(model.history.first?.item.status == "delivered" && model.history.first?.item.credits == 200)

            // Support's grant reaches the model through the SDK's changes.
            let supportText = try #require(model.supportId)
            let supportId = try #require(SupportID(supportText))
            let user = try #require(try await world.serverStore.user(supportId: supportId, environment: .sandbox))
            try await world.serverStore.createGrant(
                Grant(
                    environment: .sandbox, recipient: user.id, credits: 500, reason: "Ticket #7", createdBy: "support",
                    createdAt: Date()))
            _ = try await app.refreshGrants()
            #expect(try await Self.eventually { model.balance == 700 })

            // Apple refunds the purchase after 150 were spent: the deficit shows.
            _ = try await app.spend(650)
            let id = try #require(model.history.first?.id)
            try await world.apple.refund(transactionId: id)
            #expect(try await app.refundCheck() == 1)
            #expect(try await Self.eventually { model.balance == 0 && model.deficit == 150 })
            #expect(try await Self.eventually { model.history.first?.item.status == "refunded" })

            await model.verifyPurchases()
            #expect(model.verifyResults == ["100 Credits (\(id)): delivered"])
            #expect(model.lastError == nil)
            await app.backupSettled()
            await model.refresh()
            #expect(model.backupMatches && model.backupWords.hasPrefix("Backed up "))
            guard case .matches = model.backup else {
                Issue.record("the backup does not match: \(model.backup), \(model.lastError ?? "no error")")
                return
            }
        }
    }

    @Test(
        "the loyalty lifetime is celebrated once per customer: not again after a refund and a renewal, nor after a reinstall"
    )
    func loyaltyMilestone() async throws {
        try await PurchaseFlowTests.withWorld(wallet: .device, products: Self.products, loyalty: Self.loyalty) {
            world in try await Self.loyaltyMilestone(world)
        }
    }

    @MainActor
    static func loyaltyMilestone(_ world: PurchaseFlowTests.World) async throws {
        do {
            let device = world.apple.device(account: "alice")
            let app = try world.app(device: device)
            try await app.launch()
            let model = CofferModel(sdk: app)
            let running = Task { await model.run() }
            defer { running.cancel() }
            let changes = await app.changes()
            let heard = Task {
                var earned: [String] = []
                for await change in changes {
                    if case .loyaltyLifetimeEarned(let group) = change { earned.append(group) }
                }
                return earned
            }
            guard case .delivered = try await app.purchase(productId: Self.pro) else {
                Issue.record("the subscription was not delivered")
                return
            }
            #expect(try await Self.eventually { model.loyalty.first?.paidPeriods == 1 })
            #expect(model.loyalty.first?.isEarned == false && model.loyalty.first?.fraction == 0.5)
            #expect(model.celebration == nil)

            try await world.apple.advanceClock(by: 31 * 86_400)  // the second paid period
            try await app.refreshEntitlements()
            #expect(try await Self.eventually { model.celebration == "pro" })
            #expect(
                try await Self.eventually {
                    model.loyalty.first?.isEarned == true && model.entitlements.contains("lifetime")
                })
            // The celebration's "Manage Subscription" opens the App Store's sheet, where the customer can cancel.
            await model.manageSubscriptions()
            #expect(device.sheetChoices.manageSubscriptionsShown == 1 && model.lastError == nil)
            model.celebrated()

            // A refund of the first period drops a paid one (the lifetime goes); the next renewal earns it back:
            // no second celebration.
            let first = try #require(await world.apple.accountTransactions(account: "alice").first?.id)
            try await world.apple.refund(transactionId: first)
            #expect(try await app.refreshEntitlements().hasLoyaltyLifetime == false)
            try await world.apple.advanceClock(by: 31 * 86_400)
            #expect(try await app.refreshEntitlements().hasLoyaltyLifetime)
            // After a reinstall (the identity survives in the Keychain), still never again.
            let reinstalled = try world.app()
            try await reinstalled.launch()
            #expect(try await reinstalled.refreshEntitlements().hasLoyaltyLifetime)
            try await Task.sleep(for: .milliseconds(200))
            heard.cancel()
            #expect(await heard.value == ["pro"])
            #expect(model.celebration == nil)
        }
    }

    @Test("the words the screens show: history statuses, Verify Purchases verdicts, the loyalty celebration")
    @MainActor
    func words() throws {
        // Seed 002: the app is theirs, and they no longer need the subscription.
        let celebration = CofferModel.celebrationWords(appName: "Takt")
        #expect(celebration.title == "Takt is yours")
        #expect(celebration.message.contains("Takt is now yours to keep"))
        #expect(celebration.message.contains("You don't need the subscription anymore"))
        #expect(celebration.manage == "Manage Subscription" && celebration.close == "Done")
        // A bundle that names no app (no Info.plist) says "This app".
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(UUID().uuidString)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        #expect(CofferModel.appName(try #require(Bundle(path: folder.path))) == "This app")
        #expect(CofferModel.words(status: "another device") == "Delivered on another device")
        #expect(CofferModel.words(status: "not delivered") == "Not delivered: tap Verify Purchases")
        #expect(CofferModel.words(.couldNotBeVerified) == "could not be verified: contact support with your Support ID")
        #expect(CofferModel.words(.finishOnly) == "delivered earlier; completed with the App Store now")
        // A merge code: an anonymous install's moves it; an Apple account's lets another install sign in as them.
        let until = Date(timeIntervalSince1970: 1_800_000_000)
        #expect(
            CofferModel.words(mergeCode: "K7QM-2XHP", expiresAt: until).hasPrefix(
                "Tell support your Support ID and this code: K7QM-2XHP. It moves this install's purchases"))
        let account = CofferModel.words(mergeCode: "K7QM-2XHP", expiresAt: until, appleAccount: true)
        #expect(account.contains("signs in as you: K7QM-2XHP") && account.contains("only to support you wrote to"))
    }

    @Test("the customer's two devices (one Apple account): the loyalty lifetime is celebrated on one, once")
    func milestoneOncePerCustomer() async throws {
        try await PurchaseFlowTests.withWorld(
            wallet: .server, serverOnSimulatedTime: true, products: Self.products, loyalty: Self.loyalty
        ) { world in
            let phone = try world.app(install: "phone", identity: .appleAccount)
            let pad = try world.app(install: "pad", identity: .appleAccount)
            try await phone.launch()
            try await pad.launch()
            #expect(await phone.credentials?.supportId == pad.credentials?.supportId)
            guard case .delivered = try await phone.purchase(productId: Self.pro) else {
                Issue.record("the subscription was not delivered")
                return
            }
            try await world.apple.advanceClock(by: 31 * 86_400)
            #expect(try await pad.refreshEntitlements().hasLoyaltyLifetime)
            #expect(try await phone.refreshEntitlements().hasLoyaltyLifetime)
            // The pad asked first: its screen celebrates; the phone's never does.
            #expect(try await pad.pendingMilestones() == ["pro"])
            #expect(try await phone.pendingMilestones().isEmpty)
            try await pad.acknowledgeMilestone("pro")
            #expect(try await pad.pendingMilestones().isEmpty)
            // Reinstalled (the identity survives in the Keychain): still never again.
            let reinstalled = try world.app(install: "pad", identity: .appleAccount)
            try await reinstalled.launch()
            #expect(try await reinstalled.refreshEntitlements().hasLoyaltyLifetime)
            #expect(try await reinstalled.pendingMilestones().isEmpty)
        }
    }
}
