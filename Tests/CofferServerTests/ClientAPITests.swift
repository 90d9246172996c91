import CofferAPI
import CofferAdmin
import CofferAppStore
import CofferCore
import CofferPanel
import CofferServer
import CofferService
import CofferSimulator
import CofferStore
import CofferStoreSQLite
import Foundation
import Hummingbird
import HummingbirdTesting
import Testing

/// The client API over HTTP, with transactions signed by the App Store simulator.
@Suite("Client API", .timeLimit(.minutes(1)))
struct ClientAPITests {
    static let bundleId = "com.example.coffer"
    static let start = Date(timeIntervalSince1970: 1_767_225_600)  // 2026-01-01

    /// A server on the given store, trusting a fresh simulator in Sandbox, and the simulator.
    struct Setup {
        let store: SimulatedAppStore
        let app: any ApplicationProtocol
        let cofferStore: any CofferStore

        init(
            store cofferStore: any CofferStore = InMemoryStore(), wallet: WalletMode = .device,
            panel: PanelConfiguration = PanelConfiguration(), environment: AppStoreEnvironment = .sandbox,
            currencies: [CurrencyDefinition] = [],
            now: @escaping @Sendable () -> Date = { start.addingTimeInterval(3_600) }
        ) throws {
            let pki = try SimulatorPKI(
                validFrom: start.addingTimeInterval(-86_400), leafValidUntil: start.addingTimeInterval(400 * 86_400))
            let catalog = try Catalog(
                products: [
                    CatalogProduct(id: "com.example.credits", kind: .consumable, credits: 100),
                    CatalogProduct(id: "com.example.noads", kind: .nonConsumable, entitlements: ["adFree"]),
                    CatalogProduct(
                        id: "com.example.pro.monthly", kind: .autoRenewable, entitlements: ["premium"], group: "pro",
                        name: "Pro, monthly"),
                ], currencies: currencies)
            store = SimulatedAppStore(
                catalog: catalog, configuration: .init(bundleId: bundleId, appAppleId: 1_234),
                signer: try pki.signer(), clock: SimulatorClock(start: start))
            let verifier = try SignedDataVerifier(
                rootCertificates: [pki.rootDER()], bundleId: bundleId, appAppleId: nil, environment: .sandbox)
            self.cofferStore = cofferStore
            var configuration = ServerConfiguration(bundleId: bundleId)
            configuration.wallet = wallet
            configuration.panel = panel
            configuration.environment = environment
            configuration.appAppleId = 1_234
            app = try buildApplication(
                configuration: configuration,
                dependencies: try ServerDependencies(
                    store: cofferStore, verifier: verifier, catalog: catalog, now: now,
                    passwordHasher: PasswordHasher(cost: 4)))
        }
    }

    static func decode<T: Decodable>(_ type: T.Type, _ response: TestResponse) throws -> T {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return try decoder.decode(T.self, from: Data(buffer: response.body))
    }

    static func body(_ value: some Encodable) throws -> ByteBuffer { ByteBuffer(data: try JSONEncoder().encode(value)) }

    static func bearer(_ token: String) -> HTTPFields { [.authorization: "Bearer \(token)"] }

