import CofferAPI
import CofferCore
import CofferServer
import CofferService
import CofferSimulator
import CofferStore
import Foundation
import Hummingbird
import HummingbirdTesting
import Testing

/// In the server wallet, purchases that come without the app's token (offer codes, promoted purchases, another device)
/// find the customer of their Apple account, never whoever presents them first; the customer's token is then written
/// back with Set App Account Token so Apple's later notifications name them. In the device wallet the first presenter
/// keeps them: the credits live on the device that delivered them.
@Suite("Token-less purchases find their Apple account's customer", .timeLimit(.minutes(2)))
struct TokenlessAttributionTests {
    @Test("server wallet: applied to the account's customer, token written back; another presenter refused")
    func attribution() async throws {
        let setup = try NotificationTests.Setup(wallet: .server)
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
                // The token is written back on Apple's side, beside the answer.
                let written = try await FinishOnServerTests.eventually {
                    let now = try await setup.verifier.verifyTransaction(setup.apple.signedTransaction(id: first))
                    return now.appAccountToken == ivy.appAccountToken
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
                #expect(try await NotificationTests.present(signed, as: ivy, with: client).outcome == .duplicate)
                #expect(try await NotificationTests.me(ivy, client).balance == 200, "both purchases are Ivy's")
                #expect(try await NotificationTests.me(stranger, client).balance == 0)
            }
        }
    }
}

extension TokenlessAttributionTests {
    @Test("device wallet: the first presenter keeps a token-less purchase, whose credits live on their device")
    func deviceWalletFirstPresenter() async throws {
        let setup = try NotificationTests.Setup(wallet: .device)
        let signedApp = try await setup.apple.signedAppTransaction(account: "kai")
        try await setup.app.test(.router) { client in
            _ = try await client.execute(
                uri: "/v1/users", method: .post,
                body: try ClientAPITests.body(CreateUserRequest(signedAppTransaction: signedApp)))
            let stranger = try await NotificationTests.createUser(client)
            let id = try #require(
                try await setup.apple.purchase(account: "kai", productId: "com.example.credits").transactionIds.first)
            let signed = try await setup.apple.signedTransaction(id: id)
            #expect(try await NotificationTests.present(signed, as: stranger, with: client).outcome == .delivered)
        }
    }
}

/// Apple's RESCIND_CONSENT (a parent or guardian withdrew consent for a child's account) finds the customer of the
/// Apple account its `appData` names, is recorded on them for support, and reaches their app as an event.
@Suite("RESCIND_CONSENT reaches its customer", .timeLimit(.minutes(2)))
struct RescindConsentTests {
    @Test(
        "found by the app transaction, recorded on the customer's timeline, applied once; an unknown account is logged")
    func rescinded() async throws {
        let setup = try NotificationTests.Setup()
        let signedApp = try await setup.apple.signedAppTransaction(account: "june")
        try await setup.app.test(.router) { client in
            let june = try ClientAPITests.decode(
                CreateUserResponse.self,
                try await client.execute(
                    uri: "/v1/users", method: .post,
                    body: try ClientAPITests.body(CreateUserRequest(signedAppTransaction: signedApp))))
            try await setup.apple.rescindConsent(account: "june")
            try await setup.apple.rescindConsent(account: "nobody")
            #expect(try await setup.deliver(after: 0, with: client) == ["applied", "logged"])
            #expect(PushNotifier.wakes(.consentRescinded), "the app is woken too")
            #expect(try await setup.deliver(after: 0, with: client) == ["duplicate", "duplicate"])
            let audit = try await setup.store.auditEvents(environment: .sandbox, subject: june.supportId, limit: 10)
            #expect(audit.map(\.action) == ["customer.consent-rescinded"])
            #expect(audit.first?.actor == "Apple")
            let owner = try #require(
                try await setup.store.user(appAccountToken: june.appAccountToken, environment: .sandbox))
            let recorded = try await setup.store.notifications(
                environment: .sandbox, transactionId: nil, outcome: .applied, limit: 10)
            #expect(recorded.map(\.owner) == [owner.id])
        }
    }
}
