import CofferAppStore
import CofferSimulator
import CofferStoreKit
import Foundation
import Testing

/// The simulator's scenarios: what a customer does, what Apple would sign and send.
@Suite("App Store simulator scenarios", .timeLimit(.minutes(1)))
struct ScenarioTests {
    @Test("a subscription renews 12 times with one refund")
    func twelveRenewalsOneRefund() async throws {
        let fixture = try SimulatorFixture()
        let token = UUID()
        let bought = try await fixture.store.purchase(
            account: "alice", productId: "com.example.pro.monthly", appAccountToken: token)
        let original = try #require(bought.transactionIds.first)
        let renewed = try await fixture.store.advanceClock(by: 12 * 30 * 86_400 + 3_600)
        #expect(renewed.transactionIds.count == 12)
        let refunded = renewed.transactionIds[4]
        try await fixture.store.refund(transactionId: refunded)

        let types = try await fixture.notificationTypes()
        #expect(types == ["SUBSCRIBED/INITIAL_BUY"] + Array(repeating: "DID_RENEW", count: 12) + ["REFUND"])
        let notifications = try await fixture.notifications()
        let renewals = notifications.filter { $0.payload.rawNotificationType == "DID_RENEW" }.compactMap(\.transaction)
        #expect(renewals.count == 12)
        #expect(Set(renewals.map(\.originalTransactionId)) == [original])
        #expect(renewals.allSatisfy { $0.appAccountToken == token })
        // Each period starts where the one before ended.
        let periods = notifications.compactMap(\.transaction).filter { $0.rawRevocationType == nil }
        for (earlier, later) in zip(periods, periods.dropFirst()) {
            #expect(earlier.expiresDate == later.purchaseDate)
        }
        let refund = try #require(notifications.last?.transaction)
        #expect(refund.transactionId == refunded)
        #expect(refund.revocationDate != nil)
        #expect(refund.rawRevocationType == "REFUND_FULL")
        #expect(notifications.last?.renewalInfo?.originalTransactionId == original)

        // The refunded period was not the latest, so the subscription is still live.
        let entitlements = await fixture.store.currentEntitlements(account: "alice")
        #expect(entitlements.map(\.productId) == ["com.example.pro.monthly"])
        let statuses = try await fixture.store.subscriptionStatuses(original)
        #expect(statuses.data?.first?.lastTransactions?.first?.rawStatus == 1)
        let refunds = try await fixture.store.refundHistory(original, revision: nil)
        #expect(refunds.signedTransactions?.count == 1)
    }

    @Test("a consumable bought with quantity 3, then refunded")
    func consumableQuantityThreeRefunded() async throws {
        let fixture = try SimulatorFixture()
        let bought = try await fixture.store.purchase(account: "bob", productId: "com.example.credits", quantity: 3)
        let id = try #require(bought.transactionIds.first)
        try await fixture.store.refund(transactionId: id)
        let notifications = try await fixture.notifications()
        #expect(notifications.map { $0.payload.rawNotificationType } == ["ONE_TIME_CHARGE", "REFUND"])
        let purchase = try #require(notifications.first?.transaction)
        #expect(purchase.quantity == 3)
        #expect(purchase.rawType == "Consumable")
        #expect(purchase.price == 2_970)
        #expect(purchase.revocationDate == nil)
        let refund = try #require(notifications.last?.transaction)
        #expect(refund.transactionId == id)
        #expect(refund.quantity == 3)
        #expect(refund.revocationDate == SimulatorFixture.start)
        #expect(refund.rawRevocationType == "REFUND_FULL")
        #expect(notifications.last?.renewalInfo == nil)
        // A second refund of the same transaction is refused and changes nothing.
        await #expect(throws: SimulatorError.self) { try await fixture.store.refund(transactionId: id) }
        #expect(try await fixture.notifications().count == 2)
    }

