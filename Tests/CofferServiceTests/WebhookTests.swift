import CofferCore
import CofferService
import CofferStore
import CofferTestSupport
import Foundation
import Logging
import Synchronization
import Testing

/// Signed webhooks below the HTTP edge: what each outbox record becomes, the `Coffer-Signature` header, the backoff,
/// and the dispatcher's rounds over a store with a sender that answers as the test says (time from a test clock).
@Suite("Webhooks")
struct WebhookTests {
    static let secret = "whsec_test_0123456789"

    /// A sender that records each post and answers from a script (then 200).
    final class ScriptedSender: WebhookSender {
        struct Post: Sendable {
            var url: String
            var headers: [String: String]
            var body: String
        }
        let posts = Mutex<[Post]>([])
        let answers = Mutex<[Int]>([])

        func post(url: String, headers: [(String, String)], body: String, timeout: Int) async throws -> Int {
            posts.withLock {
                $0.append(Post(url: url, headers: Dictionary(headers, uniquingKeysWith: { $1 }), body: body))
            }
            let answer = answers.withLock { $0.isEmpty ? 200 : $0.removeFirst() }
            guard answer > 0 else { throw CancellationError() }
            return answer
        }
        var sent: [Post] { posts.withLock { $0 } }
    }

    static func catalog() throws -> Catalog {
        try Catalog(products: [
            CatalogProduct(id: "com.example.credits", kind: .consumable, credits: 100),
            CatalogProduct(
                id: "com.example.pro.monthly", kind: .autoRenewable, entitlements: ["premium"], group: "pro"),
        ])
    }

