import AsyncHTTPClient
import CofferAPI
import CofferCore
import CofferServer
import CofferService
import CofferStore
import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import Synchronization
import Testing

/// Signed webhooks end to end: a real Coffer server posts to a real HTTP receiver (the developer's backend), and two
/// instances share one outbox.
@Suite("Webhook delivery", .timeLimit(.minutes(2)))
struct WebhookDeliveryTests {
    static let secret = "whsec_delivery_test_0123456789"

    /// The developer's backend: records each request and answers 200.
    final class Receiver: Sendable {
        struct Request: Sendable {
            var headers: [String: String]
            var body: String
        }
        let requests = Mutex<[Request]>([])

        /// Runs on a free loopback port until `body` returns.
        func run<T: Sendable>(_ body: @Sendable (_ url: String) async throws -> T) async throws -> T {
            let router = Router()
            router.post("hooks") { [self] request, _ -> HTTPResponse.Status in
                let data = try await request.body.collect(upTo: 1 << 20)
                var headers: [String: String] = [:]
                for field in request.headers { headers[field.name.canonicalName] = field.value }
                requests.withLock { $0.append(Request(headers: headers, body: String(buffer: data))) }
                return .noContent
            }
            let port = Mutex<Int?>(nil)
            let (started, startedContinuation) = AsyncStream<Void>.makeStream()
            let server = Application(
                router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
                onServerRunning: { channel in
                    port.withLock { $0 = channel.localAddress?.port }
                    startedContinuation.yield()
                })
            return try await withThrowingTaskGroup(of: T?.self) { group in
                group.addTask {
                    try await server.runService(gracefulShutdownSignals: [])
                    return nil
                }
                for await _ in started { break }
                let result = try await body("http://127.0.0.1:\(port.withLock { $0 } ?? 0)/hooks")
                group.cancelAll()
                return result
            }
        }

        /// Waits (at most `seconds`) until `count` requests came, and returns them.
        func wait(for count: Int, seconds: Int = 30) async throws -> [Request] {
            for _ in 0..<(seconds * 20) {
                let got = requests.withLock { $0 }
                if got.count >= count { return got }
                try await Task.sleep(for: .milliseconds(50))
            }
            return requests.withLock { $0 }
        }
    }

    static func json(_ text: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
    }

    /// A live server over `setup` posting to a receiver (its `webhook.url`, or with `forwarding` its
    /// `apple.forward.url`), once its dispatcher has recorded the endpoint: `body` runs with the server's client and
    /// the receiver.
    static func serving(
        _ setup: NotificationTests.Setup, forwarding: Bool = false,
        _ body: @escaping @Sendable (any TestClientProtocol, Receiver) async throws -> Void
    ) async throws {
        let http = HTTPClient(eventLoopGroupProvider: .singleton)
        let receiver = Receiver()
        do {
            try await receiver.run { url in
                var configuration = setup.configuration
                if forwarding {
                    configuration.service.appleForwardURLs = [url]
                } else {
                    configuration.service.webhook = WebhookSettings(url: url, secret: Self.secret)
                }
                let clock = setup.clock
                let app = try buildApplication(
                    configuration: configuration,
                    dependencies: try ServerDependencies(
                        store: setup.store, verifier: setup.verifier, catalog: setup.catalog, now: { clock.now() },
                        webhookSender: HTTPWebhookSender(client: http)))
                try await app.test(.live) { client in
                    for _ in 0..<600 where try await setup.store.webhookEndpoints(environment: .sandbox).isEmpty {
                        try await Task.sleep(for: .milliseconds(50))
                    }
                    try await body(client, receiver)
                }
            }
        } catch {
            try await http.shutdown()
            throw error
        }
        try await http.shutdown()
    }