    @Test("Ask to Buy: declined gives nothing; approved arrives through updates")
    func askToBuy() async throws {
        let fixture = try SimulatorFixture()
        let device = fixture.store.device(account: "kid")
        device.nextOutcome = .askToBuy
        let result = try await device.purchase(productId: "com.example.noads", quantity: 1, appAccountToken: nil)
        #expect(result == .pending)
        let history = await fixture.store.history(account: "kid")
        #expect(history.transactions.isEmpty)
        // The pending id is in the report of a direct request; ask again to get one to decline.
        let declined = try await fixture.store.purchase(
            account: "kid", productId: "com.example.noads", outcome: .askToBuy)
        try await fixture.store.answerAskToBuy(try #require(declined.pendingId), approve: false)
        #expect(await fixture.store.deviceTransactions(account: "kid").isEmpty)
        #expect(try await fixture.notifications().isEmpty)
        await #expect(throws: SimulatorError.self) {
            try await fixture.store.answerAskToBuy(try #require(declined.pendingId), approve: true)
        }

        let updates = await device.updates()
        let approved = try await fixture.store.purchase(
            account: "kid", productId: "com.example.noads", outcome: .askToBuy)
        try await fixture.store.answerAskToBuy(try #require(approved.pendingId), approve: true)
        var iterator = updates.makeAsyncIterator()
        let arrived = try #require(await iterator.next())
        #expect(arrived.productId == "com.example.noads")
        #expect(try await fixture.notificationTypes() == ["ONE_TIME_CHARGE"])
    }

    @Test("a cancelled purchase changes nothing")
    func cancelled() async throws {
        let fixture = try SimulatorFixture()
        let device = fixture.store.device(account: "carol")
        device.nextOutcome = .userCancelled
        #expect(
            try await device.purchase(productId: "com.example.credits", quantity: 1, appAccountToken: nil)
                == .userCancelled)
        #expect(await device.all().isEmpty)
        #expect(try await fixture.notifications().isEmpty)
    }

    @Test("unfinished transactions are replayed at every launch until finished")
    func unfinishedReplayed() async throws {
        let fixture = try SimulatorFixture()
        let device = fixture.store.device(account: "dave")
        guard
            case .success(let transaction) = try await device.purchase(
                productId: "com.example.credits", quantity: 2, appAccountToken: nil)
        else {
            Issue.record("the purchase did not succeed")
            return
        }
        #expect(try await fixture.verifier.verifyTransaction(transaction.jwsRepresentation).quantity == 2)
        for _ in 0..<2 {
            var launch = await device.updates().makeAsyncIterator()
            #expect(await launch.next()?.id == transaction.id)
        }
        #expect(await device.unfinished().map(\.id) == [transaction.id])
        await device.finish(transactionId: transaction.id)
        #expect(await device.unfinished().isEmpty)
        // A finished consumable leaves the device's history, as on an iPhone without
        // SKIncludeConsumableInAppPurchaseHistory; Apple still holds it.
        #expect(await device.all().isEmpty)
        #expect(await fixture.store.accountTransactions(account: device.account).map(\.id) == [transaction.id])
    }

    @Test("billing retry with a grace period, then recovery; later, billing retry gives up")
    func billingRetry() async throws {
        let fixture = try SimulatorFixture()
        let bought = try await fixture.store.purchase(account: "erin", productId: "com.example.pro.monthly")
        let original = try #require(bought.transactionIds.first)
        try await fixture.store.setBillingFails(account: "erin", true)
        try await fixture.store.advanceClock(by: 31 * 86_400)
        #expect(await fixture.store.currentEntitlements(account: "erin").count == 1)  // in the grace period
        try await fixture.store.advanceClock(by: 16 * 86_400)
        #expect(await fixture.store.currentEntitlements(account: "erin").isEmpty)  // grace over
        try await fixture.store.setBillingFails(account: "erin", false)
        #expect(await fixture.store.currentEntitlements(account: "erin").count == 1)
        try await fixture.store.setBillingFails(account: "erin", true)
        try await fixture.store.advanceClock(by: 100 * 86_400)
        #expect(
            try await fixture.notificationTypes() == [
                "SUBSCRIBED/INITIAL_BUY", "DID_FAIL_TO_RENEW/GRACE_PERIOD", "GRACE_PERIOD_EXPIRED",
                "DID_RENEW/BILLING_RECOVERY", "DID_FAIL_TO_RENEW/GRACE_PERIOD", "GRACE_PERIOD_EXPIRED",
                "EXPIRED/BILLING_RETRY",
            ])
        let failed = try #require(try await fixture.notifications()[1].renewalInfo)
        #expect(failed.isInBillingRetryPeriod == true)
        #expect(failed.gracePeriodExpiresDate != nil)
        #expect(
            try await fixture.store.subscriptionStatuses(original).data?.first?.lastTransactions?.first?.rawStatus == 2)
    }

    @Test("upgrade takes effect at once, downgrade at the next renewal; expire and resubscribe")
    func upgradeDowngrade() async throws {
        let fixture = try SimulatorFixture()
        let monthly = try await fixture.store.purchase(account: "fay", productId: "com.example.pro.monthly")
        let original = try #require(monthly.transactionIds.first)
        try await fixture.store.advanceClock(by: 10 * 86_400)
        let upgrade = try await fixture.store.purchase(account: "fay", productId: "com.example.pro.yearly")
        let yearly = try #require(upgrade.transactionIds.first)
        #expect(await fixture.store.currentEntitlements(account: "fay").map(\.productId) == ["com.example.pro.yearly"])
        #expect(await fixture.store.deviceTransactions(account: "fay").first?.isUpgraded == true)
        try await fixture.store.purchase(account: "fay", productId: "com.example.pro.monthly")
        try await fixture.store.advanceClock(by: 366 * 86_400)
        let latest = try #require(await fixture.store.deviceTransactions(account: "fay").last)
        #expect(latest.productId == "com.example.pro.monthly")
        #expect(latest.originalId == original)
        try await fixture.store.expireNow(originalTransactionId: original)
        #expect(await fixture.store.currentEntitlements(account: "fay").isEmpty)
        try await fixture.store.purchase(account: "fay", productId: "com.example.pro.monthly")
        #expect(
            try await fixture.notificationTypes() == [
                "SUBSCRIBED/INITIAL_BUY", "DID_CHANGE_RENEWAL_PREF/UPGRADE", "DID_CHANGE_RENEWAL_PREF/DOWNGRADE",
                "DID_RENEW", "DID_CHANGE_RENEWAL_STATUS/AUTO_RENEW_DISABLED", "EXPIRED/VOLUNTARY",
                "SUBSCRIBED/RESUBSCRIBE",
            ])
        #expect(yearly != original)
    }

    @Test("refunds: prorated, declined after a consumption request, reversed")
    func refunds() async throws {
        let fixture = try SimulatorFixture()
        let bought = try await fixture.store.purchase(account: "gus", productId: "com.example.pro.yearly")
        let id = try #require(bought.transactionIds.first)
        let credits = try await fixture.store.purchase(account: "gus", productId: "com.example.credits")
        let creditsId = try #require(credits.transactionIds.first)
        try await fixture.store.requestRefund(transactionId: creditsId)
        try await fixture.store.declineRefund(transactionId: creditsId)
        try await fixture.store.refund(transactionId: id, percentage: 50_000)
        #expect(await fixture.store.currentEntitlements(account: "gus").isEmpty)
        try await fixture.store.reverseRefund(transactionId: id)
        #expect(await fixture.store.currentEntitlements(account: "gus").map(\.id) == [id])
        let notifications = try await fixture.notifications()
        #expect(
            notifications.map { $0.payload.rawNotificationType ?? "" } == [
                "SUBSCRIBED", "ONE_TIME_CHARGE", "CONSUMPTION_REQUEST", "REFUND_DECLINED", "REFUND", "REFUND_REVERSED",
            ])
        #expect(notifications[2].payload.data?.rawConsumptionRequestReason == "UNINTENDED_PURCHASE")
        #expect(notifications[4].transaction?.rawRevocationType == "REFUND_PRORATED")
        #expect(notifications[4].transaction?.revocationPercentage == 50_000)
        #expect(notifications[5].transaction?.revocationDate == nil)
    }

    @Test("family sharing: members get shared transactions, revoked when the buyer leaves or is refunded")
    func familySharing() async throws {
        let fixture = try SimulatorFixture()
        await fixture.store.formFamily(["parent", "child", "teen"])
        let bought = try await fixture.store.purchase(account: "parent", productId: "com.example.noads")
        #expect(bought.transactionIds.count == 3)
        let shared = try #require(await fixture.store.deviceTransactions(account: "child").first)
        #expect(shared.isFamilyShared)
        let decoded = try await fixture.verifier.verifyTransaction(shared.jwsRepresentation)
        #expect(decoded.rawInAppOwnershipType == "FAMILY_SHARED")
        // Consumables are never shared.
        try await fixture.store.purchase(account: "parent", productId: "com.example.credits")
        #expect(await fixture.store.deviceTransactions(account: "child").count == 1)
        try await fixture.store.leaveFamily("teen")
        #expect(await fixture.store.currentEntitlements(account: "teen").isEmpty)
        try await fixture.store.refund(transactionId: try #require(bought.transactionIds.first))
        #expect(await fixture.store.currentEntitlements(account: "child").isEmpty)
        #expect(
            try await fixture.notificationTypes() == [
                "ONE_TIME_CHARGE", "ONE_TIME_CHARGE", "REVOKE", "REFUND", "REVOKE",
            ])
    }

    @Test("bad requests are refused and change nothing")
    func refusals() async throws {
        let fixture = try SimulatorFixture()
        await #expect(throws: SimulatorError("unknown-product", "com.example.nope is not in the catalog")) {
            try await fixture.store.purchase(account: "h", productId: "com.example.nope")
        }
        await #expect(throws: SimulatorError.self) {
            try await fixture.store.purchase(account: "h", productId: "com.example.noads", quantity: 2)
        }
        await #expect(throws: SimulatorError.self) { try await fixture.store.refund(transactionId: "999") }
        await #expect(throws: SimulatorError.self) { try await fixture.store.advanceClock(by: -1) }
        try await fixture.store.purchase(account: "h", productId: "com.example.noads")
        await #expect(throws: SimulatorError.self) {
            try await fixture.store.purchase(account: "h", productId: "com.example.noads")
        }
        #expect(await fixture.store.history(account: "h").transactions.count == 1)
        #expect(try await fixture.notifications().count == 1)
    }
}

