import CofferAPI
import CofferAdmin
import CofferCore
import CofferService
import CofferStore
import Foundation
import Hummingbird
import HummingbirdTesting
import Testing

/// `POST /v1/users/cloudkit`: the app claiming the customer `coffer import cloudkit` brought in, once.
@Suite("CloudKit claim", .timeLimit(.minutes(1)))
struct CloudKitClaimTests {
    static func claim(_ client: some TestClientProtocol, _ name: String, key: String) async throws -> TestResponse {
        try await client.execute(
            uri: "/v1/users/cloudkit", method: .post,
            body: try ClientAPITests.body(CloudKitClaimRequest(userRecordName: name, claimKey: key)))
    }

    @Test(
        "the imported customer is claimed once with its balance and grants; the same key again, another refused",
        arguments: ServerEngine.allCases)
    func claimOnce(engine: ServerEngine) async throws {
        let store = try await engine.makeStore()
        let setup = try ClientAPITests.Setup(store: store, wallet: .server)
        let admin = AdminService(store: store, catalog: try Catalog(products: []), walletMode: .server)
        let imported = try await admin.importCustomers(
            [
                CustomerImport(
                    externalId: "_aaaa1111", balance: 5_000,
                    grants: [.init(externalId: "grant-1", credits: 400, reason: "Ticket #42")]),
                CustomerImport(externalId: "_bbbb2222", balance: 10, grants: []),
                CustomerImport(externalId: "_cccc3333", balance: 20, grants: []),
            ], source: ClientService.cloudKitSource, environment: .sandbox, actor: "test")
        let alice = try #require(imported.customers[0].supportId)
        try await setup.app.test(.router) { client in
            let first = try await Self.claim(client, "_aaaa1111", key: "install-one-key-0001")
            #expect(first.status == .ok)
            let credentials = try ClientAPITests.decode(CreateUserResponse.self, first)
            #expect(credentials.supportId == alice)
            let me = try ClientAPITests.decode(
                MeResponse.self,
                try await client.execute(uri: "/v1/me", method: .get, headers: ClientAPITests.bearer(credentials.token))
            )
            #expect(me.balance == 5_000)
            let grants = try await client.execute(
                uri: "/v1/me/grants", method: .get, headers: ClientAPITests.bearer(credentials.token))
            #expect(String(buffer: grants.body).contains("Ticket #42"))

            // The answer was lost: the same key claims again (another token, the same customer).
            let again = try ClientAPITests.decode(
                CreateUserResponse.self, try await Self.claim(client, "_aaaa1111", key: "install-one-key-0001"))
            #expect(again.supportId == alice && again.token != credentials.token)
            // Another install with the name is refused, and nothing it sends makes a user.
            let other = try await Self.claim(client, "_aaaa1111", key: "install-two-key-0002")
            #expect(other.status == .conflict)
            #expect(String(buffer: other.body).contains("already-claimed"))
            // A name no import brought in; malformed names and keys.
            #expect(try await Self.claim(client, "_unknown", key: "install-one-key-0001").status == .notFound)
            #expect(try await Self.claim(client, "", key: "install-one-key-0001").status == .badRequest)
            #expect(try await Self.claim(client, "_a b", key: "install-one-key-0001").status == .badRequest)
            #expect(try await Self.claim(client, "_aaaa1111", key: "short").status == .badRequest)
            #expect(
                try await Self.claim(client, String(repeating: "x", count: 256), key: "install-one-key-0001").status
                    == .badRequest)

            // Support merged Bob's imported customer into his Apple account's (registered on another device):
            // Bob's name signs in as that customer.
            let account = User(
                environment: .sandbox, supportId: try #require(SupportID("_dddddddddddd")), tokenHash: "bob-phone",
                createdAt: Date(), appleAccount: AppleAccount(appTransactionId: "7000", environment: .sandbox))
            try await store.createUser(account)
            _ = try await admin.mergeUsers(
                environment: .sandbox, from: try #require(imported.customers[1].supportId), into: "_dddddddddddd",
                actor: "test")
            let merged = try ClientAPITests.decode(
                CreateUserResponse.self, try await Self.claim(client, "_bbbb2222", key: "install-bob-key-00003"))
            #expect(merged.supportId == "_dddddddddddd")
            // A customer deleted at their request is not claimed.
            _ = try await admin.deleteUser(
                environment: .sandbox, supportId: try #require(imported.customers[2].supportId), actor: "test")
            #expect(try await Self.claim(client, "_cccc3333", key: "install-carl-key-0004").status == .notFound)
        }
        // The claim is in the customer's story once.
        let audit = try await store.auditEvents(environment: .sandbox, subject: alice, limit: 50)
        #expect(audit.filter { $0.action == "customer.claim" }.count >= 1)
        #expect(audit.contains { $0.action == "customer.import" })
    }
}
