import AsyncHTTPClient
import CofferAPI
import CofferAdmin
import CofferAppStore
import CofferCore
import CofferServer
import CofferService
import CofferSimulator
import CofferStore
import Foundation
import Hummingbird
import HummingbirdTesting
import Testing

/// The third security round's proof of the CloudKit identity: with `cloudkit.claim.proof` = `web-auth-token`, a
/// claim carries a CloudKit web auth token of the user it names, checked with CloudKit Web Services (the
/// simulator's here, playing both the phone and `users/caller`).
extension SecurityTests {
    @Test(
        "a CloudKit claim with web-auth-token proof hands over only the token's own user's import",
        arguments: ServerEngine.allCases)
    func cloudKitProof(engine: ServerEngine) async throws {
        let store = try await engine.makeStore()
        let setup = try NotificationTests.Setup(store: store)
        let admin = AdminService(store: store, catalog: try Catalog(products: []), walletMode: .server)
        _ = try await admin.importCustomers(
            [CustomerImport(externalId: "_victim", balance: 9_000, grants: [])],
            source: ClientService.cloudKitSource, environment: .sandbox, actor: "test")
        let container = "iCloud.\(NotificationTests.bundleId)"
        let cloudKit = SimulatedCloudKit(container: container, keys: [:], apiTokens: ["console-api-token"])
        let router = Router()
        cloudKit.addRoutes(to: router)
        try await Application(router: router).test(.live) { apple in
            let base = "http://127.0.0.1:\(try #require(apple.port))"
            var configuration = setup.configuration
            configuration.cloudKitClaimProof = .webAuthToken
            var dependencies = try setup.dependencies(api: nil)
            dependencies.cloudKitIdentity = try CloudKitUserIdentity(
                httpClient: .shared, container: container, environment: "production", apiToken: "console-api-token",
                baseURL: base)
            let app = try buildApplication(configuration: configuration, dependencies: dependencies)
            try await app.test(.router) { client in
                func claim(_ token: String?, key: String = "install-key-0000001") async throws -> TestResponse {
                    try await client.execute(
                        uri: "/v1/users/cloudkit", method: .post,
                        body: try ClientAPITests.body(
                            CloudKitClaimRequest(userRecordName: "_victim", claimKey: key, ckWebAuthToken: token)))
                }
                // The record name alone, as the attacker read it in the public database: refused.
                let bare = try await claim(nil, key: "attacker-key-000001")
                #expect(bare.status == .unprocessableContent)
                #expect(try AdminAPITests.errorCode(bare) == "cloudkit-proof-required")
                // The attacker's own web auth token, naming the victim: refused, nothing used up.
                let own = await cloudKit.webAuthToken(userRecordName: "_attacker")
                let forged = try await claim(own, key: "attacker-key-000001")
                #expect(forged.status == .forbidden)
                // A made-up or used token: CloudKit refuses it.
                let made = try await claim("ws_madeup", key: "attacker-key-000001")
                #expect(try AdminAPITests.errorCode(made) == "cloudkit-auth-failed")
                #expect(
                    try AdminAPITests.errorCode(try await claim(own, key: "attacker-key-000001"))
                        == "cloudkit-auth-failed")
                // The victim's phone: its token proves it, and the claim is the victim's.
                let token = await cloudKit.webAuthToken(userRecordName: "_victim")
                let claimed = try await claim(token)
                #expect(claimed.status == .ok)
                let me = try ClientAPITests.decode(
                    MeResponse.self,
                    try await AccountTests.me(try ClientAPITests.decode(CreateUserResponse.self, claimed).token, client)
                )
                #expect(me.balance == 9_000)
            }
            // CloudKit not answering: 503, so the app asks again later.
            dependencies.cloudKitIdentity = try CloudKitUserIdentity(
                httpClient: .shared, container: container, environment: "production", apiToken: "console-api-token",
                baseURL: "http://127.0.0.1:1")
            try await try buildApplication(configuration: configuration, dependencies: dependencies).test(.router) {
                client in
                let token = await cloudKit.webAuthToken(userRecordName: "_victim")
                let down = try await client.execute(
                    uri: "/v1/users/cloudkit", method: .post,
                    body: try ClientAPITests.body(
                        CloudKitClaimRequest(
                            userRecordName: "_victim", claimKey: "install-key-0000001", ckWebAuthToken: token)))
                #expect(down.status == .serviceUnavailable)
                #expect(try AdminAPITests.errorCode(down) == "cloudkit-unavailable")
            }
        }
    }
}
