import CofferCore
import CofferServer
import CofferStore
import Foundation
import Hummingbird
import HummingbirdTesting
import Testing

/// The customer page shows the customer's consent and, for each of Apple's refund requests, what was answered and
/// why.
@Suite("Panel: refund requests", .timeLimit(.minutes(2)))
struct PanelRefundRequestTests {
    @Test("the consent and each refund request with its answer and reason", arguments: ServerEngine.allCases)
    func refundRequests(engine: ServerEngine) async throws {
        let store = try await engine.makeStore()
        try await PanelTests.signedIn(store) { client, user, browser in
            let supportId = try #require(SupportID(user.supportId))
            let owner = try #require(try await store.user(supportId: supportId, environment: .sandbox)).id
            let empty = String(buffer: try await browser.get(client, "/admin/users/\(user.supportId)").body)
            #expect(empty.contains("The customer has not been asked to share consumption data with Apple."))
            #expect(empty.contains("Apple has not asked about a refund of this customer's purchases."))
            try await store.saveConsumptionConsent(
                ConsumptionConsent(owner: owner, environment: .sandbox, consented: true, at: AdminAPITests.now))
            for (uuid, sent, reason) in [
                ("n-1", true, "150 of the 400 credits delivered were used since; 37.5% used; no rule applies"),
                ("n-2", false, "not sent: the customer declined to share consumption data"),
            ] {
                _ = try await store.recordConsumptionAnswer(
                    ConsumptionAnswerRecord(
                        notificationUUID: uuid, environment: .sandbox, owner: owner, transactionId: "2000000001",
                        requestedAt: AdminAPITests.now, answeredAt: AdminAPITests.now, sent: sent,
                        body: sent ? #"{"consumptionPercentage":37500}"# : nil, reason: reason))
            }
            let page = String(buffer: try await browser.get(client, "/admin/users/\(user.supportId)").body)
            #expect(page.contains("The customer consented to share consumption data with Apple."))
            #expect(page.contains(#"<span class="tag">answered</span>"#))
            #expect(page.contains(#"<span class="tag refund">not answered</span>"#))
            #expect(page.contains("37.5% used; no rule applies"))
            #expect(page.contains("not sent: the customer declined to share consumption data"))
            #expect(page.contains("{&quot;consumptionPercentage&quot;:37500}"))
        }
    }
}