@Suite("Simulator PKI folder")
struct SimulatorPKIFolderTests {
    @Test("a chain written to a folder loads back and signs what the same root verifies; Production refuses it")
    func roundTrip() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("coffer-pki-\(UUID().uuidString)")
        let now = Date()
        let written = try SimulatorPKI(
            validFrom: now.addingTimeInterval(-60), leafValidUntil: now.addingTimeInterval(86_400))
        try written.write(to: folder)
        let permissions =
            try FileManager.default.attributesOfItem(
                atPath: folder.appendingPathComponent("leaf-key.pem").path)[.posixPermissions] as? Int
        #expect(permissions == 0o600)
        let loaded = try SimulatorPKI(folder: folder)
        let payload =
            #"{"transactionId":"1","bundleId":"com.example.coffer","environment":"Sandbox","signedDate":"#
            + "\(Int64(now.timeIntervalSince1970 * 1000))}"
        let signed = try loaded.signer().sign(payloadJSON: Data(payload.utf8))
        let verifier = try SignedDataVerifier(
            rootCertificates: [Data(contentsOf: folder.appendingPathComponent("root.der"))],
            bundleId: "com.example.coffer", appAppleId: nil, environment: .sandbox)
        #expect(try await verifier.verifyTransaction(signed).transactionId == "1")
        #expect(throws: VerificationError.self) {
            try SignedDataVerifier(
                rootCertificates: [written.rootDER()], bundleId: "com.example.coffer", appAppleId: 1,
                environment: .production)
        }
        // A leaf key that is not the leaf's is refused on load.
        let other = try SimulatorPKI(validFrom: now, leafValidUntil: now.addingTimeInterval(60))
        try other.leafKey.pemRepresentation.write(
            to: folder.appendingPathComponent("leaf-key.pem"), atomically: true, encoding: .utf8)
        #expect(throws: SimulatorError.self) { try SimulatorPKI(folder: folder) }
    }
}
