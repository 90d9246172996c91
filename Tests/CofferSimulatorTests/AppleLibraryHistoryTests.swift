import CofferAppStore
import CofferSimulator
import CofferTestSupport
import Crypto
import Foundation
import Testing

/// Apple's Python library reads Get Notification History with each of its filters; the simulator keeps Apple's
/// rules: the sandbox's 30 days, one of type and transaction, subtypes that belong to their type, failures meaning
/// not yet delivered, and a transaction standing for its whole customer.
@Suite("Apple's Python library: notification history's rules", .timeLimit(.minutes(3)))
struct AppleLibraryHistoryTests {
    typealias Call = AppleLibraryAPITests.Call

    static func history(_ body: [String: Any]) -> Call {
        Call(method: "get_notification_history", args: [NSNull(), body], models: [1: "NotificationHistoryRequest"])
    }

    @Test("filters and refusals, each with Apple's code")
    func rules() async throws {
        guard let python = AppleLibraryTests.pythonOrSay("Apple's Python library history check") else { return }
        let fixture = try SimulatorFixture()
        let store = fixture.store
        let credits = try #require(
            try await store.purchase(account: "alice", productId: "com.example.credits").transactionIds.first)
        let monthly = try #require(
            try await store.purchase(account: "alice", productId: "com.example.pro.monthly").transactionIds.first)
        let bobs = try #require(
            try await store.purchase(account: "bob", productId: "com.example.credits").transactionIds.first)
        // Alice's one-time charge reached the server on the second try; her subscription's never did; Bob's did.
        for notification in await store.sentNotifications() {
            switch notification.transactionId {
            case credits:
                await store.recordAttempt(uuid: notification.uuid, result: .unsuccessfulHttpResponseCode)
                await store.recordAttempt(uuid: notification.uuid, result: .success)
            case monthly: await store.recordAttempt(uuid: notification.uuid, result: .timedOut)
            default: await store.recordAttempt(uuid: notification.uuid, result: .success)
            }
        }
        try await store.advanceClock(by: 10 * 86_400)
        let now = Int64(SimulatorFixture.start.timeIntervalSince1970 * 1_000) + 10 * 86_400_000
        let window: [String: Any] = ["startDate": now - 20 * 86_400_000, "endDate": now + 86_400_000]
        func with(_ changes: [String: Any]) -> [String: Any] { window.merging(changes) { _, new in new } }
        let calls: [Call] = [
            Self.history(with(["transactionId": monthly])),
            Self.history(with(["onlyFailures": true])),
            Self.history(with(["notificationType": "SUBSCRIBED", "notificationSubtype": "INITIAL_BUY"])),
            Self.history(with(["notificationType": "ONE_TIME_CHARGE", "transactionId": credits])),
            Self.history(with(["notificationSubtype": "INITIAL_BUY"])),
            Self.history(with(["notificationType": "ONE_TIME_CHARGE", "notificationSubtype": "SUMMARY"])),
            Self.history(with(["startDate": now - 31 * 86_400_000])),
            Self.history(with(["startDate": now, "endDate": now - 1_000])),
            Self.history(with(["transactionId": bobs])),
        ]
        let key = P256.Signing.PrivateKey()
        let plan = try AppleLibraryAPITests.Plan(calls)
        try await ServerTests().withServer(fixture, key: key) { baseURL, _ in
            let results = try await AppleLibraryAPITests.outcomes(
                of: plan, python: python, baseURL: baseURL, key: key)
            func about(_ index: Int) async throws -> [String] {
                var ids: [String] = []
                for item in results[index].answer?["notificationHistory"] as? [[String: Any]] ?? [] {
                    let payload = try #require(item["signedPayload"] as? String)
                    let verified = try await fixture.verifier.verifyNotification(payload)
                    ids.append(verified.transaction?.transactionId ?? "-")
                }
                return ids
            }
            #expect(try await about(0) == [credits, monthly], "any of Alice's transactions stands for her")
            #expect(try await about(1) == [monthly], "only what never reached the server")
            #expect(try await about(2) == [monthly])
            results.expectRefused(3, 400, 4_000_019)
            results.expectRefused(4, 400, 4_000_018)
            results.expectRefused(5, 400, 4_000_018)
            results.expectRefused(6, 400, 4_000_012)
            results.expectRefused(7, 400, 4_000_013)
            #expect(try await about(8) == [bobs])
        }
    }
}
