import CofferAPI
import CofferAdmin
import CofferAppStore
import CofferCore
import CofferServer
import CofferService
import CofferSimulator
import CofferStore
import CofferTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

/// The server as an attacker meets it: every route without credentials, with another user's token,
/// oversized and deeply nested bodies, and SQL metacharacters in every search field.
// A bound against a hang, not a speed check: the absurd-input sweep alone takes most of a minute, and up to two
// while every other suite runs beside it on this 2-core machine (119.5 s measured in a CI run).
@Suite("Security", .timeLimit(.minutes(6)))
struct SecurityTests {
    typealias Fixture = ClientAPITests

    /// Routes anyone may call, and what they answer a stranger.
    static let open: Set<String> = [
        "GET /healthz", "GET /readyz", "GET /openapi.json", "GET /metrics", "GET /v1/catalog", "POST /v1/users",
        "POST /v1/users/cloudkit", "POST /v1/apple/notifications", "GET /admin/login", "POST /admin/login",
    ]

    /// A route as `METHOD /path` with sample values for its parameters.
    static func request(_ route: String) -> (method: HTTPRequest.Method, uri: String) {
        let parts = route.split(separator: " ", maxSplits: 1).map(String.init)
        let uri = parts[1].replacingOccurrences(of: "{supportId}", with: "_0123456789ab")
            .replacingOccurrences(of: "{id}", with: UUID().uuidString.lowercased())
        return (HTTPRequest.Method(parts[0])!, uri)
    }