    @Test(
        "a purchase and its refund reach the backend over HTTP, signed with the settings' secret",
        arguments: ServerEngine.allCases)
    func overHTTP(engine: ServerEngine) async throws {
        let setup = try NotificationTests.Setup(store: try await engine.makeStore())
        try await Self.serving(setup) { client, receiver in
            let clock = setup.clock
            let user = try await NotificationTests.createUser(client)
            let bought = try await setup.apple.purchase(
                account: "kim", productId: "com.example.credits", quantity: 2,
                appAccountToken: user.appAccountToken)
            let id = try #require(bought.transactionIds.first)
            let signed = try await setup.apple.signedTransaction(id: id)
            #expect(try await NotificationTests.present(signed, as: user, with: client).outcome == .delivered)
            try await setup.apple.refund(transactionId: id)
            _ = try await setup.deliver(after: 0, with: client)

            let requests = try await receiver.wait(for: 2)
            #expect(requests.count == 2)
            let bodies = try requests.map { try Self.json($0.body) }
            #expect(bodies.map { $0["type"] as? String } == ["purchase.delivered", "purchase.refunded"])
            for (request, body) in zip(requests, bodies) {
                let signature = try #require(request.headers["coffer-signature"])
                #expect(
                    WebhookSignature.verify(
                        signature, body: request.body, secret: Self.secret, now: clock.now()))
                #expect(request.headers["content-type"] == "application/json")
                #expect(body["supportId"] as? String == user.supportId)
                #expect(body["environment"] as? String == "Sandbox")
                #expect(request.headers["coffer-event-id"] == body["id"] as? String)
            }
            let refund = try #require(bodies[1]["data"] as? [String: Any])
            #expect(refund["transactionId"] as? String == id && refund["credits"] as? Int == 200)
            #expect(refund["balance"] as? Int == 0 && refund["productId"] as? String == "com.example.credits")
            // Recorded once each answer is back (the receiver has them a moment before).
            var delivered: [WebhookDelivery] = []
            for _ in 0..<600 where delivered.count < 2 {
                delivered = try await setup.store.webhookDeliveries(
                    environment: .sandbox, state: .delivered, limit: 10)
                if delivered.count < 2 { try await Task.sleep(for: .milliseconds(50)) }
            }
            #expect(delivered.count == 2 && delivered.allSatisfy { $0.lastStatus == 204 })
        }
    }

    @Test(
        "apple.forward.url gets each notification Apple sent and Coffer verified, body unchanged, once",
        arguments: ServerEngine.allCases)
    func forwarding(engine: ServerEngine) async throws {
        let setup = try NotificationTests.Setup(store: try await engine.makeStore())
        try await Self.serving(setup, forwarding: true) { client, receiver in
            let clock = setup.clock
            let user = try await NotificationTests.createUser(client)
            let bought = try await setup.apple.purchase(
                account: "kim", productId: "com.example.credits", appAccountToken: user.appAccountToken)
            try await setup.apple.refund(transactionId: try #require(bought.transactionIds.first))
            let sent = await setup.apple.sentNotifications().map(\.signedPayload)
            #expect(sent.count == 2)
            var posted: [String] = []
            for payload in sent {
                let body = try ClientAPITests.body(NotificationRequest(signedPayload: payload))
                posted.append(String(buffer: body))
                #expect(try await NotificationTests.post(payload, with: client).status == .ok)
            }
            // Apple's retry, and a forgery: neither is forwarded.
            #expect(try await NotificationTests.post(sent[0], with: client).status == .ok)
            #expect(try await NotificationTests.post("e30.e30.c2ln", with: client).status.code >= 400)
            let kept = try await setup.store.webhookDeliveries(environment: .sandbox, state: nil, limit: 10)
            let backlog = try await setup.store.webhookBacklog(environment: .sandbox)
            #expect(kept.count + backlog.unrouted == 2)

            let requests = try await receiver.wait(for: 2)
            #expect(requests.map(\.body) == posted, "forwarded byte for byte, in order")
            #expect(requests.allSatisfy { $0.headers["coffer-signature"] == nil })
            #expect(requests.allSatisfy { $0.headers["content-type"] == "application/json" })
        }
    }

    /// A sender that records what each instance sent, and takes a moment, so two instances' rounds overlap.
    final class SlowSender: WebhookSender {
        let sent = Mutex<[(eventId: String, supportId: String, transactionId: String)]>([])

        func post(url: String, headers: [(String, String)], body: String, timeout: Int) async throws -> Int {
            try await Task.sleep(for: .milliseconds(Int.random(in: 1...4)))
            let json = try WebhookDeliveryTests.json(body)
            let data = json["data"] as? [String: Any]
            sent.withLock {
                $0.append(
                    (
                        json["id"] as? String ?? "", json["supportId"] as? String ?? "",
                        data?["transactionId"] as? String ?? ""
                    ))
            }
            return 200
        }
    }

    @Test(
        "two instances share the outbox: each event sent once, a customer's in order", arguments: ServerEngine.allCases)
    func twoInstances(engine: ServerEngine) async throws {
        let store = try await engine.makeStore()
        let catalog = try Catalog(products: [CatalogProduct(id: "com.example.credits", kind: .consumable, credits: 10)])
        try await store.saveWebhookEndpoint(
            WebhookEndpoint(
                id: "wh_shared", environment: .sandbox, url: "https://hooks.example.com", secret: Self.secret,
                createdAt: Date()))
        var users: [User] = []
        for index in 1...3 {
            let user = User(
                environment: .sandbox, supportId: SupportID("_00000000000\(index)")!, tokenHash: "h\(index)",
                createdAt: Date())
            try await store.createUser(user)
            users.append(user)
        }
        var order: [String: [String]] = [:]
        for index in 0..<30 {
            let user = users[index % 3]
            let id = "t\(index)"
            let fact = TransactionFact(
                transactionId: id, originalTransactionId: id, productId: "com.example.credits", quantity: 1,
                purchaseDate: Date(), expiresDate: nil, revocationDate: nil, isFamilyShared: false, isTrial: false,
                isUpgraded: false)
            _ = try await store.apply(
                LedgerRequest(owner: user.id, environment: .sandbox, event: .purchase(fact, credits: 10), at: Date()))
            order[user.supportId.rawValue, default: []].append(id)
        }
        let sender = SlowSender()
        let metrics = ServerMetrics()
        let instances = ["a", "b"].map { holder in
            WebhookDispatcher(
                store: store, catalog: catalog, environment: .sandbox, settings: nil, sender: sender,
                metrics: metrics, logger: Logger(label: "test"), now: { Date() }, clock: SystemTimerClock(),
                holder: holder, batch: 4)
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for instance in instances {
                group.addTask {
                    for _ in 0..<400 {
                        _ = try await instance.runOnce()
                        let backlog = try await store.webhookBacklog(environment: .sandbox)
                        if backlog.pending + backlog.unrouted == 0 { return }
                    }
                }
            }
            try await group.waitForAll()
        }
        let sent = sender.sent.withLock { $0 }
        #expect(sent.count == 30)
        #expect(Set(sent.map(\.eventId)).count == 30)
        for user in users {
            let id = user.supportId.rawValue
            #expect(sent.filter { $0.supportId == id }.map(\.transactionId) == order[id])
        }
    }
}