    static func json(_ body: String) throws -> [String: Any] {
        try require(try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any])
    }

    static func record(
        _ source: OutboxRecord.Source, _ kind: String, amount: Int64? = nil, transactionId: String? = nil,
        original: String? = nil, product: String? = nil, key: String? = nil, detail: String? = nil,
        supportId: String = "_aaaaaaaaaaa1"
    ) -> OutboxRecord {
        OutboxRecord(
            seq: 7, environment: .production, source: source, kind: kind, supportId: supportId, entryKey: key,
            amount: amount, balanceDelta: amount.map { max($0, -30) },
            deficitDelta: amount.map { $0 < -30 ? -$0 - 30 : 0 },
            balance: 70, deficit: 0, transactionId: transactionId, originalTransactionId: original, productId: product,
            reason: kind == "EXPIRED" ? "VOLUNTARY" : nil, detail: detail,
            createdAt: Date(timeIntervalSince1970: 1_767_225_600))
    }

    @Test("each change becomes its event type, with the body's fields and the data that applies")
    func eventTypes() throws {
        let catalog = try Self.catalog()
        let endpoints = [
            WebhookEndpoint(
                id: "all", environment: .production, url: "https://a", secret: Self.secret, createdAt: .now),
            WebhookEndpoint(
                id: "refunds", environment: .production, url: "https://b", secret: Self.secret,
                events: ["purchase.refunded"], createdAt: .now),
            WebhookEndpoint(
                id: "sandbox", environment: .sandbox, url: "https://c", secret: Self.secret, createdAt: .now),
        ]
        func event(_ record: OutboxRecord) throws -> (type: String, body: [String: Any], to: [String]) {
            let made = try require(WebhookEvents.event(for: record, catalog: catalog, endpoints: endpoints))
            return (made.type, try Self.json(made.body), made.endpoints)
        }
        let delivered = try event(
            Self.record(
                .ledger, "purchase", amount: 100, transactionId: "t1", original: "t1", product: "com.example.credits"))
        #expect(delivered.type == "purchase.delivered" && delivered.to == ["all"])
        #expect(delivered.body["type"] as? String == "purchase.delivered")
        #expect(delivered.body["createdAt"] as? String == "2026-01-01T00:00:00Z")
        #expect(delivered.body["environment"] as? String == "Production")
        #expect(delivered.body["supportId"] as? String == "_aaaaaaaaaaa1")
        #expect(UUID(uuidString: delivered.body["id"] as? String ?? "") != nil)
        let data = try require(delivered.body["data"] as? [String: Any])
        #expect(data["transactionId"] as? String == "t1" && data["productId"] as? String == "com.example.credits")
        #expect(data["credits"] as? Int == 100 && data["balance"] as? Int == 70 && data["deficit"] as? Int == 0)
        #expect(data["currency"] as? String == "credits")
        // Another currency's entry says its own.
        var gems = Self.record(
            .ledger, "purchase", amount: 5, transactionId: "t1", original: "t1", product: "com.example.credits")
        gems.currency = Currency(rawValue: "gems")
        let gemData = try require(try event(gems).body["data"] as? [String: Any])
        #expect(gemData["currency"] as? String == "gems" && gemData["credits"] as? Int == 5)

        let renewal = try event(
            Self.record(
                .ledger, "purchase", amount: 0, transactionId: "t2", original: "t1", product: "com.example.pro.monthly")
        )
        #expect(renewal.type == "subscription.renewed")
        let first = try event(
            Self.record(
                .ledger, "purchase", amount: 0, transactionId: "t1", original: "t1", product: "com.example.pro.monthly")
        )
        #expect(first.type == "purchase.delivered")

        let refund = try event(
            Self.record(.ledger, "revocation", amount: -100, transactionId: "t1", product: "com.example.credits"))
        #expect(refund.type == "purchase.refunded" && refund.to == ["all", "refunds"])
        let refundData = try require(refund.body["data"] as? [String: Any])
        #expect(refundData["credits"] as? Int == 100)
        #expect(refundData["balanceChange"] as? Int == -30 && refundData["deficitChange"] as? Int == 70)

        #expect(
            try event(Self.record(.ledger, "reversal", amount: 100, transactionId: "t1")).type
                == "purchase.refund_reversed")
        let claimed = try event(Self.record(.ledger, "grant", amount: 5, key: "grant:g-1"))
        #expect(claimed.type == "grant.claimed")
        #expect((claimed.body["data"] as? [String: Any])?["grantId"] as? String == "g-1")
        #expect(
            try event(Self.record(.ledger, "adjustment", amount: -5, key: "adjustment:x")).type == "balance.adjusted")
        let spent = try event(Self.record(.ledger, "spend", amount: -5, key: "spend:k"))
        #expect(spent.type == "balance.spent" && (spent.body["data"] as? [String: Any])?["credits"] as? Int == 5)
        #expect(
            WebhookEvents.event(for: Self.record(.ledger, "merge", amount: 5), catalog: catalog, endpoints: endpoints)
                == nil)

        let created = try event(
            Self.record(
                .audit, "grant.create", detail: #"{"id":"g-1","credits":5,"reason":"Ticket 1","status":"pending"}"#))
        #expect(created.type == "grant.created")
        #expect((created.body["data"] as? [String: Any])?["grantId"] as? String == "g-1")
        #expect(try event(Self.record(.audit, "grant.cancel", detail: "{}")).type == "grant.cancelled")
        let merge = #"{"from":"_aaaaaaaaaaa1","into":"_bbbbbbbbbbb2","movedBalance":5}"#
        let merged = try event(Self.record(.audit, "user.merge", detail: merge))
        #expect(merged.type == "customer.merged")
        #expect((merged.body["data"] as? [String: Any])?["into"] as? String == "_bbbbbbbbbbb2")
        // The merge's entry for the account's customer makes no second event.
        #expect(
            WebhookEvents.event(
                for: Self.record(.audit, "user.merge", detail: merge, supportId: "_bbbbbbbbbbb2"), catalog: catalog,
                endpoints: endpoints) == nil)
        #expect(
            try event(Self.record(.audit, "customer.delete", detail: #"{"closedBalance":5}"#)).type
                == "customer.deleted")
        let expired = try event(Self.record(.notification, "EXPIRED", transactionId: "t9", original: "t1"))
        #expect(expired.type == "subscription.expired")
        #expect((expired.body["data"] as? [String: Any])?["reason"] as? String == "VOLUNTARY")
        let ended = try event(
            Self.record(.ledger, "expiry", amount: -25, key: "expiry:3f0c5e6a-0000-4000-8000-000000000001"))
        #expect(ended.type == "credits.expired")
        let endedData = try require(ended.body["data"] as? [String: Any])
        #expect(endedData["grantId"] as? String == "3f0c5e6a-0000-4000-8000-000000000001")
        #expect(endedData["credits"] as? Int == 25)
        let allowanceEnded = try require(
            try event(Self.record(.ledger, "expiry", amount: -30, key: "expiry:allowance:t7")).body["data"]
                as? [String: Any])
        #expect(allowanceEnded["transactionId"] as? String == "t7" && allowanceEnded["grantId"] == nil)
        let allowance = try event(
            Self.record(
                .ledger, "allowance", amount: 500, transactionId: "t7", original: "t1",
                product: "com.example.pro.monthly"))
        #expect(allowance.type == "allowance.credited")
        let allowanceData = try require(allowance.body["data"] as? [String: Any])
        #expect(allowanceData["credits"] as? Int == 500 && allowanceData["transactionId"] as? String == "t7")
        #expect(Set(WebhookEventType.allCases.map(\.rawValue)).count == 14)

        // Apple's notification goes to apple.forward.url only, body unchanged; Coffer's events never go there.
        let forwards =
            endpoints + [
                WebhookEndpoint(
                    id: WebhookEndpoint.forwardId(1), environment: .production, url: "https://old", secret: "",
                    events: ["apple.notification"], createdAt: .now)
            ]
        var apple = Self.record(.apple, "REFUND", detail: #"{"signedPayload":"x.y.z"}"#)
        apple.supportId = ""
        let forwarded = try require(WebhookEvents.event(for: apple, catalog: catalog, endpoints: forwards))
        #expect(forwarded.body == #"{"signedPayload":"x.y.z"}"# && forwarded.endpoints == ["forward-1"])
        let ours = try require(
            WebhookEvents.event(
                for: Self.record(.ledger, "spend", amount: -1, key: "spend:k"), catalog: catalog, endpoints: forwards))
        #expect(ours.endpoints == ["all"])
    }

    @Test("Coffer-Signature: t and one v1 per secret, HMAC-SHA256 over \"t.body\"; a receiver's check")
    func signature() {
        let at = Date(timeIntervalSince1970: 1_767_225_600)
        let body = #"{"a":1}"#
        let value = WebhookSignature.value(body: body, secrets: [Self.secret], at: at)
        // HMAC-SHA256("whsec_test_0123456789", "1767225600.{"a":1}"), computed with Python's hmac module.
        #expect(value == "t=1767225600,v1=5fc06e5d3d22c4aa0e74db869057b04f2aef4c4f086f958d0f183d95b31c6b1d")
        #expect(WebhookSignature.verify(value, body: body, secret: Self.secret, now: at.addingTimeInterval(299)))
        #expect(!WebhookSignature.verify(value, body: body, secret: Self.secret, now: at.addingTimeInterval(301)))
        #expect(!WebhookSignature.verify(value, body: body + " ", secret: Self.secret, now: at))
        #expect(!WebhookSignature.verify(value, body: body, secret: "another-secret-0123", now: at))
        let rotating = WebhookSignature.value(body: body, secrets: ["new-secret-0123456789", Self.secret], at: at)
        #expect(rotating.components(separatedBy: ",v1=").count == 3)
        #expect(WebhookSignature.verify(rotating, body: body, secret: Self.secret, now: at))
        #expect(WebhookSignature.verify(rotating, body: body, secret: "new-secret-0123456789", now: at))
    }

    @Test("the first retry within 10 seconds, then less often, for 3 days from the first attempt")
    func backoff() throws {
        let first = Date(timeIntervalSince1970: 1_767_225_600)
        let retry = try require(WebhookBackoff.retryAt(attempts: 1, firstAttemptAt: first, now: first))
        #expect(retry.timeIntervalSince(first) <= 10 && retry > first)
        var now = first
        var attempts = 0
        while let next = WebhookBackoff.retryAt(attempts: attempts + 1, firstAttemptAt: first, now: now) {
            #expect(next > now && next <= first.addingTimeInterval(3 * 86_400))
            (now, attempts) = (next, attempts + 1)
        }
        #expect(now == first.addingTimeInterval(3 * 86_400))
        // 5 s, 30 s, 2 min, 10 min, 30 min, 1 h, 2 h, 4 h, then every 8 h: 17 retries in 3 days.
        #expect(attempts == 17)
    }

    @Test("endpoint rules: URLs, secrets and event lists are checked with errors that say what is wrong")
    func rules() throws {
        #expect(WebhookRules.problem(url: "https://hooks.example.com/coffer") == nil)
        #expect(WebhookRules.problem(url: "http://127.0.0.1:9000/hook") == nil)
        #expect(WebhookRules.problem(url: "ftp://example.com") != nil)
        #expect(WebhookRules.problem(url: "http://10.0.0.5:3000/hooks") == nil)
        #expect(WebhookRules.problem(url: "http://backend:3000/hooks") == nil)
        #expect(WebhookRules.problem(url: "http://api.example.com/hooks")?.contains("use https://") == true)
        #expect(WebhookRules.problem(url: "http://[2001:db8::1]/hooks") != nil)
        #expect(WebhookRules.problem(url: "https://169.254.169.254/latest")?.contains("link-local") == true)
        #expect(WebhookRules.problem(url: "http://[fe80::1]/x") != nil)
        #expect(WebhookRules.problem(url: "https://user:pw@example.com") != nil)
        #expect(WebhookRules.problem(url: "https:///nohost") != nil)
        #expect(WebhookRules.problem(secret: "short") != nil)
        #expect(WebhookRules.problem(secret: "has a space 0123456789") != nil)
        #expect(
            try WebhookRules.events("purchase.refunded, purchase.delivered") == [
                "purchase.delivered", "purchase.refunded",
            ])
        #expect(try WebhookRules.events("*").isEmpty)
        #expect(throws: WebhookRuleError.self) { try WebhookRules.events("purchase.bought") }
        var generator = SystemRandomNumberGenerator()
        #expect(WebhookRules.problem(secret: WebhookRules.makeSecret(using: &generator)) == nil)
    }

    struct Harness {
        let store = InMemoryStore()
        let clock = TestClock()
        let sender = ScriptedSender()
        let metrics = ServerMetrics()
        let user: User

        init() async throws {
            user = User(
                environment: .sandbox, supportId: SupportID("_aaaaaaaaaaa1")!, tokenHash: "h",
                createdAt: TestClock().now())
            try await store.createUser(user)
        }

        func dispatcher(
            holder: String = "one",
            settings: WebhookSettings? = WebhookSettings(
                url: "https://hooks.example.com/coffer", secret: WebhookTests.secret),
            sender: (any WebhookSender)? = nil, batch: Int = 256
        ) throws -> WebhookDispatcher {
            WebhookDispatcher(
                store: store, catalog: try WebhookTests.catalog(), environment: .sandbox, settings: settings,
                sender: sender ?? self.sender, metrics: metrics, logger: Logger(label: "test"), now: clock.reading,
                clock: clock, holder: holder, batch: batch)
        }

        func buy(_ id: String) async throws {
            let fact = TransactionFact(
                transactionId: id, originalTransactionId: id, productId: "com.example.credits", quantity: 1,
                purchaseDate: clock.now(), expiresDate: nil, revocationDate: nil, isFamilyShared: false, isTrial: false,
                isUpgraded: false)
            _ = try await store.apply(
                LedgerRequest(
                    owner: user.id, environment: .sandbox, event: .purchase(fact, credits: 100), at: clock.now()))
        }
    }

    @Test(
        "a round posts each event signed; a failure is retried when due, the customer's next waits, 3 days make a dead letter"
    )
    func rounds() async throws {
        let harness = try await Harness()
        let dispatcher = try harness.dispatcher()
        try await dispatcher.publishSettings()
        try await harness.buy("t1")
        try await harness.buy("t2")
        harness.sender.answers.withLock { $0 = [500] }

        var round = try await dispatcher.runOnce()
        #expect(round.routed == 2 && round.failed == 1 && round.delivered == 0)
        let firstPost = try require(harness.sender.sent.first)
        #expect(firstPost.url == "https://hooks.example.com/coffer")
        #expect(firstPost.headers["content-type"] == "application/json")
        let signature = try require(firstPost.headers["Coffer-Signature"])
        #expect(WebhookSignature.verify(signature, body: firstPost.body, secret: Self.secret, now: harness.clock.now()))
        let body = try Self.json(firstPost.body)
        #expect(body["type"] as? String == "purchase.delivered")
        #expect((body["data"] as? [String: Any])?["transactionId"] as? String == "t1")
        #expect(firstPost.headers["Coffer-Event-Id"] == body["id"] as? String)

        // Not due yet, and t2 waits behind t1.
        round = try await dispatcher.runOnce()
        #expect(round.delivered + round.failed == 0 && harness.sender.sent.count == 1)
        harness.clock.advance(5)
        round = try await dispatcher.runOnce()
        #expect(round.delivered == 1)
        // The retry carries the same event, byte for byte.
        #expect(harness.sender.sent[1].body == firstPost.body)
        round = try await dispatcher.runOnce()
        #expect(round.delivered == 1)
        #expect(
            try Self.json(harness.sender.sent[2].body)["data"].flatMap { $0 as? [String: Any] }?["transactionId"]
                as? String == "t2")

        // Down for 3 days: retried, then a dead letter.
        try await harness.buy("t3")
        harness.sender.answers.withLock { $0 = Array(repeating: 503, count: 100) }
        var failures = 0
        for _ in 0..<60 {
            let round = try await dispatcher.runOnce()
            failures += round.failed
            harness.clock.advance(8 * 3_600)
        }
        let dead = try await harness.store.webhookDeliveries(environment: .sandbox, state: .dead, limit: 10)
        #expect(dead.count == 1 && dead.first?.lastStatus == 503)
        #expect(failures == dead.first?.attempts)
        let exposition = harness.metrics.exposition()
        #expect(exposition.contains(#"coffer_webhook_deliveries_total{outcome="dead"} 1"#))
        #expect(exposition.contains(#"coffer_webhook_deliveries_total{outcome="delivered"} 2"#))
        try await dispatcher.observeBacklog()
        #expect(harness.metrics.exposition().contains("coffer_webhook_dead_letters 1"))
    }

    @Test(
        "an instance posts only where it can sign: one without the settings leaves their endpoint to the others; no answer is a failure"
    )
    func secretsAndSilence() async throws {
        let harness = try await Harness()
        let dispatcher = try harness.dispatcher()
        let unset = try harness.dispatcher(holder: "two", settings: nil)
        try await dispatcher.publishSettings()
        try await unset.publishSettings()
        #expect(try await harness.store.webhookEndpoints(environment: .sandbox).map(\.id) == ["settings"])
        try await harness.buy("t1")
        let skipped = try await unset.runOnce()
        #expect(skipped.routed == 1 && skipped.delivered + skipped.failed == 0 && harness.sender.sent.isEmpty)
        harness.sender.answers.withLock { $0 = [0] }
        let round = try await dispatcher.runOnce()
        #expect(round.failed == 1)
        let settings = try require(
            try await harness.store.webhookDeliveries(environment: .sandbox, state: nil, limit: 10).first)
        #expect(settings.state == .pending && settings.lastError?.hasPrefix("no answer") == true)
    }

    /// A sender that answers 200 and, at its `stopAt`th post, cancels the task it was given (a shutdown mid-round).
    final class StoppingSender: WebhookSender {
        let stopAt: Int
        let bodies = Mutex<[String]>([])
        let task = Mutex<Task<Void, Never>?>(nil)
        init(stopAt: Int) { self.stopAt = stopAt }

        func post(url: String, headers: [(String, String)], body: String, timeout: Int) async throws -> Int {
            let count = bodies.withLock {
                $0.append(body)
                return $0.count
            }
            if count == stopAt { task.withLock { $0 }?.cancel() }
            return 200
        }
    }

    @Test("a full round's answers are recorded in the next round's transaction, and the last ones on shutdown")
    func answersCarried() async throws {
        let harness = try await Harness()
        // One delivery a round: every round is full, so each carries its answer into the next.
        let sender = StoppingSender(stopAt: 0)
        let dispatcher = try harness.dispatcher(sender: sender, batch: 1)
        try await dispatcher.publishSettings()
        for id in ["t1", "t2", "t3"] { try await harness.buy(id) }
        let running = Task { try? await dispatcher.run() }
        // The fourth round records t3's answer, leases nothing and sleeps.
        await harness.clock.waitForSleepers(1)
        let delivered = try await harness.store.webhookDeliveries(environment: .sandbox, state: .delivered, limit: 10)
        #expect(delivered.count == 3)
        let sent = try sender.bodies.withLock { $0 }.map { try Self.json($0)["data"] as? [String: Any] }
        #expect(sent.map { $0?["transactionId"] as? String } == ["t1", "t2", "t3"])
        running.cancel()
        _ = await running.value

        // Shut down right after a full round posted: its answer is recorded before run() returns.
        try await harness.buy("t4")
        try await harness.buy("t5")
        let stopping = StoppingSender(stopAt: 1)
        let second = try harness.dispatcher(sender: stopping, batch: 1)
        // The task starts its rounds only once the sender knows it.
        let (gate, open) = AsyncStream<Void>.makeStream()
        let stopped = Task {
            for await _ in gate { break }
            _ = try? await second.run()
        }
        stopping.task.withLock { $0 = stopped }
        open.yield()
        _ = await stopped.value
        let pending = try await harness.store.webhookDeliveries(environment: .sandbox, state: .pending, limit: 10)
        let done = try await harness.store.webhookDeliveries(environment: .sandbox, state: .delivered, limit: 10)
        #expect(done.count == 4 && pending.count == 1)
        #expect(pending.allSatisfy { $0.attempts == 0 })
    }
}
