import CofferAPI
import CofferCore
import CofferServer
import CofferService
import CofferStore
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

/// Backups, grants and spending over HTTP.
@Suite("Wallet API", .timeLimit(.minutes(1)))
struct WalletAPITests {
    typealias Fixture = ClientAPITests

    func newUser(_ client: some TestClientProtocol) async throws -> CreateUserResponse {
        try Fixture.decode(CreateUserResponse.self, try await client.execute(uri: "/v1/users", method: .post))
    }

    @Test(
        "backup: first write, If-Match versions, 412 with the current record on conflict",
        arguments: ServerEngine.allCases)
    func backup(engine: ServerEngine) async throws {
        let setup = try Fixture.Setup(store: try await engine.makeStore())
        try await setup.app.test(.router) { client in
            let user = try await newUser(client)
            let auth = Fixture.bearer(user.token)
            #expect(try await client.execute(uri: "/v1/me/backup", method: .get, headers: auth).status == .notFound)
            let first = try await client.execute(
                uri: "/v1/me/backup", method: .put, headers: auth, body: try Fixture.body(BackupRequest(value: 500)))
            #expect(first.status == .ok)
            #expect(try Fixture.decode(BackupBody.self, first).version == 1)
            var stale = auth
            stale[.ifMatch] = "0"
            let conflict = try await client.execute(
                uri: "/v1/me/backup", method: .put, headers: stale, body: try Fixture.body(BackupRequest(value: 1)))
            #expect(conflict.status == .preconditionFailed)
            let object = try JSONSerialization.jsonObject(with: Data(buffer: conflict.body)) as? [String: Any]
            #expect((object?["current"] as? [String: Any])?["value"] as? Int == 500)
            var current = auth
            current[.ifMatch] = "1"
            let second = try await client.execute(
                uri: "/v1/me/backup", method: .put, headers: current, body: try Fixture.body(BackupRequest(value: 420)))
            #expect(try Fixture.decode(BackupBody.self, second).version == 2)
            let me = try Fixture.decode(
                MeResponse.self, try await client.execute(uri: "/v1/me", method: .get, headers: auth))
            #expect(me.backup?.value == 420)
            let negative = try await client.execute(
                uri: "/v1/me/backup", method: .put, headers: current, body: try Fixture.body(BackupRequest(value: -1)))
            #expect(negative.status == .badRequest)
        }
    }

