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
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Synchronization
import Testing

/// The OpenAPI document (`Sources/CofferServer/openapi.json`, written by `scripts/openapi.py`) against the running
/// server: a scenario calls every documented operation through the real router, for its successes and its
/// typical refusals, and every answer must be one the document lists for that operation, with a body its schema
/// accepts; every request body the scenario sends as valid must be one the document's request schema accepts, and
/// every one it sends as invalid one the schema refuses.
@Suite("OpenAPI conformance", .timeLimit(.minutes(3)))
struct OpenAPIConformanceTests {
    typealias Setup = NotificationTests.Setup

    @Test("every documented operation answers, in success and refusal, what the document says, with valid bodies")
    func everyOperation() async throws {
        let started = ContinuousClock.now
        let api = try DocumentedAPI()
        var configuration = Setup.defaultConfiguration(wallet: .server)
        configuration.metricsToken = "metrics-secret"
        let setup = try Setup(configuration: configuration)
        // The simulator's legacy receipts, trusted by the server, so receipts/verify can succeed.
        let authority = try SimulatorReceiptAuthority(
            validFrom: NotificationTests.start.addingTimeInterval(-86_400),
            validUntil: NotificationTests.start.addingTimeInterval(800 * 86_400))
        var dependencies = try setup.dependencies(api: nil)
        let clock = setup.clock
        dependencies.receiptReader = try AppReceiptReader(trustedRoots: [authority.rootDER()], now: { clock.now() })
        let app = buildApplication(configuration: configuration, dependencies: dependencies)
        let signer = try await AdminAPITests.key(in: setup.store)

        let limit = configuration.maximumBodySize
        let alice = try await app.test(.router) { client in
            let world = Scenario(api: api, setup: setup, client: client, signer: signer, authority: authority)
            try await world.operations()
            let (alice, anonymous) = try await world.clientAPI()
            try await world.adminAPI(alice: alice.token, anonymous: anonymous.token)
            try await api.withoutCredentials(client)
            try await api.malformedBodies(client, token: alice.token, signer: signer, at: setup.clock.now())
            try await api.oversizedBodies(client, limit: limit)
            return alice
        }
        try await Self.liveOnly(api, setup: setup, signer: signer, busy: alice.token)
        try await Self.databaseDown(api)

        let missing = api.operations.keys.filter { !api.exercised.contains($0) }.sorted()
        #expect(missing.isEmpty, "documented operations no scenario calls: \(missing)")
        #expect(api.operations.count >= 30)
        let seconds = (ContinuousClock.now - started).components.seconds
        print(
            "OpenAPI conformance: \(api.exercised.count) of \(api.operations.count) operations, "
                + "\(api.answers) answers checked (\(api.jsonAnswers) JSON bodies validated), "
                + "\(api.requestBodies) request bodies checked, in \(seconds) s")
    }

