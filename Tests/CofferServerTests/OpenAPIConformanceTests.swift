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
        let app = try buildApplication(configuration: configuration, dependencies: dependencies)
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
        try await Self.offers(api, setup: setup)
        try await Self.extensions(api, setup: setup, signer: signer)

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
        let app = try buildApplication(configuration: configuration, dependencies: try setup.dependencies(api: nil))
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
        try await send(
            .put, "/v1/me/consent", token: alice.token, body: try .json(ConsentRequest(customerConsented: true)),
            expect: .ok)
        try await send(
            .put, "/v1/me/consent", token: alice.token, body: .invalid(#"{"customerConsented": "yes"}"#),
            expect: .badRequest)
        try await send(
            .put, "/v1/me/consent", token: "not a token", body: try .json(ConsentRequest(customerConsented: true)),
            expect: .unauthorized)
        #expect(
            try ClientAPITests.decode(MeResponse.self, try await send(.get, "/v1/me", token: alice.token, expect: .ok))
                .consent?.customerConsented == true)

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
