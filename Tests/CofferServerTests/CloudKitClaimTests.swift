import CofferAPI
import CofferAdmin
import CofferCore
import CofferService
import CofferStore
import Foundation
import Hummingbird
import HummingbirdTesting
import Synchronization
import Testing

/// `POST /v1/users/cloudkit`: the app claiming the customer `coffer import cloudkit` brought in, once.
@Suite("CloudKit claim", .timeLimit(.minutes(1)))
struct CloudKitClaimTests {
    static func claim(_ client: some TestClientProtocol, _ name: String, key: String, signed: String? = nil)
        async throws -> TestResponse
    {
        try await client.execute(
            uri: "/v1/users/cloudkit", method: .post,
            body: try ClientAPITests.body(
                CloudKitClaimRequest(userRecordName: name, claimKey: key, signedAppTransaction: signed)))
    }

    @Test(
        "the claim makes the customer the install's Apple account's; an unfinished import answers 503 and uses up nothing; a key is spent after a day",
        arguments: ServerEngine.allCases)
    func appleAccountAndRetries(engine: ServerEngine) async throws {
        let store = try await engine.makeStore()
        let clock = Mutex(ClientAPITests.start.addingTimeInterval(3_600))
        let setup = try ClientAPITests.Setup(store: store, wallet: .server, now: { clock.withLock { $0 } })
        let admin = AdminService(store: store, catalog: try Catalog(products: []), walletMode: .server)
        let imported = try await admin.importCustomers(
            [
                CustomerImport(externalId: "_dana", balance: 300, grants: []),
                CustomerImport(externalId: "_erin", balance: 1, grants: []),
            ], source: ClientService.cloudKitSource, environment: .sandbox, actor: "test")
        let dana = try #require(imported.customers.first?.supportId)
        // An import that stopped after recording the customer, before making their user.
        _ = try await store.recordImport(
            ImportedCustomer(
                environment: .sandbox, source: ClientService.cloudKitSource, externalId: "_half", user: UUID(),
                importedAt: ClientAPITests.start))
        try await setup.app.test(.router) { client in
            let early = try await Self.claim(client, "_half", key: "install-early-key-001")
            #expect(early.status == .serviceUnavailable)
            #expect(String(buffer: early.body).contains("try-again"))
            // Run again, the import finishes; the early install's try used nothing up: another key claims.
            let finished = try await admin.importCustomers(
                [CustomerImport(externalId: "_half", balance: 5, grants: [])], source: ClientService.cloudKitSource,
                environment: .sandbox, actor: "test")
            #expect(finished.customers.first?.created == true)
            #expect(try await Self.claim(client, "_half", key: "install-later-key-002").status == .ok)

            // Dana's phone claims with its AppTransaction: her iPad, registering by Apple account, finds her.
            let phone = try await Self.claim(
                client, "_dana", key: "install-phone-key-003",
                signed: try await setup.store.signedAppTransaction(account: "dana"))
            #expect(try ClientAPITests.decode(CreateUserResponse.self, phone).supportId == dana)
            let pad = try await AccountTests.register(
                try await setup.store.signedAppTransaction(account: "dana"), client)
            #expect(pad.status == .ok)
            let padUser = try ClientAPITests.decode(CreateUserResponse.self, pad)
            #expect(padUser.supportId == dana)
            let me = try ClientAPITests.decode(
                MeResponse.self,
                try await client.execute(uri: "/v1/me", method: .get, headers: ClientAPITests.bearer(padUser.token)))
            #expect(me.balance == 300)
            // An AppTransaction that does not verify, or one too old, is refused before the claim is used up.
            let forged = try await Self.claim(client, "_half", key: "install-other-key-005", signed: "not.a.jws")
            #expect(forged.status == .unprocessableContent)
            let stale = try await setup.store.signedAppTransaction(account: "erin")
            clock.withLock { $0 = $0.addingTimeInterval(2 * 86_400) }
            let old = try await Self.claim(client, "_erin", key: "install-erin-key-0006", signed: stale)
            #expect(String(buffer: old.body).contains("stale-app-transaction"))
            clock.withLock { $0 = $0.addingTimeInterval(-2 * 86_400) }
            #expect(try await Self.claim(client, "_erin", key: "install-erin-key-0006").status == .ok)

            // A day after the first claim its key is spent.
            clock.withLock { $0 = $0.addingTimeInterval(ClientService.claimRetryWindow + 1) }
            #expect(try await Self.claim(client, "_dana", key: "install-phone-key-003").status == .conflict)
        }
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

            // Support merged Bob's imported customer into his Apple account's (registered on another device): the
            // merged customer is settled, and its public record name leads to nobody's account.
            let account = User(
                environment: .sandbox, supportId: try #require(SupportID("_dddddddddddd")), tokenHash: "bob-phone",
                createdAt: Date(), appleAccount: AppleAccount(appTransactionId: "7000", environment: .sandbox))
            try await store.createUser(account)
            _ = try await admin.mergeUsers(
                environment: .sandbox, from: try #require(imported.customers[1].supportId), into: "_dddddddddddd",
                consent: .override(reason: "Ticket #5: Bob's new phone"), actor: "test")
            let merged = try await Self.claim(client, "_bbbb2222", key: "install-bob-key-00003")
            #expect(merged.status == .conflict)
            #expect(String(buffer: merged.body).contains("already-claimed"))
            #expect(!String(buffer: merged.body).contains("token"))
            // A customer deleted at their request is not claimed.
            _ = try await admin.deleteUser(
                environment: .sandbox, supportId: try #require(imported.customers[2].supportId), actor: "test")
            #expect(try await Self.claim(client, "_cccc3333", key: "install-carl-key-0004").status == .notFound)
        }
        // The claim is in the customer's story once.
        let audit = try await store.auditEvents(environment: .sandbox, subject: alice, limit: 50)
        #expect(audit.filter { $0.action == "customer.claim" }.count == 1)
        #expect(audit.contains { $0.action == "customer.import" })
    }
}