    @Test(
        "grants: listed by status, claimed once (server wallet credits), invisible to other users",
        arguments: ServerEngine.allCases)
    func grants(engine: ServerEngine) async throws {
        let store = try await engine.makeStore()
        let setup = try Fixture.Setup(store: store, wallet: .server)
        try await setup.app.test(.router) { client in
            let user = try await newUser(client)
            let other = try await newUser(client)
            let supportId = try #require(SupportID(user.supportId))
            let owner = try #require(try await store.user(supportId: supportId, environment: .sandbox))
            let grant = Grant(
                environment: .sandbox, recipient: owner.id, credits: 400_000, reason: "Ticket #42",
                createdBy: "support",
                createdAt: Fixture.start)
            try await store.createGrant(grant)
            let pending = try Fixture.decode(
                GrantsResponse.self,
                try await client.execute(
                    uri: "/v1/me/grants?status=pending", method: .get, headers: Fixture.bearer(user.token)))
            #expect(pending.grants.map(\.id) == [grant.id])
            let stranger = try await client.execute(
                uri: "/v1/me/grants/\(grant.id)/claim", method: .post, headers: Fixture.bearer(other.token))
            #expect(stranger.status == .notFound)
            for _ in 0..<2 {
                let claimed = try Fixture.decode(
                    ClaimResponse.self,
                    try await client.execute(
                        uri: "/v1/me/grants/\(grant.id)/claim", method: .post, headers: Fixture.bearer(user.token)))
                #expect(claimed.balance == 400_000)
                #expect(claimed.grant.claimedAt != nil)
            }
            let claimed = try Fixture.decode(
                GrantsResponse.self,
                try await client.execute(
                    uri: "/v1/me/grants?status=claimed", method: .get, headers: Fixture.bearer(user.token)))
            #expect(claimed.grants.count == 1)
            #expect(
                try await client.execute(
                    uri: "/v1/me/grants?status=lost", method: .get, headers: Fixture.bearer(user.token)
                ).status == .badRequest)
        }
    }

    @Test(
        "spend (server wallet): an Idempotency-Key gives the same answer twice; overdraw is refused",
        arguments: ServerEngine.allCases)
    func spend(engine: ServerEngine) async throws {
        let store = try await engine.makeStore()
        let setup = try Fixture.Setup(store: store, wallet: .server)
        try await setup.app.test(.router) { client in
            let user = try await newUser(client)
            let supportId = try #require(SupportID(user.supportId))
            let owner = try #require(try await store.user(supportId: supportId, environment: .sandbox))
            let grant = Grant(
                environment: .sandbox, recipient: owner.id, credits: 1_000, reason: "welcome", createdBy: "support",
                createdAt: Fixture.start)
            try await store.createGrant(grant)
            _ = try await client.execute(
                uri: "/v1/me/grants/\(grant.id)/claim", method: .post, headers: Fixture.bearer(user.token))
            var headers = Fixture.bearer(user.token)
            headers[HTTPField.Name("Idempotency-Key")!] = "round-1"
            for _ in 0..<2 {
                let spent = try await client.execute(
                    uri: "/v1/me/spend", method: .post, headers: headers,
                    body: try Fixture.body(SpendRequest(amount: 300)))
                #expect(try Fixture.decode(BalanceResponse.self, spent).balance == 700)
            }
            headers[HTTPField.Name("Idempotency-Key")!] = "round-2"
            let overdraw = try await client.execute(
                uri: "/v1/me/spend", method: .post, headers: headers, body: try Fixture.body(SpendRequest(amount: 701)))
            #expect(overdraw.status == .conflict)
            #expect(try Fixture.decode(ErrorResponse.self, overdraw).error.code == "insufficient-balance")
            let missingKey = try await client.execute(
                uri: "/v1/me/spend", method: .post, headers: Fixture.bearer(user.token),
                body: try Fixture.body(SpendRequest(amount: 1)))
            #expect(missingKey.status == .badRequest)
            // The catalog's one currency by its id; another is refused, and nothing moves.
            headers[HTTPField.Name("Idempotency-Key")!] = "round-3"
            let named = try await client.execute(
                uri: "/v1/me/spend", method: .post, headers: headers,
                body: try Fixture.body(SpendRequest(amount: 100, currency: "credits")))
            #expect(try Fixture.decode(BalanceResponse.self, named).balance == 600)
            headers[HTTPField.Name("Idempotency-Key")!] = "round-4"
            let unknown = try await client.execute(
                uri: "/v1/me/spend", method: .post, headers: headers,
                body: try Fixture.body(SpendRequest(amount: 100, currency: "gems")))
            #expect(unknown.status == .badRequest)
            #expect(
                try Fixture.decode(ErrorResponse.self, unknown).error.message
                    == "unknown currency \"gems\": this server keeps credits")
            let me = try Fixture.decode(
                MeResponse.self,
                try await client.execute(uri: "/v1/me", method: .get, headers: Fixture.bearer(user.token)))
            #expect(me.balance == 600)
            #expect(me.balances == ["credits": 600] && me.deficits == ["credits": 0])
        }
    }

    @Test("a catalog's named currency: /v1/me answers its balance by its id, and a spend names it")
    func namedCurrency() async throws {
        let coins = try #require(Currency(rawValue: "coins"))
        let setup = try Fixture.Setup(wallet: .server, currencies: [CurrencyDefinition(id: coins, name: "Coins")])
        try await setup.app.test(.router) { client in
            let user = try await newUser(client)
            let bought = try await setup.store.purchase(
                account: "max", productId: "com.example.credits", appAccountToken: user.appAccountToken)
            let jws = try await setup.store.signedTransaction(id: try #require(bought.transactionIds.first))
            _ = try await client.execute(
                uri: "/v1/transactions", method: .post, headers: Fixture.bearer(user.token),
                body: try Fixture.body(TransactionRequest(signedTransaction: jws)))
            var headers = Fixture.bearer(user.token)
            headers[HTTPField.Name("Idempotency-Key")!] = "round-1"
            let spent = try await client.execute(
                uri: "/v1/me/spend", method: .post, headers: headers,
                body: try Fixture.body(SpendRequest(amount: 30, currency: "coins")))
            #expect(try Fixture.decode(BalanceResponse.self, spent).balance == 70)
            let me = try Fixture.decode(
                MeResponse.self,
                try await client.execute(uri: "/v1/me", method: .get, headers: Fixture.bearer(user.token)))
            #expect(me.balances == ["coins": 70] && me.deficits == ["coins": 0] && me.balance == 70)
        }
    }

    @Test("spend in the device wallet is refused: the app owns the balance")
    func deviceWallet() async throws {
        let setup = try Fixture.Setup()
        try await setup.app.test(.router) { client in
            let user = try await newUser(client)
            var headers = Fixture.bearer(user.token)
            headers[HTTPField.Name("Idempotency-Key")!] = "k"
            let refused = try await client.execute(
                uri: "/v1/me/spend", method: .post, headers: headers, body: try Fixture.body(SpendRequest(amount: 1)))
            #expect(refused.status == .conflict)
            #expect(try Fixture.decode(ErrorResponse.self, refused).error.code == "device-wallet")
        }
    }
}
