import CofferAPI
import CofferCore
import CofferSimulator
import CofferStoreKit
import Foundation
import Testing

@testable import CofferClient

/// Transactions StoreKit could not verify on the device (`VerificationResult.unverified`): nothing is delivered on
/// the device's word; the server judges the signed form; one it refuses is reported and finished, never met again.
@Suite("SDK: transactions StoreKit could not verify", .timeLimit(.minutes(2)))
struct UnverifiedTransactionTests {
    @Test(
        "a tampered transaction is refused by the server, finished and reported once; nothing is delivered",
        arguments: WalletMode.allCases)
    func tamperedIsFinished(wallet: WalletMode) async throws {
        try await PurchaseFlowTests.withWorld(wallet: wallet) { world in
            let forged = try #require(
                try await world.apple.forgeTransaction(account: "alice", productId: PurchaseFlowTests.product)
                    .transactionIds.first)
            #expect(await world.apple.device(account: "alice").all().allSatisfy { $0.id != forged })
            // Out of reach: nothing to judge it by, so it stays unfinished for the next launch (the server wallet's
            // launch stops at once: it needs the server).
            let offline = try world.app(offline: true)
            if wallet == .device {
                let away = try await offline.launch()
                #expect(away.unverified.isEmpty && away.recovered.isEmpty && away.offline)
            } else {
                await #expect(throws: SDKError.self) { try await offline.launch() }
            }
            #expect(await world.apple.forgeryFinished(forged) == false)
            let app = try world.app()
            let report = try await app.launch()
            #expect(report.recovered.isEmpty)
            #expect(report.unverified.count == 1 && report.unverified[0].hasPrefix("\(forged): 422"))
            #expect(try await app.unverifiedRefusal(forged)?.hasPrefix("422") == true)
            #expect(await world.apple.forgeryFinished(forged) == true)
            #expect(try await app.balance() == 0)
            #expect(try await app.pendingPosts().isEmpty)
            #expect(try await app.history().isEmpty)
            #expect(try await world.serverRecords(app).receipts.isEmpty)
            // The next launch does not meet it again.
            let again = try await world.app().launch()
            #expect(again.unverified.isEmpty && again.recovered.isEmpty)
        }
    }

    @Test("one arriving through the updates is refused, finished and named in the last update failure")
    func tamperedUpdate() async throws {
        try await PurchaseFlowTests.withWorld(wallet: .server) { world in
            let app = try world.app()
            _ = try await app.launch()
            let listening = Task { await app.processUpdates() }
            defer { listening.cancel() }
            let forged = try #require(
                try await world.apple.forgeTransaction(account: "alice", productId: PurchaseFlowTests.product)
                    .transactionIds.first)
            for _ in 0..<500 where await world.apple.forgeryFinished(forged) != true {
                try await Task.sleep(for: .milliseconds(10))
            }
            #expect(await world.apple.forgeryFinished(forged) == true)
            #expect(await app.lastUpdateFailure?.hasPrefix("\(forged): StoreKit could not verify it") == true)
            #expect(try await app.balance() == 0)
        }
    }

    @Test(
        "a purchase StoreKit could not verify: delivered once the server verifies it; refused there, an error and finished",
        arguments: WalletMode.allCases)
    func unverifiedPurchase(wallet: WalletMode) async throws {
        try await PurchaseFlowTests.withWorld(wallet: wallet) { world in
            let device = world.apple.device(account: "alice")
            // The device's check failed alone (its signed form is Apple's): the server's verdict delivers it.
            let app = try world.app(device: UnverifiedPurchases(device: device, tamper: false))
            _ = try await app.launch()
            guard case .delivered(let id, 100) = try await app.purchase(productId: PurchaseFlowTests.product) else {
                Issue.record("a purchase the server verified was not delivered")
                return
            }
            #expect(try await app.balance() == 100)
            #expect(await device.unfinished().isEmpty)
            #expect(try await app.unverifiedRefusal(id) == nil)
            // Tampered: the server refuses it, nothing is delivered, and it is finished.
            let tampered = try world.app(device: UnverifiedPurchases(device: device, tamper: true))
            var refusal: (id: String, why: String)?
            do {
                let outcome = try await tampered.purchase(productId: PurchaseFlowTests.product)
                Issue.record("a tampered purchase was not refused: \(outcome)")
            } catch SDKError.unverifiedPurchase(let refused, let why) {
                refusal = (refused, why)
            }
            let (refused, why) = try #require(refusal)
            #expect(why.hasPrefix("422"))
            #expect(try await tampered.balance() == 100)
            #expect(await device.unfinished().isEmpty)
            #expect(try await world.serverRecords(tampered).receipts.map(\.transaction.transactionId) == [id])
            #expect(refused != id)
        }
    }

    @Test("the device wallet delivers nothing when an unverified transaction's fields are not its signed form's")
    func fieldsNotSigned() async throws {
        try await PurchaseFlowTests.withWorld(wallet: .device) { world in
            let device = world.apple.device(account: "alice")
            // Apple's signed form of one credit pack, reported by the device as nine.
            let app = try world.app(device: UnverifiedPurchases(device: device, tamper: false, otherQuantity: 9))
            _ = try await app.launch()
            var why: String?
            do {
                let outcome = try await app.purchase(productId: PurchaseFlowTests.product)
                Issue.record("a purchase with fields of its own was delivered: \(outcome)")
            } catch SDKError.unverifiedPurchase(_, let reason) {
                why = reason
            }
            #expect(why?.contains("not those of its signed form") == true)
            #expect(try await app.balance() == 0)
            #expect(await device.unfinished().isEmpty)
        }
    }
}

