import CofferClient
import CofferCore
import CofferStore
import CofferStoreKit
import Foundation
import Testing

/// The SDK's updates listener, entitlements, purchase history and "Verify Purchases".
@Suite("SDK updates, entitlements and history", .timeLimit(.minutes(2)))
struct EntitlementsTests {
    typealias World = PurchaseFlowTests.World

    /// Waits until `condition` holds (the updates listener works in the background).
    static func eventually(_ condition: () async throws -> Bool) async throws -> Bool {
        for _ in 0..<100 {
            if try await condition() { return true }
            try await Task.sleep(for: .milliseconds(20))
        }
        return false
    }

    @Test("a refund heard on the updates stream takes the credits back and clears the entitlement it paid for")
    func updates() async throws {
        try await PurchaseFlowTests.withWorld(wallet: .device) { world in
            let app = try world.app()
            try await app.launch()
            let changes = try await app.entitlementUpdates()
            var iterator = changes.makeAsyncIterator()
            #expect(await iterator.next() == [])
            guard
                case .delivered(let credits, 300) = try await app.purchase(
                    productId: PurchaseFlowTests.product, quantity: 3)
            else {
                Issue.record("credits not delivered")
                return
            }
            guard case .delivered(let noAds, 0) = try await app.purchase(productId: PurchaseFlowTests.noAds) else {
                Issue.record("no-ads not delivered")
                return
            }
            #expect(try await app.refreshEntitlements().names == ["adFree"])
            #expect(await iterator.next() == ["adFree"])
            let listener = Task { await app.processUpdates() }
            #expect(try await Self.eventually { await app.isListening })
            try await world.apple.refund(transactionId: credits)
            try await world.apple.refund(transactionId: noAds)
            #expect(try await Self.eventually { try await app.localWallet().balance == 0 })
            #expect(try await Self.eventually { try await app.cachedEntitlements().isEmpty })
            #expect(await iterator.next() == [])
            listener.cancel()
            #expect(await app.lastUpdateFailure == nil)

            // The next launch shows the cached (empty) entitlements first; buying again unlocks again.
            let next = try world.app()
            #expect(try await next.cachedEntitlements().isEmpty)
            try await next.launch()
            _ = try await next.purchase(productId: PurchaseFlowTests.noAds)
            #expect(try await next.refreshEntitlements().names == ["adFree"])
            let history = try await next.history()
            #expect(history.map(\.status) == ["delivered", "refunded", "refunded"])
            #expect(history.last?.credits == 300)
        }
    }

    @Test("the device wallet takes back a prorated refund's share; a full refund later the rest")
    func proratedOnDevice() async throws {
        try await PurchaseFlowTests.withWorld(wallet: .device) { world in
            let app = try world.app()
            try await app.launch()
            guard
                case .delivered(let credits, 300) = try await app.purchase(
                    productId: PurchaseFlowTests.product, quantity: 3)
            else {
                Issue.record("credits not delivered")
                return
            }
            let listener = Task { await app.processUpdates() }
            #expect(try await Self.eventually { await app.isListening })
            try await world.apple.refund(transactionId: credits, percentage: 33_333)
            #expect(try await Self.eventually { try await app.localWallet().balance == 201 }, "99 of 300 taken")
            try await world.apple.refund(transactionId: credits)
            #expect(try await Self.eventually { try await app.localWallet().balance == 0 })
            listener.cancel()
            #expect(await app.lastUpdateFailure == nil)
        }
    }

    @Test("the refund check takes back a refund whose update was never heard, once")
    func refundCheck() async throws {
        try await PurchaseFlowTests.withWorld(wallet: .device) { world in
            let app = try world.app()
            try await app.launch()
            guard
                case .delivered(let id, 200) = try await app.purchase(productId: PurchaseFlowTests.product, quantity: 2)
            else {
                Issue.record("not delivered")
                return
            }
            try await world.apple.refund(transactionId: id)
            #expect(try await app.refundCheck() == 1)
            #expect(try await app.refundCheck() == 0)
            #expect(try await app.localWallet() == Wallet(balance: 0, deficit: 0))
        }
    }

    @Test("Verify Purchases delivers what Apple never saw fulfilled; the server vouches for what lost files knew")
    func verifyPurchases() async throws {
        try await PurchaseFlowTests.withWorld(wallet: .device) { world in
            // One purchase is delivered and finished by an earlier install of the app whose files are gone; the
            // server holds it for the customer.
            let other = try world.app()
            try await other.launch()
            _ = try await other.purchase(productId: PurchaseFlowTests.product)
            try FileManager.default.removeItem(at: world.folder.appendingPathComponent("app"))
            // Another is bought while the app dies before delivering it.
            let dying = try world.app(crashAfter: .purchased)
            await #expect(throws: PurchaseFlowTests.ProcessDied(step: .purchased)) {
                try await dying.purchase(productId: PurchaseFlowTests.product, quantity: 2)
            }
            let app = try world.app()
            let items = try await app.verifyPurchases()
            #expect(items.map(\.verdict).sorted { $0.rawValue < $1.rawValue } == [.alreadyRecorded, .deliverNow])
            #expect(await world.apple.unfinishedTransactions(account: "alice").isEmpty)
            let again = try await app.verifyPurchases()
            #expect(again.map(\.verdict) == [.alreadyRecorded, .alreadyRecorded])
            // Support sees the last run on the customer's page.
            var reports: [VerifyReport] = []
            for user in try await world.serverStore.users(
                environment: .sandbox, supportIdPrefix: nil, limit: 10, offset: 0)
            {
                if let report = try await world.serverStore.verifyReport(owner: user.id, environment: .sandbox) {
                    reports.append(report)
                }
            }
            #expect(reports.count == 1)
            #expect(reports.first?.items == again)
        }
    }
}
