import CofferAPI
import CofferCore
import CofferServer
import CofferSimulator
import CofferStore
import Foundation
import Hummingbird
import HummingbirdTesting
import Testing

/// Purchases that come without the app's token (offer codes, promoted purchases, another device) find the customer of
/// their Apple account, never whoever presents them first; the customer's token is then written back with Set App
/// Account Token so Apple's later notifications name them.
@Suite("Token-less purchases find their Apple account's customer", .timeLimit(.minutes(2)))
struct TokenlessAttributionTests {
    @Test("a notification is applied to the account's customer and the token written back; another install is refused")
    func attribution() async throws {
        let setup = try NotificationTests.Setup()
        let signedApp = try await setup.apple.signedAppTransaction(account: "ivy")
        try await RecoveryTests.withAppleAPI(setup) { api in
            let app = try setup.application(api: api)
            try await app.test(.router) { client in
                let ivy = try ClientAPITests.decode(
                    CreateUserResponse.self,
                    try await client.execute(
                        uri: "/v1/users", method: .post,
                        body: try ClientAPITests.body(CreateUserRequest(signedAppTransaction: signedApp))))
                let stranger = try await NotificationTests.createUser(client)
                // Bought without a token (an offer code redeemed on the App Store, say): Apple's notification names
                // only the Apple account.
                let first = try #require(
                    try await setup.apple.purchase(account: "ivy", productId: "com.example.credits").transactionIds
                        .first)
                let notification = try #require(await setup.apple.sentNotifications().last)
                let posted = try await NotificationTests.post(notification.signedPayload, with: client)
                #expect(try ClientAPITests.decode(NotificationResponse.self, posted).outcome == "applied")
                let owner = try #require(try await setup.store.receipt(transactionId: first, environment: .sandbox))
                #expect(
                    owner.owner
                        == (try await setup.store.user(appAccountToken: ivy.appAccountToken, environment: .sandbox))?.id
                )
                // The token is written back on Apple's side (beside the answer: a bounded number of short polls).
                var written = false
                for _ in 0..<200 where !written {
                    written =
                        await setup.apple.deviceTransactions(account: "ivy").first { $0.id == first }?.appAccountToken
                        == ivy.appAccountToken
                    if !written { try await Task.sleep(for: .milliseconds(10)) }
                }
                #expect(written)

                // Another token-less purchase of the account, presented first by another install: refused; its
                // customer's app delivers it.
                let second = try #require(
                    try await setup.apple.purchase(account: "ivy", productId: "com.example.credits").transactionIds
                        .first)
                let signed = try await setup.apple.signedTransaction(id: second)
                let refused = try await client.execute(
                    uri: "/v1/transactions", method: .post, headers: ClientAPITests.bearer(stranger.token),
                    body: try ClientAPITests.body(TransactionRequest(signedTransaction: signed)))
                #expect(refused.status == .forbidden)
                #expect(try await NotificationTests.present(signed, as: ivy, with: client).outcome == .delivered)
            }
        }
    }
}
