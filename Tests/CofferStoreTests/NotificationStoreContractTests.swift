import CofferCore
import CofferStore
import CofferTestSupport
import Foundation
import Testing

/// The ``NotificationStore`` contract every engine keeps (``StoreEngine``): Apple's notifications, renewal states and cursors.
@Suite("NotificationStore contract")
struct NotificationStoreContractTests {
    @Test(
        "a notification is recorded once per notificationUUID and environment, and found by transaction and outcome",
        arguments: StoreEngine.allCases)
    func notifications(engine: StoreEngine) async throws {
        let store = try await engine.makeStore()
        let alice = Make.user("_aaaaaaaaaaa1")
        try await store.createUser(alice)
        let refund = NotificationRecord(
            uuid: "n-1", environment: .sandbox, type: "REFUND", transactionId: "t2", originalTransactionId: "t1",
            owner: alice.id, signedDate: Make.start, receivedAt: Make.start.addingTimeInterval(1), outcome: .applied)
        let orphan = NotificationRecord(
            uuid: "n-2", environment: .sandbox, type: "REVOKE", subtype: nil, transactionId: "t9",
            originalTransactionId: "t9", owner: nil, signedDate: Make.start,
            receivedAt: Make.start.addingTimeInterval(2), outcome: .unattributed, source: "recovery")
        #expect(try await store.recordNotification(refund))
        #expect(try await store.recordNotification(orphan))
        var again = refund
        again.type = "REFUND_REVERSED"
        #expect(try await store.recordNotification(again) == false)
        #expect(try await store.notification(uuid: "n-1", environment: .sandbox) == refund)
        #expect(try await store.notification(uuid: "n-1", environment: .production) == nil)
        var production = refund
        production.environment = .production
        #expect(try await store.recordNotification(production))

        let sandbox = try await store.notifications(environment: .sandbox, transactionId: nil, outcome: nil, limit: 10)
        #expect(sandbox == [orphan, refund])
        #expect(
            try await store.notifications(environment: .sandbox, transactionId: "t1", outcome: nil, limit: 10)
                == [refund])
        #expect(
            try await store.notifications(environment: .sandbox, transactionId: "t2", outcome: nil, limit: 10)
                == [refund])
        #expect(
            try await store.notifications(environment: .sandbox, transactionId: nil, outcome: .unattributed, limit: 10)
                == [orphan])
        #expect(
            try await store.notifications(environment: .sandbox, transactionId: nil, outcome: nil, limit: 1) == [orphan]
        )
    }

    @Test(
        "a renewal state never replaces one signed later; receipts are found by their chain; cursors persist",
        arguments: StoreEngine.allCases)
    func renewalsAndCursors(engine: StoreEngine) async throws {
        let store = try await engine.makeStore()
        let alice = Make.user("_aaaaaaaaaaa1")
        try await store.createUser(alice)
        let grace = RenewalState(
            originalTransactionId: "orig-t1", environment: .sandbox, owner: alice.id,
            autoRenewProductId: "com.example.monthly", autoRenews: true, inBillingRetry: true,
            gracePeriodExpiresDate: Make.start.addingTimeInterval(86_400), signedDate: Make.start.addingTimeInterval(10)
        )
        #expect(try await store.saveRenewalState(grace))
        var older = grace
        older.inBillingRetry = false
        older.gracePeriodExpiresDate = nil
        older.signedDate = Make.start
        #expect(try await store.saveRenewalState(older) == false)
        #expect(try await store.renewalStates(owner: alice.id, environment: .sandbox) == [grace])
        var newer = older
        newer.signedDate = Make.start.addingTimeInterval(20)
        newer.autoRenews = false
        #expect(try await store.saveRenewalState(newer))
        #expect(try await store.renewalStates(owner: alice.id, environment: .sandbox) == [newer])
        #expect(try await store.renewalStates(owner: alice.id, environment: .production).isEmpty)
        var stranger = grace
        stranger.owner = UUID()
        await #expect(throws: StoreError.self) { try await store.saveRenewalState(stranger) }

        _ = try await store.apply(Make.purchase("t1", for: alice))
        _ = try await store.apply(Make.purchase("t2", for: alice))
        var other = Make.purchase("t3", for: alice)
        if case .purchase(var fact, let credits) = other.event {
            fact.productId = "com.example.noads"
            other.event = .purchase(fact, credits: credits)
        }
        _ = try await store.apply(other)
        let noAds = try await store.receipts(
            owner: alice.id, environment: .sandbox, productIds: ["com.example.noads", "com.example.elsewhere"])
        #expect(noAds.map(\.transaction.transactionId) == ["t3"])
        #expect(try await store.receipts(owner: alice.id, environment: .sandbox, productIds: []).isEmpty)
        #expect(
            try await store.receipts(owner: alice.id, environment: .production, productIds: ["com.example.noads"])
                .isEmpty)
        let chain = try await store.receipts(originalTransactionId: "orig-t1", environment: .sandbox)
        #expect(chain.map(\.transaction.transactionId) == ["t1"])
        #expect(try await store.receipts(originalTransactionId: "orig-t1", environment: .production).isEmpty)

        #expect(try await store.cursor("notification-history", environment: .sandbox) == nil)
        try await store.saveCursor("notification-history", value: "token-1", environment: .sandbox)
        try await store.saveCursor("notification-history", value: "token-2", environment: .sandbox)
        #expect(try await store.cursor("notification-history", environment: .sandbox) == "token-2")
        #expect(try await store.cursor("notification-history", environment: .production) == nil)
    }
}