/// A device whose StoreKit cannot verify its purchases: each purchase's transaction comes marked
/// `invalidDeviceVerification`, with Apple's signed form or, with `tamper`, one whose signature was changed, or, with
/// `otherQuantity`, Apple's signed form under a quantity of the device's own.
struct UnverifiedPurchases: StoreKitProvider {
    let device: SimulatedDevice
    let tamper: Bool
    var otherQuantity: Int?

    func purchase(productId: String, quantity: Int, appAccountToken: UUID?) async throws -> StorePurchaseResult {
        guard
            case .success(var transaction) = try await device.purchase(
                productId: productId, quantity: quantity, appAccountToken: appAccountToken)
        else { return .pending }
        transaction.verificationFailure = "invalidDeviceVerification"
        if let otherQuantity { transaction.quantity = otherQuantity }
        if tamper {
            // The signature's first byte changed: it no longer matches the header and payload.
            var parts = transaction.jwsRepresentation.split(separator: ".").map(String.init)
            let first = parts[2].removeFirst()
            parts[2] = (first == "A" ? "B" : "A") + parts[2]
            transaction.jwsRepresentation = parts.joined(separator: ".")
        }
        return .success(transaction)
    }

    func updates() async -> AsyncStream<StoreTransaction> { AsyncStream { $0.finish() } }
    func unfinished() async -> [StoreTransaction] { [] }
    func all() async -> [StoreTransaction] { await device.all() }
    func currentEntitlements() async -> [StoreTransaction] { await device.currentEntitlements() }
    func finish(transactionId: String) async { await device.finish(transactionId: transactionId) }
    func sync() async throws { try await device.sync() }
    func appTransaction(refresh: Bool) async -> String? { await device.appTransaction(refresh: refresh) }
    func products(ids: [String]) async throws -> [StoreProduct] { try await device.products(ids: ids) }
    func gracePeriods(groups: [String]) async -> [String: Date] { await device.gracePeriods(groups: groups) }
    func beginRefundRequest(transactionId: String) async throws -> RefundRequestStatus {
        try await device.beginRefundRequest(transactionId: transactionId)
    }
    func showManageSubscriptions() async throws { try await device.showManageSubscriptions() }
    func presentOfferCodeRedeemSheet() async throws { try await device.presentOfferCodeRedeemSheet() }
}
