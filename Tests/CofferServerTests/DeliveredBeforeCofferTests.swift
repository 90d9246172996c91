import CofferAPI
import CofferCore
import CofferServer
import CofferStore
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

/// Customers who bought before Coffer: `"previouslyDelivered": true` records a purchase the app delivered before it
/// used Coffer, without credits, so its entitlements count and a refund takes back what the old app gave.
@Suite("Purchases delivered before Coffer", .timeLimit(.minutes(1)))
struct DeliveredBeforeCofferTests {
    typealias API = ClientAPITests

    @Test(
        "recorded without credits, entitlements count, presented again it credits nothing, refunded it is taken back",
        arguments: ServerEngine.allCases)
    func recorded(engine: ServerEngine) async throws {
        let setup = try API.Setup(store: try await engine.makeStore(), wallet: .server)
        try await setup.app.test(.router) { client in
            let user = try API.decode(
                CreateUserResponse.self, try await client.execute(uri: "/v1/users", method: .post))
            let post = { (id: String, before: Bool?) async throws -> TransactionResponse in
                let signed = try await setup.store.signedTransaction(id: id)
                let answer = try await client.execute(
                    uri: "/v1/transactions", method: .post, headers: API.bearer(user.token),
                    body: try API.body(TransactionRequest(signedTransaction: signed, previouslyDelivered: before)))
                #expect(answer.status == .ok)
                return try API.decode(TransactionResponse.self, answer)
            }
            // The old app bought without an account token; Coffer's SDK buys with the user's.
            let buy = { (product: String, quantity: Int, token: UUID?) async throws -> String in
                let bought = try await setup.store.purchase(
                    account: "carol", productId: product, quantity: quantity, appAccountToken: token)
                return try #require(bought.transactionIds.first)
            }
            // Bought through Coffer: 200 credits; the flag cannot zero a purchase made with the user's own token.
            let now = try await buy("com.example.credits", 2, user.appAccountToken)
            #expect(
                try await post(now, true)
                    == TransactionResponse(
                        outcome: .delivered, transactionId: now, credits: 200, balance: 200, entitlements: []))
            // Bought and delivered by the app before Coffer: on the ledger at 0, the balance unchanged.
            let old = try await buy("com.example.credits", 3, nil)
            #expect(
                try await post(old, true)
                    == TransactionResponse(
                        outcome: .recorded, transactionId: old, credits: 0, balance: 200, entitlements: []))
            let noAds = try await buy("com.example.noads", 1, nil)
            let unlocked = try await post(noAds, true)
            #expect(unlocked.outcome == .recorded && unlocked.entitlements == ["adFree"] && unlocked.balance == 200)
            // Presented again, with the flag or without: nothing more.
            #expect(try await post(old, true).outcome == .duplicate)
            let again = try await post(old, nil)
            #expect(again.outcome == .duplicate && again.balance == 200)
            // Flagged after Coffer delivered it: a duplicate, the delivery stands.
            #expect(try await post(now, true).outcome == .duplicate)

            // The history says so.
            let purchases = try API.decode(
                PurchasesResponse.self,
                try await client.execute(uri: "/v1/me/purchases", method: .get, headers: API.bearer(user.token)))
            let before = purchases.purchases.filter { $0.deliveredBeforeCoffer == true }.map(\.transactionId)
            #expect(Set(before) == [old, noAds])
            #expect(purchases.purchases.first { $0.transactionId == now }?.deliveredBeforeCoffer == nil)

            // 150 spent, then Apple refunds the old purchase: its 300 are taken back, 150 of them as a deficit.
            var headers = API.bearer(user.token)
            headers[HTTPField.Name("Idempotency-Key")!] = "spend-1"
            let spent = try await client.execute(
                uri: "/v1/me/spend", method: .post, headers: headers, body: try API.body(SpendRequest(amount: 150)))
            #expect(spent.status == .ok)
            try await setup.store.refund(transactionId: old)
            let refunded = try await post(old, nil)
            #expect(refunded.outcome == .revoked && refunded.balance == 0)
            let me = try API.decode(
                MeResponse.self,
                try await client.execute(uri: "/v1/me", method: .get, headers: API.bearer(user.token)))
            #expect(me.balance == 0 && me.deficit == 250)
            let supportId = try #require(SupportID(user.supportId))
            let owner = try #require(try await setup.cofferStore.user(supportId: supportId, environment: .sandbox))
            let entries = try await setup.cofferStore.entries(owner: owner.id, environment: .sandbox)
            #expect(entries.first { $0.transactionId == old }?.amount == 0)
            #expect(entries.first { $0.transactionId == old }?.reason == "delivered before Coffer")
        }
    }
}