    @Test("every route but the open ones refuses a request without credentials, and the open ones are known")
    func withoutCredentials() async throws {
        let setup = try NotificationTests.Setup()
        let routes = try serverRoutes(
            configuration: setup.configuration, dependencies: try setup.dependencies(api: nil))
        #expect(Set(routes).isSuperset(of: Self.open), "an open route went away: update the list")
        try await setup.app.test(.router) { client in
            for route in routes where !Self.open.contains(route) {
                let (method, uri) = Self.request(route)
                let response = try await client.execute(
                    uri: uri, method: method, headers: [.contentType: "application/json"],
                    body: ByteBuffer(string: "{}"))
                let body = String(buffer: response.body)
                if uri.hasPrefix("/admin") {
                    // The panel sends a stranger to its sign-in page, or refuses a form without a session.
                    let location = response.headers[.location] ?? ""
                    #expect(
                        (response.status == .seeOther && location.hasPrefix("/admin/login"))
                            || response.status == .forbidden,
                        "\(route) answered \(response.status) to a stranger")
                } else {
                    #expect(response.status == .unauthorized, "\(route) answered \(response.status) to a stranger")
                    #expect(!body.contains("supportId\":\"_"), "\(route) told a stranger about a user")
                }
            }
            // The open routes tell a stranger nothing about users.
            let notification = try await client.execute(
                uri: "/v1/apple/notifications", method: .post, headers: [.contentType: "application/json"],
                body: ByteBuffer(string: #"{"signedPayload":"not.a.jws"}"#))
            #expect(notification.status == .badRequest || notification.status == .unprocessableContent)
            let login = try await client.execute(
                uri: "/admin/login", method: .post, headers: [.contentType: "application/x-www-form-urlencoded"],
                body: ByteBuffer(string: "name=admin&password=guess"))
            #expect(login.status == .forbidden || login.status == .badRequest, "a sign-in without its CSRF token")
        }
    }

    @Test("a user's token opens that user's records only", arguments: ServerEngine.allCases)
    func anotherUsersToken(engine: ServerEngine) async throws {
        let setup = try Fixture.Setup(store: try await engine.makeStore(), wallet: .server)
        try await setup.app.test(.router) { client in
            let alice = try Fixture.decode(
                CreateUserResponse.self, try await client.execute(uri: "/v1/users", method: .post))
            let mallory = try Fixture.decode(
                CreateUserResponse.self, try await client.execute(uri: "/v1/users", method: .post))
            let aliceId = try #require(SupportID(alice.supportId))
            let aliceUser = try #require(try await setup.cofferStore.user(supportId: aliceId, environment: .sandbox))
            let grant = Grant(
                environment: .sandbox, recipient: aliceUser.id, credits: 400, reason: "Ticket #1", createdBy: "support",
                createdAt: Fixture.start)
            try await setup.cofferStore.createGrant(grant)

            // Mallory cannot claim, see or spend Alice's grant, nor take her purchase.
            let claim = try await client.execute(
                uri: "/v1/me/grants/\(grant.id.uuidString.lowercased())/claim", method: .post,
                headers: Fixture.bearer(mallory.token))
            #expect(claim.status == .notFound)
            let listed = try await client.execute(
                uri: "/v1/me/grants", method: .get, headers: Fixture.bearer(mallory.token))
            #expect(!String(buffer: listed.body).contains(grant.id.uuidString.lowercased()))
            _ = try await setup.store.purchase(
                account: "alice", productId: "com.example.credits", appAccountToken: alice.appAccountToken)
            let signed = try await setup.store.signedTransaction(id: "2000000000")
            let taken = try await client.execute(
                uri: "/v1/transactions", method: .post, headers: Fixture.bearer(mallory.token),
                body: try Fixture.body(TransactionRequest(signedTransaction: signed)))
            #expect(taken.status == .forbidden || taken.status == .conflict, "answered \(taken.status)")
            let me = try Fixture.decode(
                MeResponse.self,
                try await client.execute(uri: "/v1/me", method: .get, headers: Fixture.bearer(mallory.token)))
            #expect(me.supportId == mallory.supportId && me.balance == 0)
            // Alice still gets hers.
            let delivered = try await client.execute(
                uri: "/v1/transactions", method: .post, headers: Fixture.bearer(alice.token),
                body: try Fixture.body(TransactionRequest(signedTransaction: signed)))
            #expect(delivered.status == .ok)
            // A token that is not one, or one with its last character changed, opens nothing.
            for token in ["", "x", String(alice.token.dropLast()) + (alice.token.hasSuffix("A") ? "B" : "A")] {
                let response = try await client.execute(uri: "/v1/me", method: .get, headers: Fixture.bearer(token))
                #expect(response.status == .unauthorized)
            }
        }
    }

    @Test("every JSON route refuses an oversized body and deeply nested JSON, and changes nothing")
    func hostileBodies() async throws {
        let setup = try NotificationTests.Setup()
        let routes = try serverRoutes(
            configuration: setup.configuration, dependencies: try setup.dependencies(api: nil))
        let jsonRoutes = routes.filter {
            ($0.hasPrefix("POST /v1/") || $0.hasPrefix("PUT /v1/")) && !$0.hasPrefix("POST /v1/admin")
                && $0 != "POST /v1/users"
        }
        #expect(jsonRoutes.count >= 6)
        // Over real HTTP, as a client sends it (with its Content-Length).
        try await setup.app.test(.live) { client in
            let user = try Fixture.decode(
                CreateUserResponse.self, try await client.execute(uri: "/v1/users", method: .post))
            var headers = Fixture.bearer(user.token)
            headers[.contentType] = "application/json"
            headers[HTTPField.Name("Idempotency-Key")!] = "hostile"
            let oversized = ByteBuffer(
                string: "{\"signedTransaction\":\"" + String(repeating: "a", count: 70_000) + "\"}")
            let nested = ByteBuffer(
                string: String(repeating: "[", count: 20_000) + String(repeating: "]", count: 20_000))
            let deepObject = ByteBuffer(
                string: String(repeating: "{\"a\":", count: 10_000) + "1" + String(repeating: "}", count: 10_000))
            for route in jsonRoutes {
                let (method, uri) = Self.request(route)
                let big = try await client.execute(uri: uri, method: method, headers: headers, body: oversized)
                if ["POST /v1/receipts/verify", "PUT /v1/me/verify-report"].contains(route) {
                    // These two take more by design (1 MiB, 256 KiB): 70 KB reaches the route, which refuses
                    // what it is not; the OpenAPI conformance sweep checks 413 above every route's limit.
                    #expect(
                        [.badRequest, .unprocessableContent].contains(big.status),
                        "\(route) answered \(big.status) to 70 KB")
                } else {
                    #expect(big.status == .contentTooLarge, "\(route) answered \(big.status) to 70 KB")
                }
                for body in [nested, deepObject] {
                    // A clear refusal: the body is not what the route reads (400), or the route refuses for a
                    // reason it checks first (no such grant, the device wallet has no spending on the server).
                    let response = try await client.execute(uri: uri, method: method, headers: headers, body: body)
                    #expect(
                        [.badRequest, .notFound, .conflict, .unprocessableContent].contains(response.status),
                        "\(route) answered \(response.status) to deeply nested JSON")
                }
            }
            // Nothing changed, and the server still answers.
            let me = try Fixture.decode(
                MeResponse.self,
                try await client.execute(uri: "/v1/me", method: .get, headers: Fixture.bearer(user.token)))
            #expect(me.balance == 0 && me.backup == nil)
            let supportId = try #require(SupportID(user.supportId))
            let stored = try #require(try await setup.store.user(supportId: supportId, environment: .sandbox))
            #expect(try await setup.store.entries(owner: stored.id, environment: .sandbox).isEmpty)
        }
    }

    @Test("SQL metacharacters in every search field find nothing and break nothing", arguments: ServerEngine.allCases)
    func metacharacters(engine: ServerEngine) async throws {
        let store = try await engine.makeStore()
        let setup = try Fixture.Setup(store: store, wallet: .server)
        let signer = try await AdminAPITests.key(in: store)
        let attacks = [
            "' OR '1'='1", "'; DROP TABLE users; --", "_%", "%", "\\", "\"", "_0' UNION SELECT * FROM users --",
            "2000000000' OR 1=1 --", "\u{0}",
        ]
        try await setup.app.test(.router) { client in
            let user = try Fixture.decode(
                CreateUserResponse.self, try await client.execute(uri: "/v1/users", method: .post))
            for attack in attacks {
                let query = try #require(attack.addingPercentEncoding(withAllowedCharacters: .alphanumerics))
                let response = try await AdminAPITests.send(
                    client, signer, .get, "/v1/admin/users?search=\(query)")
                #expect(
                    response.status == .ok || response.status == .badRequest,
                    "search \(attack.debugDescription) answered \(response.status)")
                if response.status == .ok {
                    let found = try AdminAPITests.decode(UserSearchResult.self, response)
                    #expect(found.users.isEmpty, "search \(attack.debugDescription) found \(found.users.count) users")
                }
                let detail = try await AdminAPITests.send(client, signer, .get, "/v1/admin/users/\(query)")
                #expect(detail.status == .notFound || detail.status == .badRequest)
                let grants = try await AdminAPITests.send(client, signer, .get, "/v1/admin/grants?status=\(query)")
                #expect(grants.status == .badRequest)
            }
            // The user is still there, found by the Support ID's prefix.
            let prefix = String(user.supportId.prefix(6))
            let found = try AdminAPITests.decode(
                UserSearchResult.self,
                try await AdminAPITests.send(client, signer, .get, "/v1/admin/users?search=\(prefix)"))
            #expect(found.users.map(\.supportId) == [user.supportId])
            #expect(try await store.userCount(environment: .sandbox) == 1)
        }
    }

    @Test("Production trusts neither the simulator's root nor Xcode's signing")
    func productionRefusesTestData() async throws {
        let setup = try NotificationTests.Setup()
        #expect(throws: VerificationError.self, "the simulator's root in Production") {
            try SignedDataVerifier(
                rootCertificates: [setup.pki.rootDER()], bundleId: Fixture.bundleId, appAppleId: 1_234,
                environment: .production)
        }
        // Xcode's StoreKit testing signs with its own key: a Production server (Apple's roots only) refuses it.
        var configuration = ServerConfiguration(bundleId: "com.example.app")
        configuration.environment = .production
        let production = try buildApplication(
            configuration: configuration,
            dependencies: try ServerDependencies(
                store: InMemoryStore(),
                verifier: try SignedDataVerifier(
                    rootCertificates: [], bundleId: "com.example.app", appAppleId: 1_234, environment: .production),
                catalog: setup.catalog))
        let file = try AppleFixtures.url("xcode/xcode-signed-transaction")
        let xcode = try String(contentsOf: file, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        try await production.test(.router) { client in
            let user = try Fixture.decode(
                CreateUserResponse.self, try await client.execute(uri: "/v1/users", method: .post))
            let response = try await client.execute(
                uri: "/v1/transactions", method: .post, headers: Fixture.bearer(user.token),
                body: try Fixture.body(TransactionRequest(signedTransaction: xcode)))
            #expect(response.status == .unprocessableContent || response.status == .badRequest)
            let me = try Fixture.decode(
                MeResponse.self,
                try await client.execute(uri: "/v1/me", method: .get, headers: Fixture.bearer(user.token)))
            #expect(me.balance == 0)
        }
    }

    @Test("a legacy receipt signed outside Apple's receipt policy delivers nothing; the simulator's receipt does")
    func forgedReceipts() async throws {
        let setup = try NotificationTests.Setup()
        let created = NotificationTests.start
        func authority(_ options: SimulatorReceiptAuthority.Options) throws -> SimulatorReceiptAuthority {
            try SimulatorReceiptAuthority(
                validFrom: created.addingTimeInterval(-86_400), validUntil: created.addingTimeInterval(800 * 86_400),
                options: options)
        }
        let genuine = try authority(.init())
        var forgeries: [(String, SimulatorReceiptAuthority)] = []
        for (name, change) in [
            ("no leaf OID", { (options: inout SimulatorReceiptAuthority.Options) in options.leafOID = false }),
            ("no intermediate OID", { $0.intermediateOID = false }),
            ("chain of 2", { $0.shape = .leafUnderRoot }),
            ("chain of 4", { $0.shape = .twoIntermediates }),
            ("self-signed intermediate", { $0.shape = .selfSignedIntermediate }),
        ] as [(String, (inout SimulatorReceiptAuthority.Options) -> Void)] {
            var options = SimulatorReceiptAuthority.Options()
            change(&options)
            forgeries.append((name, try authority(options)))
        }
        let forged = forgeries
        let clock = setup.clock
        let reader = try AppReceiptReader(
            trustedRoots: [AppleRoots.rootCA(), genuine.rootDER()] + forgeries.map { try $0.1.rootDER() },
            now: { clock.now() })
        let app = try buildApplication(
            configuration: setup.configuration,
            dependencies: try ServerDependencies(
                store: setup.store, verifier: setup.verifier, catalog: setup.catalog, receiptReader: reader,
                now: { clock.now() }))
        _ = try await setup.apple.purchase(account: "alice", productId: "com.example.credits")
        try await app.test(.router) { client in
            let alice = try await NotificationTests.createUser(client)
            for (name, forger) in forged {
                let receipt = try await setup.apple.signedAppReceipt(account: "alice", authority: forger)
                let response = try await ReceiptsAPITests.post(receipt, token: alice.token, client)
                #expect(response.status == .unprocessableContent, "\(name)")
                #expect(String(buffer: response.body).contains("INVALID_CHAIN"), "\(name)")
                #expect(try await NotificationTests.me(alice, client).balance == 0, "\(name) delivered")
            }
            let receipt = try await setup.apple.signedAppReceipt(account: "alice", authority: genuine)
            let answer = try Fixture.decode(
                ReceiptVerifyResponse.self, try await ReceiptsAPITests.post(receipt, token: alice.token, client))
            #expect(answer.transactions.map(\.outcome) == ["delivered"])
            #expect(try await NotificationTests.me(alice, client).balance == 100)
        }
    }
}
