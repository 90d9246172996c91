import CofferAPI
import CofferCore
import CofferServer
import Foundation
import Hummingbird
import HummingbirdTesting
import Testing

/// Support sees Apple's view of an Apple account customer: their app transaction, read with Get App Transaction Info.
@Suite("Support sees the customer's app transaction", .timeLimit(.minutes(2)))
struct AppTransactionPageTests {
    @Test("an Apple account customer's page carries Apple's app transaction; an anonymous install's does not")
    func appTransaction() async throws {
        let setup = try NotificationTests.Setup()
        let signed = try await setup.apple.signedAppTransaction(account: "ivy")
        let expected = try await setup.verifier.verifyAppTransaction(signed)
        try await RecoveryTests.withAppleAPI(setup) { api in
            let app = try setup.application(api: api)
            try await app.test(.router) { client in
                let created = try await client.execute(
                    uri: "/v1/users", method: .post,
                    body: try ClientAPITests.body(CreateUserRequest(signedAppTransaction: signed)))
                let ivy = try ClientAPITests.decode(CreateUserResponse.self, created)
                let anonymous = try await NotificationTests.createUser(client)
                let signer = try await AdminAPITests.key(in: setup.store)
                let now = setup.clock.now()
                let detail = try AdminAPITests.decode(
                    UserDetail.self,
                    try await AdminAPITests.send(client, signer, .get, "/v1/admin/users/\(ivy.supportId)", at: now))
                let view = try #require(detail.appTransaction)
                #expect(view.appTransactionId == expected.appTransactionId)
                #expect(view.originalApplicationVersion == expected.originalApplicationVersion)
                #expect(view.originalPurchaseDate == expected.originalPurchaseDate)
                #expect(view.environment == "Sandbox")
                let other = try AdminAPITests.decode(
                    UserDetail.self,
                    try await AdminAPITests.send(
                        client, signer, .get, "/v1/admin/users/\(anonymous.supportId)", at: now))
                #expect(other.appTransaction == nil)
            }
        }
    }
}
