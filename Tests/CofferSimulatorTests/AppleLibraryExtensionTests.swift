import CofferAppStore
import CofferSimulator
import CofferTestSupport
import Crypto
import Foundation
import Testing

/// Apple's Python library extends subscriptions one by one and all at once; the simulator applies Apple's
/// eligibility rules, answers a repeated request identifier as the first time, and sends RENEWAL_EXTENDED,
/// RENEWAL_EXTENSION/FAILURE and RENEWAL_EXTENSION/SUMMARY as Apple does.
@Suite("Apple's Python library: subscription renewal date extensions", .timeLimit(.minutes(3)))
struct AppleLibraryExtensionTests {
    typealias Call = AppleLibraryAPITests.Call

    static func extend(_ id: String, days: Int = 7, request: String) -> Call {
        Call(
            method: "extend_subscription_renewal_date",
            args: [id, ["extendByDays": days, "extendReasonCode": 1, "requestIdentifier": request]],
            models: [1: "ExtendRenewalDateRequest"])
    }

    static func extendAll(_ body: [String: Any]) -> Call {
        let base: [String: Any] = ["extendByDays": 3, "extendReasonCode": 3, "productId": "com.example.pro.monthly"]
        return Call(
            method: "extend_renewal_date_for_all_active_subscribers",
            args: [base.merging(body) { _, new in new }], models: [0: "MassExtendRenewalDateRequest"])
    }

    static func status(_ request: String, product: String = "com.example.pro.monthly") -> Call {
        Call(method: "get_status_of_subscription_renewal_date_extensions", args: [request, product])
    }

    @Test("one subscription and all of a product's, with Apple's rules, idempotency, codes and notifications")
    func extensions() async throws {
        guard let python = AppleLibraryTests.pythonOrSay("Apple's Python library extension check") else { return }
        let fixture = try SimulatorFixture()
        let store = fixture.store
        await store.formFamily(["bob", "dave"])
        var originals: [String: String] = [:]
        for account in ["alice", "bob", "carol"] {
            originals[account] = try #require(
                try await store.purchase(account: account, productId: "com.example.pro.monthly").transactionIds.first)
        }
        let (alice, carol) = (try #require(originals["alice"]), try #require(originals["carol"]))
        // Carol had her two extensions this year already.
        for _ in 0..<2 {
            var request = ExtendRenewalDateRequest()
            (request.extendByDays, request.extendReasonCode) = (1, 3)
            request.requestIdentifier = UUID().uuidString
            _ = try await store.extendRenewalDate(carol, request)
        }
        // Apple's library cannot send a reason code outside its enum: the simulator is asked directly.
        var unknownReason = ExtendRenewalDateRequest()
        (unknownReason.extendByDays, unknownReason.extendReasonCode) = (1, 9)
        unknownReason.requestIdentifier = UUID().uuidString
        let unknown = await #expect(throws: SimulatedAPIError.self) {
            try await store.extendRenewalDate(alice, unknownReason)
        }
        #expect(unknown?.errorCode == 4_000_010)
        let davesCopy = try #require(
            await store.history(account: "dave").transactions.first { $0.ownership == "FAMILY_SHARED" }?.transactionId)
        let expiresBefore = try #require(await store.history(account: "alice").subscriptions.first?.expiresDate)
        let (once, all, france) = (UUID().uuidString, UUID().uuidString, UUID().uuidString)
        let calls: [Call] = [
            Self.extend(alice, request: once),
            Self.extend(alice, request: once),
            Self.extend(davesCopy, request: UUID().uuidString),
            Self.extend(alice, request: ""),
            Self.extend(alice, days: 91, request: UUID().uuidString),
            Self.extend("1", request: UUID().uuidString),
            Self.extend(carol, request: UUID().uuidString),
            Self.extendAll(["requestIdentifier": all]),
            Self.extendAll(["requestIdentifier": all]),
            Self.status(all),
            Self.status(UUID().uuidString),
            Self.extendAll(["requestIdentifier": UUID().uuidString, "productId": "com.example.credits"]),
            Self.extendAll(["requestIdentifier": UUID().uuidString, "storefrontCountryCodes": [String]()]),
            Self.extendAll(["requestIdentifier": UUID().uuidString, "storefrontCountryCodes": ["us"]]),
            Self.extendAll(["requestIdentifier": france, "storefrontCountryCodes": ["FRA"]]),
            Self.status(france),
        ]
        let key = P256.Signing.PrivateKey()
        let plan = try AppleLibraryAPITests.Plan(calls)
        try await ServerTests().withServer(fixture, key: key) { baseURL, _ in
            let results = try await AppleLibraryAPITests.outcomes(
                of: plan, python: python, baseURL: baseURL, key: key)
            let first = try #require(results[0].answer)
            #expect(first["success"] as? Bool == true)
            #expect(first["effectiveDate"] as? Int == Int((expiresBefore.timeIntervalSince1970 + 7 * 86_400) * 1_000))
            #expect(results[1].answer?["effectiveDate"] as? Int == first["effectiveDate"] as? Int, "the same answer")
            results.expectRefused(2, 403, 4_030_007)  // a family member's copy
            results.expectRefused(3, 400, 4_000_011)
            results.expectRefused(4, 400, 4_000_009)
            results.expectRefused(5, 404, 4_040_005)
            results.expectRefused(6, 403, 4_030_005)
            #expect(results[7].answer?["requestIdentifier"] as? String == all)
            #expect(results[8].answer?["requestIdentifier"] as? String == all)
            let status = try #require(results[9].answer)
            #expect(status["complete"] as? Bool == true)
            #expect(status["succeededCount"] as? Int == 2, "alice and bob")
            #expect(status["failedCount"] as? Int == 1, "carol, extended twice this year")
            results.expectRefused(10, 404, 4_040_009)
            results.expectRefused(11, 400, 4_000_023)
            results.expectRefused(12, 400, 4_000_027)
            results.expectRefused(13, 400, 4_000_028)
            #expect(results[14].answer?["requestIdentifier"] as? String == france)
            #expect(results[15].answer?["succeededCount"] as? Int == 0, "no subscriber in France")
        }
        // Alice: 7 days once (the repeat changed nothing), then 3 with everyone.
        let expiresAfter = try #require(await store.history(account: "alice").subscriptions.first?.expiresDate)
        #expect(expiresAfter == expiresBefore.addingTimeInterval(10 * 86_400))
        // Bob's extension moved the copy he shares with Dave.
        let bobs = try #require(await store.history(account: "bob").transactions.first?.expiresDate)
        #expect(await store.history(account: "dave").transactions.first?.expiresDate == bobs)
        let notifications = try await fixture.notifications()
        func count(_ type: String, _ subtype: String? = nil) -> Int {
            notifications.filter { $0.payload.rawNotificationType == type && $0.payload.rawSubtype == subtype }.count
        }
        #expect(count("RENEWAL_EXTENDED") == 5, "carol twice, alice alone, alice and bob with everyone")
        #expect(count("RENEWAL_EXTENSION", "FAILURE") == 1)
        let summaries = notifications.compactMap(\.payload.summary)
        #expect(summaries.map(\.requestIdentifier) == [all, france])
        #expect(summaries.first?.succeededCount == 2 && summaries.first?.failedCount == 1)
        #expect(summaries.first?.productId == "com.example.pro.monthly")
    }
}