    /// What needs a socket: the event stream (the data it sends validated too), and the per-address limits on new
    /// users and on notifications that fail verification.
    static func liveOnly(_ api: DocumentedAPI, setup: Setup, signer: AdminRequestSigner, busy: String) async throws {
        var configuration = setup.configuration
        configuration.eventStreamsPerUser = 1
        configuration.eventStreamsTotal = 2
        configuration.userCreationLimit = RateLimit(burst: 2, perSecond: 0.001)
        configuration.notificationFailureLimit = RateLimit(burst: 2, perSecond: 0.001)
        let app = buildApplication(configuration: configuration, dependencies: try setup.dependencies(api: nil))
        try await app.test(.live) { client in
            let port = try #require(client.port)
            var users: [CreateUserResponse] = []
            for _ in 0..<2 {
                let created = try await api.send(client, .post, "/v1/users", expect: .created)
                users.append(try ClientAPITests.decode(CreateUserResponse.self, created))
            }
            try await api.send(client, .post, "/v1/users", expect: .tooManyRequests)
            let junk = try DocumentedAPI.RequestBody.json(NotificationRequest(signedPayload: "not.a.jws"))
            for _ in 0..<2 {
                try await api.send(
                    client, .post, "/v1/apple/notifications", body: junk, expect: .unprocessableContent)
            }
            try await api.send(client, .post, "/v1/apple/notifications", body: junk, expect: .tooManyRequests)

            // The stream opens (text/event-stream); support's grant arrives on it as a ServerEvent.
            let first = try await api.events(port: port, token: users[0].token, expect: .ok)
            var iterator = first.body.makeAsyncIterator()
            var received = ""
            while !received.contains(": connected") {
                received += String(buffer: try #require(try await iterator.next()))
            }
            try await api.admin(
                client, signer, .post, "/v1/admin/grants",
                body: GrantRequest(supportId: users[0].supportId, credits: 5, reason: "Ticket #9"),
                at: setup.clock.now(), expect: .created)
            while !received.contains("event: grant\ndata: {") || !received.hasSuffix("\n\n") {
                received += String(buffer: try #require(try await iterator.next()))
            }
            let grant = try #require(received.firstRange(of: "event: grant\ndata: "))
            try api.checkEvent(Data(received[grant.upperBound...].prefix { $0 != "\n" }.utf8))
            // One stream a user, two in all (this server's settings).
            try await api.events(port: port, token: users[0].token, expect: .tooManyRequests)
            let second = try await api.events(port: port, token: users[1].token, expect: .ok)
            try await api.events(port: port, token: busy, expect: .serviceUnavailable)
            try await api.events(port: port, token: nil, expect: .unauthorized)
            withExtendedLifetime((first, iterator, second)) {}  // Both streams stay open until here.
        }
    }

    /// Every operation with a database that does not answer: 503 with Retry-After (the operations that never
    /// touch the store still answer).
    static func databaseDown(_ api: DocumentedAPI) async throws {
        let setup = try Setup(store: FailingStore(error: .unavailable("no answer within 5 s")))
        _ = try await setup.apple.purchase(account: "ida", productId: "com.example.credits")
        let notification = try #require(await setup.apple.sentNotifications().first).signedPayload
        let stranger = try AdminRequestSigner(
            keyId: "000000000000000000000000",
            privateKeyPEM: NewAdminKey(name: "x", at: NotificationTests.start).privateKeyPEM)
        let answering: Set<String> = ["GET /healthz", "GET /openapi.json", "GET /metrics", "GET /v1/catalog"]
        let bodies: [String: DocumentedAPI.RequestBody] = [
            "POST /v1/apple/notifications": try .json(NotificationRequest(signedPayload: notification)),
            "POST /v1/users/cloudkit": .valid(Scenario.cloudKitClaim("_ida", key: "install-ida-key-0001")),
        ]
        try await setup.app.test(.router) { client in
            for key in api.operations.keys.sorted() {
                let (method, uri) = DocumentedAPI.sample(key)
                let expected: HTTPResponse.Status = answering.contains(key) ? .ok : .serviceUnavailable
                // The routes anyone may call read their body before the store: they get one that verifies.
                let body = bodies[key] ?? .none
                let response: TestResponse
                if uri.hasPrefix("/v1/admin") {
                    response = try await api.admin(
                        client, stranger, method, uri, at: setup.clock.now(), expect: expected)
                } else {
                    response = try await api.send(
                        client, method, uri, headers: ClientAPITests.bearer("any token"), body: body,
                        expect: expected)
                }
                if expected == .serviceUnavailable, key != "GET /readyz" {
                    #expect(response.headers[.retryAfter] == "1", "\(key)")
                }
            }
        }
    }
}

/// The scenario through the router: one server wallet world with an Apple account customer, an anonymous install,
/// purchases, a subscription, a refund, grants, a merge and a deletion, so every schema meets its fields filled.
struct Scenario {
    let api: DocumentedAPI
    let setup: NotificationTests.Setup
    let client: any TestClientProtocol
    let signer: AdminRequestSigner
    let authority: SimulatorReceiptAuthority

    var apple: SimulatedAppStore { setup.apple }

    @discardableResult
    func send(
        _ method: HTTPRequest.Method, _ uri: String, token: String? = nil, headers: HTTPFields = [:],
        body: DocumentedAPI.RequestBody = .none, expect status: HTTPResponse.Status,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> TestResponse {
        var headers = headers
        if let token { headers[.authorization] = "Bearer \(token)" }
        return try await api.send(
            client, method, uri, headers: headers, body: body, expect: status, sourceLocation: sourceLocation)
    }

    @discardableResult
    func admin(
        _ method: HTTPRequest.Method, _ uri: String, body: (some Encodable)? = String?.none, valid: Bool = true,
        expect status: HTTPResponse.Status, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> TestResponse {
        try await api.admin(
            client, signer, method, uri, body: body, valid: valid, at: setup.clock.now(), expect: status,
            sourceLocation: sourceLocation)
    }

    /// Posts every notification the simulator sent after the first `skip`, as Apple would.
    func deliver(after skip: Int) async throws {
        for notification in await apple.sentNotifications().dropFirst(skip) {
            try await send(
                .post, "/v1/apple/notifications",
                body: try .json(NotificationRequest(signedPayload: notification.signedPayload)), expect: .ok)
        }
    }

    func createUser(_ body: DocumentedAPI.RequestBody = .none, expect status: HTTPResponse.Status = .created)
        async throws -> CreateUserResponse
    {
        try ClientAPITests.decode(
            CreateUserResponse.self, try await send(.post, "/v1/users", body: body, expect: status))
    }

    /// A claim of the customer imported from CloudKit as `name`.
    static func cloudKitClaim(_ name: String, key: String) -> String {
        #"{"claimKey": "\#(key)", "userRecordName": "\#(name)"}"#
    }

    /// The operations routes and the document itself.
    func operations() async throws {
        try await send(.get, "/openapi.json", expect: .ok)
        try await send(.get, "/healthz", expect: .ok)
        try await send(.get, "/readyz", expect: .ok)
        try await send(.get, "/metrics", expect: .unauthorized)
        try await send(.get, "/metrics", token: "metrics-secret", expect: .ok)
    }

    /// The client API and Apple's notifications.
    func clientAPI() async throws -> (alice: CreateUserResponse, anonymous: CreateUserResponse) {
        // Users: an anonymous install, an Apple account on two devices, refusals.
        let anonymous = try await createUser()
        let signedAlice = try await apple.signedAppTransaction(account: "alice")
        let alice = try await createUser(try .json(CreateUserRequest(signedAppTransaction: signedAlice)))
        let pad = try await createUser(
            try .json(CreateUserRequest(signedAppTransaction: signedAlice)), expect: .ok)
        try await send(.post, "/v1/users", body: .invalid(#"{"signedAppTransaction": 5}"#), expect: .badRequest)
        try await send(
            .post, "/v1/users", body: try .json(CreateUserRequest(signedAppTransaction: "not.a.jws")),
            expect: .unprocessableContent)
        let me = try await send(.get, "/v1/me", token: alice.token, expect: .ok)
        #expect(try ClientAPITests.decode(MeResponse.self, me).backup == nil)
        try await send(.get, "/v1/me", token: "not a token", expect: .unauthorized)

        // Purchases: credits presented by the app, a subscription through Apple's notifications, a refund.
        let credits = try #require(
            try await apple.purchase(
                account: "alice", productId: "com.example.credits", quantity: 2, appAccountToken: alice.appAccountToken
            ).transactionIds.first)
        let signedCredits = try await apple.signedTransaction(id: credits)
        let present = try DocumentedAPI.RequestBody.json(TransactionRequest(signedTransaction: signedCredits))
        try await send(.post, "/v1/transactions", token: alice.token, body: present, expect: .ok)
        try await send(.post, "/v1/transactions", token: alice.token, body: present, expect: .ok)
        try await send(.post, "/v1/transactions", token: anonymous.token, body: present, expect: .forbidden)
        var parts = signedCredits.split(separator: ".").map(String.init)
        parts[1] = String(parts[1].reversed())
        try await send(
            .post, "/v1/transactions", token: alice.token,
            body: try .json(TransactionRequest(signedTransaction: parts.joined(separator: "."))),
            expect: .unprocessableContent)
        try await send(
            .post, "/v1/transactions", token: alice.token,
            body: .raw(#"{"signedTransaction": "a", "signedTransaction": "b"}"#),
            expect: .badRequest)
        try await send(.post, "/v1/transactions", token: alice.token, body: .invalid("{}"), expect: .badRequest)
        _ = try await apple.purchase(
            account: "alice", productId: "com.example.pro.monthly", appAccountToken: alice.appAccountToken)
        let subscribed = await apple.sentNotifications().count
        try await deliver(after: 0)
        try await apple.refund(transactionId: credits)
        try await deliver(after: subscribed)
        try await send(
            .post, "/v1/transactions", token: alice.token,
            body: try .json(TransactionRequest(signedTransaction: try await apple.signedTransaction(id: credits))),
            expect: .ok)
        try await send(
            .post, "/v1/apple/notifications", body: try .json(NotificationRequest(signedPayload: "not.a.jws")),
            expect: .unprocessableContent)
        try await send(.post, "/v1/apple/notifications", body: .invalid(#"{"payload": "x"}"#), expect: .badRequest)
        try await send(.get, "/v1/me/purchases", token: alice.token, expect: .ok)
        try await send(.get, "/v1/me/adjustments", token: alice.token, expect: .ok)
        try await send(.get, "/v1/me", token: alice.token, expect: .ok)

        // A legacy receipt of everything alice bought: each purchase recorded already.
        let receipt = try await apple.signedAppReceipt(account: "alice", authority: authority)
        try await send(
            .post, "/v1/receipts/verify", token: alice.token,
            body: try .json(ReceiptVerifyRequest(receiptData: receipt)),
            expect: .ok)
        try await send(
            .post, "/v1/receipts/verify", token: alice.token,
            body: try .json(ReceiptVerifyRequest(receiptData: "bm90IGEgcmVjZWlwdA==")), expect: .unprocessableContent)

        // The app's own records: milestones, the Verify Purchases report, push tokens, the backup.
        // Alice has paid one period of pro, not the twelve its loyalty lifetime takes.
        try await send(
            .post, "/v1/me/milestones", token: alice.token, body: try .json(MilestoneRequest(name: "loyalty:pro")),
            expect: .unprocessableContent)
        try await send(
            .post, "/v1/me/milestones", token: alice.token, body: try .json(MilestoneRequest(name: "Not A Name")),
            expect: .badRequest)
        let item = VerifyReportItem(
            transactionId: credits, productId: "com.example.credits", finished: true, verified: true,
            verdict: "alreadyRecorded")
        var lost = item
        lost.verdict = "maybe"
        try await send(
            .put, "/v1/me/verify-report", token: alice.token, body: try .json(VerifyReportRequest(items: [item])),
            expect: .ok)
        try await send(
            .put, "/v1/me/verify-report", token: alice.token,
            body: .invalid(try DocumentedAPI.text(VerifyReportRequest(items: [lost]))),
            expect: .badRequest)
        let device = String(repeating: "ab", count: 32)
        let push = try DocumentedAPI.RequestBody.json(PushTokenRequest(token: device, environment: "sandbox"))
        let notHex = try DocumentedAPI.RequestBody.json(PushTokenRequest(token: "zz"))
        try await send(.put, "/v1/me/push-token", token: alice.token, body: push, expect: .noContent)
        try await send(.put, "/v1/me/push-token", token: alice.token, body: notHex, expect: .badRequest)
        try await send(.delete, "/v1/me/push-token", token: alice.token, body: push, expect: .noContent)
        try await send(.delete, "/v1/me/push-token", token: alice.token, body: push, expect: .notFound)
        try await send(.delete, "/v1/me/push-token", token: alice.token, body: notHex, expect: .badRequest)
        try await send(.get, "/v1/me/backup", token: alice.token, expect: .notFound)
        try await send(
            .put, "/v1/me/backup", token: alice.token, body: try .json(BackupRequest(value: 500, device: "phone")),
            expect: .ok)
        try await send(
            .put, "/v1/me/backup", token: alice.token, headers: [.ifMatch: "0"],
            body: try .json(BackupRequest(value: 1)), expect: .preconditionFailed)
        try await send(
            .put, "/v1/me/backup", token: alice.token, body: .invalid(#"{"value": -1}"#), expect: .badRequest)
        try await send(.get, "/v1/me/backup", token: alice.token, expect: .ok)
        try await send(.get, "/v1/me", token: alice.token, expect: .ok)

        // A CloudKit customer `coffer import cloudkit` brought in: claimed once, again with the same key, refused
        // to another; one nobody imported, and a claim key too short to be one.
        _ = try await AdminService(store: setup.store, catalog: setup.catalog, walletMode: .server).importCustomers(
            [CustomerImport(externalId: "_imported", balance: 70, grants: [])],
            source: AdminService.cloudKitSource, environment: .sandbox, actor: "test")
        for _ in 0..<2 {
            try await send(
                .post, "/v1/users/cloudkit", body: .valid(Self.cloudKitClaim("_imported", key: "install-one-key-0001")),
                expect: .ok)
        }
        try await send(
            .post, "/v1/users/cloudkit", body: .valid(Self.cloudKitClaim("_imported", key: "install-two-key-0002")),
            expect: .conflict)
        try await send(
            .post, "/v1/users/cloudkit", body: .valid(Self.cloudKitClaim("_nobody", key: "install-one-key-0001")),
            expect: .notFound)
        try await send(
            .post, "/v1/users/cloudkit", body: .invalid(Self.cloudKitClaim("_nobody", key: "short")),
            expect: .badRequest)

        // The pad signs out: its token stops working.
        try await send(.delete, "/v1/me/token", token: pad.token, expect: .noContent)
        try await send(.delete, "/v1/me/token", token: pad.token, expect: .unauthorized)
        return (alice, anonymous)
    }

    /// The admin API, and the client API's grants and spending that meet it.
    func adminAPI(alice: String, anonymous: String) async throws {
        let me = try ClientAPITests.decode(
            MeResponse.self, try await send(.get, "/v1/me", token: alice, expect: .ok))
        let anonymousId = try ClientAPITests.decode(
            MeResponse.self, try await send(.get, "/v1/me", token: anonymous, expect: .ok)
        ).supportId
        let nobody = "_000000000000"

        // Grants: created, one cancelled, claimed by the app; refusals on both sides.
        let grant = GrantRequest(supportId: me.supportId, credits: 500, reason: "Ticket #1")
        let kept = try AdminAPITests.decode(
            GrantView.self, try await admin(.post, "/v1/admin/grants", body: grant, expect: .created))
        var mistaken = grant
        mistaken.id = UUID().uuidString.lowercased()
        let cancelled = try AdminAPITests.decode(
            GrantView.self, try await admin(.post, "/v1/admin/grants", body: mistaken, expect: .created))
        var zero = grant
        zero.credits = 0
        try await admin(.post, "/v1/admin/grants", body: zero, valid: false, expect: .badRequest)
        try await admin(.post, "/v1/admin/grants", body: ["supportId": me.supportId], valid: false, expect: .badRequest)
        var stranger = grant
        stranger.supportId = nobody
        try await admin(.post, "/v1/admin/grants", body: stranger, expect: .notFound)
        try await admin(.post, "/v1/admin/grants/\(cancelled.id.uuidString.lowercased())/cancel", expect: .ok)
        try await admin(.post, "/v1/admin/grants/\(UUID().uuidString.lowercased())/cancel", expect: .notFound)
        try await send(.get, "/v1/me/grants", token: alice, expect: .ok)
        try await send(.get, "/v1/me/grants?status=pending", token: alice, expect: .ok)
        try await send(.get, "/v1/me/grants?status=lost", token: alice, expect: .badRequest)
        let keptId = kept.id.uuidString.lowercased()
        try await send(.post, "/v1/me/grants/\(keptId)/claim", token: alice, expect: .ok)
        try await send(.post, "/v1/me/grants/\(keptId)/claim", token: alice, expect: .ok)
        try await send(
            .post, "/v1/me/grants/\(cancelled.id.uuidString.lowercased())/claim", token: alice, expect: .conflict)
        try await send(.post, "/v1/me/grants/\(keptId)/claim", token: anonymous, expect: .notFound)
        try await admin(.post, "/v1/admin/grants/\(keptId)/cancel", expect: .badRequest)
        try await admin(.get, "/v1/admin/grants", expect: .ok)
        try await admin(.get, "/v1/admin/grants?status=cancelled", expect: .ok)
        try await admin(.get, "/v1/admin/grants?status=lost", expect: .badRequest)

        // Spending from the server wallet, once per Idempotency-Key.
        func spend(_ amount: Int64, key: String?, valid: Bool = true, expect status: HTTPResponse.Status)
            async throws
        {
            var headers = HTTPFields()
            if let key { headers[HTTPField.Name("Idempotency-Key")!] = key }
            let body = try DocumentedAPI.text(SpendRequest(amount: amount))
            try await send(
                .post, "/v1/me/spend", token: alice, headers: headers, body: valid ? .valid(body) : .invalid(body),
                expect: status)
        }
        try await spend(100, key: "round-1", expect: .ok)
        try await spend(100, key: "round-1", expect: .ok)
        try await spend(200, key: "round-1", expect: .unprocessableContent)
        try await spend(1_000_000, key: "round-2", expect: .conflict)
        try await spend(0, key: "round-3", valid: false, expect: .unprocessableContent)
        try await spend(1, key: nil, expect: .badRequest)

        // Finding and reading customers.
        try await admin(.get, "/v1/admin/dashboard", expect: .ok)
        try await admin(.get, "/v1/admin/dashboard?environment=Bogus", expect: .badRequest)
        try await admin(.get, "/v1/admin/users", expect: .ok)
        try await admin(.get, "/v1/admin/users?search=\(me.supportId.dropFirst().prefix(6))&page=1", expect: .ok)
        try await admin(.get, "/v1/admin/users?page=x", expect: .badRequest)
        let detail = try AdminAPITests.decode(
            UserDetail.self, try await admin(.get, "/v1/admin/users/\(me.supportId)", expect: .ok))
        #expect(!detail.subscriptions.isEmpty && !detail.purchases.isEmpty && detail.verifyReport != nil)
        try await admin(.get, "/v1/admin/users/not-an-id", expect: .badRequest)
        try await admin(.get, "/v1/admin/users/\(nobody)", expect: .notFound)

        // Changing them: the balance, a merge, a deletion.
        let balance = "/v1/admin/users/\(me.supportId)/balance"
        try await admin(.post, balance, body: BalanceRequest(balance: 1_000, reason: "Ticket #2"), expect: .ok)
        try await admin(
            .post, balance, body: BalanceRequest(balance: -1, reason: "Ticket #2"), valid: false, expect: .badRequest)
        try await admin(
            .post, "/v1/admin/users/\(nobody)/balance", body: BalanceRequest(balance: 1, reason: "x"),
            expect: .notFound)
        let merge = MergeRequest(from: anonymousId, into: me.supportId, overrideReason: "Ticket #3")
        try await admin(.post, "/v1/admin/users/merge", body: merge, expect: .ok)
        try await admin(.post, "/v1/admin/users/merge", body: merge, expect: .badRequest)
        try await admin(
            .post, "/v1/admin/users/merge",
            body: MergeRequest(from: nobody, into: me.supportId, overrideReason: "Ticket #3"), expect: .notFound)
        let leaving = try await createUser()
        try await admin(.post, "/v1/admin/users/\(leaving.supportId)/delete", expect: .ok)
        try await admin(.post, "/v1/admin/users/\(leaving.supportId)/delete", expect: .badRequest)
        try await admin(.post, "/v1/admin/users/\(nobody)/delete", expect: .notFound)
        try await admin(.get, "/v1/admin/users/\(leaving.supportId)", expect: .ok)
        try await admin(.get, "/v1/admin/users/\(me.supportId)", expect: .ok)

        // The audit log, and the Sandbox-only cleanup last.
        try await admin(.get, "/v1/admin/audit", expect: .ok)
        try await admin(.get, "/v1/admin/audit?limit=0", expect: .badRequest)
        try await admin(.post, "/v1/admin/grants/delete-all?environment=Production", expect: .forbidden)
        try await admin(.post, "/v1/admin/grants/delete-all", expect: .ok)
    }
}

/// The document's operations, and what the scenario showed of them: each request and answer is checked against
/// the operation the document gives for its method and path.
final class DocumentedAPI: Sendable {
    /// A request's body, and what the document's request schema must make of it.
    enum RequestBody: Sendable {
        /// No body.
        case none
        /// JSON the schema accepts (the server may still refuse it for what a schema cannot say).
        case valid(String)
        /// JSON the schema refuses, as the server does.
        case invalid(String)
        /// Bytes the schema is not asked about: not JSON, a repeated key, an oversized body.
        case raw(String)

        /// `value` encoded as a client sends it, to be accepted.
        static func json(_ value: some Encodable) throws -> Self { .valid(try DocumentedAPI.text(value)) }

        var text: String? {
            switch self {
            case .none: nil
            case .valid(let text), .invalid(let text), .raw(let text): text
            }
        }
    }

    /// `value` as the JSON text a client sends.
    static func text(_ value: some Encodable) throws -> String {
        String(decoding: try JSONEncoder().encode(value), as: UTF8.self)
    }

    /// The document.
    let document: JSONValue
    /// Its schemas.
    let validator: JSONSchemaValidator
    /// Each operation as `METHOD /path`.
    let operations: [String: [String: JSONValue]]
    private let state = Mutex(State())

    /// The operations exercised (with the statuses seen) and the counts, for the summary.
    private struct State {
        var exercised: [String: Set<Int>] = [:]
        var answers = 0
        var jsonAnswers = 0
        var requestBodies = 0
    }

    var exercised: Set<String> { Set(state.withLock { $0.exercised.keys }) }
    var answers: Int { state.withLock { $0.answers } }
    var jsonAnswers: Int { state.withLock { $0.jsonAnswers } }
    var requestBodies: Int { state.withLock { $0.requestBodies } }

    /// The document in the repository, every schema in it (components, requests, answers, parameters) checked
    /// for keywords the validator does not know.
    init() throws {
        document = try JSONSchemaValidator.parse(try Data(contentsOf: OpenAPITests.documentURL))
        validator = try JSONSchemaValidator(document: document)
        guard case .object(let root) = document, case .object(let paths)? = root["paths"] else {
            throw JSONSchemaValidator.Unsupported(description: "the document has no paths")
        }
        var operations: [String: [String: JSONValue]] = [:]
        for (path, item) in paths {
            guard case .object(let methods) = item else { continue }
            for (method, operation) in methods {
                guard case .object(let fields) = operation else { continue }
                let key = "\(method.uppercased()) \(path)"
                operations[key] = fields
                for (location, schema) in Self.schemas(in: operation, at: key) {
                    try validator.check(schema, at: location)
                }
            }
        }
        self.operations = operations
    }

    /// Every `schema` inside an operation, with where it is.
    static func schemas(in value: JSONValue, at location: String) -> [(String, JSONValue)] {
        switch value {
        case .object(let members):
            return members.sorted { $0.key < $1.key }.flatMap { key, member in
                key == "schema" ? [("\(location)/schema", member)] : schemas(in: member, at: "\(location)/\(key)")
            }
        case .array(let items):
            return items.enumerated().flatMap { schemas(in: $1, at: "\(location)/\($0)") }
        default: return []
        }
    }

    /// A request for operation `key` with sample values for its path parameters.
    static func sample(_ key: String) -> (method: HTTPRequest.Method, uri: String) {
        SecurityTests.request(key)
    }

    /// The operation a request is for: the documented path its path matches, literal segments before parameters.
    func operation(_ method: HTTPRequest.Method, _ uri: String) -> (key: String, fields: [String: JSONValue])? {
        let segments = uri.split(separator: "?", maxSplits: 1)[0].split(
            separator: "/", omittingEmptySubsequences: false)
        var best: (key: String, fields: [String: JSONValue], literal: Int)?
        for (key, fields) in operations {
            let parts = key.split(separator: " ", maxSplits: 1)
            guard parts[0] == method.rawValue else { continue }
            let template = parts[1].split(separator: "/", omittingEmptySubsequences: false)
            guard template.count == segments.count,
                zip(template, segments).allSatisfy({ $0 == $1 || ($0.hasPrefix("{") && !$1.isEmpty) })
            else { continue }
            let literal = template.filter { !$0.hasPrefix("{") }.count
            if literal > best?.literal ?? -1 { best = (key, fields, literal) }
        }
        return best.map { ($0.key, $0.fields) }
    }

    /// Sends a request through `client`, expects `status`, and checks the request and the answer against the
    /// document.
    @discardableResult
    func send(
        _ client: some TestClientProtocol, _ method: HTTPRequest.Method, _ uri: String, headers: HTTPFields = [:],
        body: RequestBody = .none, expect status: HTTPResponse.Status,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> TestResponse {
        var headers = headers
        if body.text != nil { headers[.contentType] = "application/json" }
        let response = try await client.execute(
            uri: uri, method: method, headers: headers, body: body.text.map { ByteBuffer(string: $0) })
        #expect(
            response.status == status, "\(method) \(uri) answered \(response.status): \(String(buffer: response.body))",
            sourceLocation: sourceLocation)
        check(
            method, uri, request: body, status: response.status.code, headers: response.headers,
            body: Data(buffer: response.body), sourceLocation: sourceLocation)
        return response
    }

    /// Sends a request signed by `signer` (``AdminAPITests/send(_:_:_:_:body:at:)``), expects `status`, and checks
    /// the request and the answer against the document.
    @discardableResult
    func admin(
        _ client: some TestClientProtocol, _ signer: AdminRequestSigner, _ method: HTTPRequest.Method, _ uri: String,
        body: (some Encodable)? = String?.none, valid: Bool = true, at date: Date, expect status: HTTPResponse.Status,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> TestResponse {
        let response = try await AdminAPITests.send(client, signer, method, uri, body: body, at: date)
        #expect(
            response.status == status, "\(method) \(uri) answered \(response.status): \(String(buffer: response.body))",
            sourceLocation: sourceLocation)
        let text = try body.map { try DocumentedAPI.text($0) }
        let request: RequestBody = text.map { valid ? .valid($0) : .invalid($0) } ?? .none
        check(
            method, uri, request: request, status: response.status.code, headers: response.headers,
            body: Data(buffer: response.body), sourceLocation: sourceLocation)
        return response
    }

    /// Opens `GET /v1/me/events` over a socket and checks the answer's head (its body is a stream: read by the
    /// caller) or, for a refusal, its body.
    @discardableResult
    func events(port: Int, token: String?, expect status: HTTPResponse.Status) async throws -> HTTPClientResponse {
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)/v1/me/events")
        if let token { request.headers.add(name: "Authorization", value: "Bearer \(token)") }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
        #expect(Int(response.status.code) == status.code, "the event stream answered \(response.status)")
        var headers = HTTPFields()
        for header in response.headers {
            headers.append(HTTPField(name: HTTPField.Name(header.name)!, value: header.value))
        }
        let body = status == .ok ? Data() : Data(buffer: try await response.body.collect(upTo: 1 << 16))
        check(.get, "/v1/me/events", request: .none, status: Int(response.status.code), headers: headers, body: body)
        return response
    }

    /// Checks one `data:` line of the event stream against the schema the document gives the stream.
    func checkEvent(_ data: Data) throws {
        let schema = try #require(
            lookup(
                operations["GET /v1/me/events"].map(JSONValue.object), "responses", "200", "content",
                "text/event-stream", "schema"))
        let failures = try validator.validate(try JSONSchemaValidator.parse(data), against: schema)
        #expect(failures.isEmpty, "an event's data: \(failures.joined(separator: "\n"))")
    }

    /// Checks a request and its answer against the document: the operation is documented, the answer's status
    /// is one it lists (or its `default`), the content type one given for that status, a JSON body valid
    /// against its schema, headers it names present; the request body accepted or refused by the request schema
    /// as the scenario says it should be.
    func check(
        _ method: HTTPRequest.Method, _ uri: String, request: RequestBody, status: Int, headers: HTTPFields,
        body: Data, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        func fail(_ text: String) { Issue.record(Comment(rawValue: text), sourceLocation: sourceLocation) }
        guard let found = self.operation(method, uri) else {
            return fail("\(method) \(uri) is no documented operation")
        }
        let (key, operation) = found
        state.withLock {
            $0.exercised[key, default: []].insert(status)
            $0.answers += 1
        }
        do {
            try checkRequest(key, operation, request, status: status, fail: fail)
            guard
                let answer = lookup(.object(operation), "responses", String(status))
                    ?? lookup(.object(operation), "responses", "default")
            else {
                let listed = lookup(.object(operation), "responses").flatMap { value -> [String]? in
                    guard case .object(let responses) = value else { return nil }
                    return responses.keys.sorted()
                }
                return fail("\(key) answered \(status), which the document does not list (it lists \(listed ?? []))")
            }
            if case .object(let documented)? = lookup(answer, "headers") {
                for name in documented.keys where headers[HTTPField.Name(name)!] == nil {
                    fail("\(key) answered \(status) without the header \(name) the document gives it")
                }
            }
            guard case .object(let content)? = lookup(answer, "content") else {
                if !body.isEmpty {
                    fail(
                        "\(key) answered \(status) with a body, where the document gives \(status) none: "
                            + String(decoding: body.prefix(200), as: UTF8.self))
                }
                return
            }
            let media = (headers[.contentType] ?? "").split(separator: ";")[0].trimmingCharacters(in: .whitespaces)
            guard let entry = content[media.lowercased()] else {
                return fail(
                    "\(key) answered \(status) as \"\(media)\", where the document gives \(content.keys.sorted())")
            }
            guard media == "application/json" else { return }  // Text and event streams: the content type only.
            guard let schema = lookup(entry, "schema") else { return fail("\(key) \(status): no schema") }
            let value: JSONValue
            do {
                value = try JSONSchemaValidator.parse(body)
            } catch {
                return fail(
                    "\(key) answered \(status) with a body that is not JSON: \(String(decoding: body, as: UTF8.self))")
            }
            let failures = try validator.validate(value, against: schema)
            if !failures.isEmpty {
                fail("\(key) answered \(status) with a body its schema refuses:\n" + failures.joined(separator: "\n"))
            }
            state.withLock { $0.jsonAnswers += 1 }
        } catch {
            fail("\(key): \(error)")
        }
    }

    /// The request's body against the operation's request schema.
    private func checkRequest(
        _ key: String, _ operation: [String: JSONValue], _ request: RequestBody, status: Int, fail: (String) -> Void
    ) throws {
        let documented = lookup(.object(operation), "requestBody")
        switch request {
        case .none:
            if (200..<300).contains(status), case .bool(true)? = lookup(documented, "required") {
                fail("\(key) answered \(status) to a request without the body the document requires")
            }
        case .raw: break
        case .valid(let text), .invalid(let text):
            guard let schema = lookup(documented, "content", "application/json", "schema") else {
                return fail("\(key): a JSON body sent where the document gives no JSON request body")
            }
            let failures = try validator.validate(try JSONSchemaValidator.parse(Data(text.utf8)), against: schema)
            state.withLock { $0.requestBodies += 1 }
            if case .valid = request, !failures.isEmpty {
                fail(
                    "\(key): the document refuses a request body the scenario sends as valid, \(text):\n"
                        + failures.joined(separator: "\n"))
            } else if case .invalid = request, failures.isEmpty {
                fail("\(key): the document accepts \(text), which the server refuses (answered \(status))")
            }
        }
    }

    /// Every documented operation that needs credentials refuses a request without them: 401.
    func withoutCredentials(_ client: some TestClientProtocol) async throws {
        for (key, operation) in operations.sorted(by: { $0.key < $1.key }) {
            guard case .array(let security) = operation["security"] ?? lookup(document, "security"),
                !security.isEmpty
            else { continue }
            let (method, uri) = Self.sample(key)
            try await send(client, method, uri, expect: .unauthorized)
        }
    }

    /// Every documented operation with a JSON request body refuses a JSON array (every request schema wants an
    /// object, so the document refuses it too): 400, with credentials that would otherwise do.
    func malformedBodies(
        _ client: some TestClientProtocol, token: String, signer: AdminRequestSigner, at date: Date
    ) async throws {
        for key in operations.keys.sorted()
        where lookup(operations[key].map(JSONValue.object), "requestBody", "content", "application/json") != nil {
            let (method, uri) = Self.sample(key)
            if uri.hasPrefix("/v1/admin") {
                try await admin(
                    client, signer, method, uri, body: [String](), valid: false, at: date, expect: .badRequest)
            } else {
                try await send(
                    client, method, uri, headers: ClientAPITests.bearer(token), body: .invalid("[]"),
                    expect: .badRequest)
            }
        }
    }

    /// Every documented operation with a request body refuses one over the server's limit (and over the larger
    /// limits some routes allow): 413.
    func oversizedBodies(_ client: some TestClientProtocol, limit: Int) async throws {
        let body = RequestBody.raw(String(repeating: "a", count: max(limit, 1 << 20) + 1))
        for key in operations.keys.sorted() where operations[key]?["requestBody"] != nil {
            let (method, uri) = Self.sample(key)
            try await send(client, method, uri, body: body, expect: .contentTooLarge)
        }
    }
}

/// `value`'s member at `path`, object by object.
private func lookup(_ value: JSONValue?, _ path: String...) -> JSONValue? {
    var current = value
    for key in path {
        guard case .object(let members)? = current else { return nil }
        current = members[key]
    }
    return current
}