    @Test(
        "a user is created, buys credits once, and sees the balance; duplicates and refunds are answered",
        arguments: ServerEngine.allCases)
    func purchaseFlow(engine: ServerEngine) async throws {
        let setup = try Setup(store: try await engine.makeStore())
        try await setup.app.test(.router) { client in
            let created = try await client.execute(uri: "/v1/users", method: .post)
            #expect(created.status == .created)
            let user = try Self.decode(CreateUserResponse.self, created)
            #expect(SupportID(user.supportId) != nil)

            let bought = try await setup.store.purchase(
                account: "alice", productId: "com.example.credits", quantity: 3, appAccountToken: user.appAccountToken)
            let id = try #require(bought.transactionIds.first)
            let signed = try await setup.store.signedTransaction(id: id)
            let post = { () async throws -> TestResponse in
                try await client.execute(
                    uri: "/v1/transactions", method: .post, headers: Self.bearer(user.token),
                    body: try Self.body(TransactionRequest(signedTransaction: signed)))
            }
            let first = try Self.decode(TransactionResponse.self, try await post())
            #expect(
                first
                    == TransactionResponse(
                        outcome: .delivered, transactionId: id, credits: 300, balance: 300, entitlements: []))
            let second = try Self.decode(TransactionResponse.self, try await post())
            #expect(second.outcome == .duplicate)
            #expect(second.balance == 300)

            let me = try Self.decode(
                MeResponse.self, try await client.execute(uri: "/v1/me", method: .get, headers: Self.bearer(user.token))
            )
            var expected = MeResponse(
                supportId: user.supportId, balance: 300, deficit: 0, entitlements: [], backup: nil,
                wallet: "device", grantedEntitlements: [], balances: ["credits": 300], deficits: ["credits": 0])
            expected.expiring = []
            #expect(me == expected)

            // Apple refunds it; the device posts the refunded transaction: taken back once.
            try await setup.store.refund(transactionId: id)
            let refunded = try await client.execute(
                uri: "/v1/transactions", method: .post, headers: Self.bearer(user.token),
                body: try Self.body(
                    TransactionRequest(signedTransaction: try await setup.store.signedTransaction(id: id))))
            let revoked = try Self.decode(TransactionResponse.self, refunded)
            #expect(revoked.outcome == .revoked)
            #expect(revoked.balance == 0)
            // The old, pre-refund JWS replayed: still revoked, nothing credited.
            let replay = try Self.decode(TransactionResponse.self, try await post())
            #expect(replay.outcome == .revoked)
            #expect(replay.balance == 0)
        }
    }

    @Test("entitlements follow a non-consumable")
    func entitlements() async throws {
        let setup = try Setup()
        try await setup.app.test(.router) { client in
            let user = try Self.decode(
                CreateUserResponse.self, try await client.execute(uri: "/v1/users", method: .post))
            let bought = try await setup.store.purchase(
                account: "bob", productId: "com.example.noads", appAccountToken: user.appAccountToken)
            let signed = try await setup.store.signedTransaction(id: try #require(bought.transactionIds.first))
            let answer = try Self.decode(
                TransactionResponse.self,
                try await client.execute(
                    uri: "/v1/transactions", method: .post, headers: Self.bearer(user.token),
                    body: try Self.body(TransactionRequest(signedTransaction: signed))))
            #expect(answer.entitlements == ["adFree"])
            #expect(answer.credits == 0)
        }
    }

    @Test(
        "refusals: no token, another user's transaction, forged data, bad bodies; nothing changes",
        arguments: ServerEngine.allCases)
    func refusals(engine: ServerEngine) async throws {
        let setup = try Setup(store: try await engine.makeStore())
        try await setup.app.test(.router) { client in
            #expect(try await client.execute(uri: "/v1/me", method: .get).status == .unauthorized)
            #expect(
                try await client.execute(uri: "/v1/me", method: .get, headers: Self.bearer("nope")).status
                    == .unauthorized)
            let alice = try Self.decode(
                CreateUserResponse.self, try await client.execute(uri: "/v1/users", method: .post))
            let mallory = try Self.decode(
                CreateUserResponse.self, try await client.execute(uri: "/v1/users", method: .post))
            let bought = try await setup.store.purchase(
                account: "alice", productId: "com.example.credits", appAccountToken: alice.appAccountToken)
            let signed = try await setup.store.signedTransaction(id: try #require(bought.transactionIds.first))

            let stolen = try await client.execute(
                uri: "/v1/transactions", method: .post, headers: Self.bearer(mallory.token),
                body: try Self.body(TransactionRequest(signedTransaction: signed)))
            #expect(stolen.status == .forbidden)
            #expect(try Self.decode(ErrorResponse.self, stolen).error.code == "wrong-user")

            // Without an appAccountToken, a transaction belongs to the first user who delivers it.
            let anonymous = try await setup.store.purchase(account: "alice", productId: "com.example.credits")
            let unnamed = try await setup.store.signedTransaction(id: try #require(anonymous.transactionIds.first))
            let first = try await client.execute(
                uri: "/v1/transactions", method: .post, headers: Self.bearer(mallory.token),
                body: try Self.body(TransactionRequest(signedTransaction: unnamed)))
            #expect(try Self.decode(TransactionResponse.self, first).outcome == .delivered)
            let second = try await client.execute(
                uri: "/v1/transactions", method: .post, headers: Self.bearer(alice.token),
                body: try Self.body(TransactionRequest(signedTransaction: unnamed)))
            #expect(second.status == .forbidden)
            #expect(try Self.decode(ErrorResponse.self, second).error.code == "wrong-user")

            var parts = signed.split(separator: ".").map(String.init)
            parts[1] = String(parts[1].reversed())
            let forged = try await client.execute(
                uri: "/v1/transactions", method: .post, headers: Self.bearer(alice.token),
                body: try Self.body(TransactionRequest(signedTransaction: parts.joined(separator: "."))))
            #expect(forged.status == .unprocessableContent)
            #expect(try Self.decode(ErrorResponse.self, forged).error.code == "VERIFICATION_FAILURE")

            let untrusted = try SimulatorPKI(
                validFrom: Self.start.addingTimeInterval(-86_400), leafValidUntil: Self.start.addingTimeInterval(86_400)
            )
            let payload =
                #"{"transactionId":"9","productId":"com.example.credits","bundleId":"com.example.coffer","environment":"Sandbox","purchaseDate":1767225600000,"signedDate":1767225600000}"#
            let strange = try await client.execute(
                uri: "/v1/transactions", method: .post, headers: Self.bearer(alice.token),
                body: try Self.body(
                    TransactionRequest(signedTransaction: try untrusted.signer().sign(payloadJSON: Data(payload.utf8))))
            )
            #expect(try Self.decode(ErrorResponse.self, strange).error.code == "INVALID_CHAIN")

            let malformed = try await client.execute(
                uri: "/v1/transactions", method: .post, headers: Self.bearer(alice.token),
                body: ByteBuffer(string: #"{"signedTransaction": "a", "signedTransaction": "b"}"#))
            #expect(malformed.status == .badRequest)
            let huge = try await client.execute(
                uri: "/v1/transactions", method: .post, headers: Self.bearer(alice.token),
                body: ByteBuffer(string: String(repeating: "x", count: 200_000)))
            #expect(huge.status == .contentTooLarge)

            for (token, balance) in [(alice.token, 0), (mallory.token, 100)] {
                let me = try Self.decode(
                    MeResponse.self, try await client.execute(uri: "/v1/me", method: .get, headers: Self.bearer(token)))
                #expect(me.balance == Int64(balance))
            }
        }
    }

    @Test("50 concurrent posts of one transaction credit it once", arguments: ServerEngine.allCases)
    func concurrentDeliveries(engine: ServerEngine) async throws {
        let setup = try Setup(store: try await engine.makeStore())
        try await setup.app.test(.router) { client in
            let user = try Self.decode(
                CreateUserResponse.self, try await client.execute(uri: "/v1/users", method: .post))
            let bought = try await setup.store.purchase(
                account: "carol", productId: "com.example.credits", appAccountToken: user.appAccountToken)
            let signed = try await setup.store.signedTransaction(id: try #require(bought.transactionIds.first))
            let outcomes = try await withThrowingTaskGroup(of: TransactionOutcome.self) { group in
                for _ in 0..<50 {
                    group.addTask {
                        try Self.decode(
                            TransactionResponse.self,
                            try await client.execute(
                                uri: "/v1/transactions", method: .post, headers: Self.bearer(user.token),
                                body: try Self.body(TransactionRequest(signedTransaction: signed)))
                        ).outcome
                    }
                }
                return try await group.reduce(into: [TransactionOutcome]()) { $0.append($1) }
            }
            #expect(outcomes.filter { $0 == .delivered }.count == 1)
            #expect(outcomes.filter { $0 == .duplicate }.count == 49)
            let me = try Self.decode(
                MeResponse.self, try await client.execute(uri: "/v1/me", method: .get, headers: Self.bearer(user.token))
            )
            #expect(me.balance == 100)
        }
    }
}

/// Group commit: concurrent deliveries share commits.
@Suite("Group commit", .timeLimit(.minutes(1)))
struct GroupCommitTests {
    @Test("64 concurrent deliveries of distinct transactions share a few commits, each delivered once")
    func sharedCommits() async throws {
        let store = CountingStore(base: InMemoryStore(), commitTime: .milliseconds(20))
        let setup = try ClientAPITests.Setup(store: store)
        try await setup.app.test(.router) { client in
            let user = try ClientAPITests.decode(
                CreateUserResponse.self, try await client.execute(uri: "/v1/users", method: .post))
            var signed: [String] = []
            for _ in 0..<64 {
                let bought = try await setup.store.purchase(
                    account: "max", productId: "com.example.credits", appAccountToken: user.appAccountToken)
                signed.append(try await setup.store.signedTransaction(id: try #require(bought.transactionIds.first)))
            }
            let transactions = signed
            let outcomes = try await withThrowingTaskGroup(of: TransactionOutcome.self) { group in
                for jws in transactions {
                    group.addTask {
                        try ClientAPITests.decode(
                            TransactionResponse.self,
                            try await client.execute(
                                uri: "/v1/transactions", method: .post, headers: ClientAPITests.bearer(user.token),
                                body: try ClientAPITests.body(TransactionRequest(signedTransaction: jws)))
                        ).outcome
                    }
                }
                return try await group.reduce(into: [TransactionOutcome]()) { $0.append($1) }
            }
            #expect(outcomes.count == 64)
            #expect(outcomes.allSatisfy { $0 == .delivered })
            #expect(store.commits < 32, "\(store.commits) commits for 64 deliveries")
            let me = try ClientAPITests.decode(
                MeResponse.self,
                try await client.execute(uri: "/v1/me", method: .get, headers: ClientAPITests.bearer(user.token)))
            #expect(me.balance == 6_400)
        }
    }
}

/// The delivery's answer carries the customer's entitlements from the ledger's write, with no read of its own.
@Suite("Entitlements in the delivery's answer")
struct DeliveryAnswerEntitlementTests {
    @Test("a purchase's answer unlocks what it bought, read in the write: the store is asked for no entitlement read")
    func fromTheWrite() async throws {
        let store = CountingStore(base: InMemoryStore())
        let setup = try ClientAPITests.Setup(store: store)
        try await setup.app.test(.router) { client in
            let user = try ClientAPITests.decode(
                CreateUserResponse.self, try await client.execute(uri: "/v1/users", method: .post))
            let bought = try await setup.store.purchase(
                account: "max", productId: "com.example.noads", appAccountToken: user.appAccountToken)
            let jws = try await setup.store.signedTransaction(id: try #require(bought.transactionIds.first))
            for outcome in [TransactionOutcome.delivered, .duplicate] {
                let answer = try ClientAPITests.decode(
                    TransactionResponse.self,
                    try await client.execute(
                        uri: "/v1/transactions", method: .post, headers: ClientAPITests.bearer(user.token),
                        body: try ClientAPITests.body(TransactionRequest(signedTransaction: jws))))
                #expect(answer.outcome == outcome)
                #expect(answer.entitlements == ["adFree"])
            }
            #expect(store.calls("receipts") + store.calls("entitlementGrants") == 0)
            #expect(store.calls("renewalStates") == 0)
        }
    }
}
