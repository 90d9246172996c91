import CofferCore
import CofferStore
import CofferTestSupport
import Foundation
import Testing

/// The ``WebhookStore`` contract every engine keeps (``StoreEngine``): the outbox written with each change while the
/// environment has an endpoint, each record made an event once, deliveries leased so none is sent twice at once and
/// a customer's go in order, retries and dead letters, resend, replay, the backlog and pruning.
@Suite("WebhookStore contract")
struct WebhookStoreContractTests {
    static func endpoint(_ id: String, events: [String] = [], in environment: AppStoreEnvironment = .sandbox)
        -> WebhookEndpoint
    {
        WebhookEndpoint(
            id: id, environment: environment, url: "https://hooks.example.com/\(id)", secret: "secret-\(id)-0123456789",
            events: events, createdAt: Make.start)
    }

    /// Routes every record to every endpoint that hears it, with the record's kind as the event's type.
    static func route(_ store: any CofferStore, at: Date = Make.start) async throws -> [OutboxRecord] {
        let endpoints = try await store.webhookEndpoints(environment: .sandbox)
        let seen = RecordLog()
        _ = try await store.routeWebhookEvents(environment: .sandbox, limit: 100, at: at) { record in
            seen.append(record)
            let type = record.kind
            return WebhookEvent(
                id: UUID(), type: type, body: #"{"seq":\#(record.seq)}"#,
                endpoints: endpoints.filter { $0.hears(type) }.map(\.id))
        }
        return seen.records
    }

    /// A store with one endpoint, `wh_a`, and alice's two purchases, `a1` and `a2`.
    static func twoPurchases(_ engine: StoreEngine) async throws -> (any CofferStore, User) {
        let store = try await engine.makeStore()
        let alice = Make.user("_aaaaaaaaaaa1")
        try await store.createUser(alice)
        try await store.saveWebhookEndpoint(Self.endpoint("wh_a"))
        _ = try await store.apply(Make.purchase("a1", for: alice))
        _ = try await store.apply(Make.purchase("a2", for: alice))
        return (store, alice)
    }

    final class RecordLog: @unchecked Sendable {
        private let lock = NSLock()
        private var items: [OutboxRecord] = []
        func append(_ record: OutboxRecord) { lock.withLock { items.append(record) } }
        var records: [OutboxRecord] { lock.withLock { items } }
    }

    @Test(
        "no endpoint, no outbox; with one, each change writes its record in its own transaction",
        arguments: StoreEngine.allCases)
    func outbox(engine: StoreEngine) async throws {
        let store = try await engine.makeStore()
        let alice = Make.user("_aaaaaaaaaaa1")
        try await store.createUser(alice)
        _ = try await store.apply(Make.purchase("t0", for: alice))
        #expect(try await Self.route(store).isEmpty)

        try await store.saveWebhookEndpoint(Self.endpoint("wh_a"))
        _ = try await store.apply(Make.purchase("t1", for: alice, credits: 250))
        _ = try await store.apply(
            LedgerRequest(owner: alice.id, environment: .sandbox, event: .spend(key: "k1", amount: 50), at: Make.start))
        // Refused: nothing changes, so nothing is written.
        _ = try? await store.apply(
            LedgerRequest(
                owner: alice.id, environment: .sandbox, event: .spend(key: "k2", amount: 1_000_000), at: Make.start))
        // A duplicate changes nothing either.
        _ = try await store.apply(Make.purchase("t1", for: alice, credits: 250))
        try await store.recordAudit(
            AuditEvent(
                environment: .sandbox, actor: "ada", action: "grant.create", subject: alice.supportId.rawValue,
                after: #"{"credits":5}"#, at: Make.start.addingTimeInterval(5)))
        try await store.recordAudit(
            AuditEvent(
                environment: .sandbox, actor: "ada", action: "key.create", subject: "k", at: Make.start))
        #expect(
            try await store.recordNotification(
                NotificationRecord(
                    uuid: "n-1", environment: .sandbox, type: "EXPIRED", subtype: "VOLUNTARY", transactionId: "t1",
                    originalTransactionId: "orig-t1", owner: alice.id, signedDate: Make.start,
                    receivedAt: Make.start.addingTimeInterval(9), outcome: .applied)))

        let records = try await Self.route(store)
        #expect(records.map(\.kind) == ["purchase", "spend", "grant.create", "EXPIRED"])
        #expect(records.map(\.source) == [.ledger, .ledger, .audit, .notification])
        #expect(records.map(\.seq) == records.map(\.seq).sorted())
        #expect(Set(records.map(\.supportId)) == [alice.supportId.rawValue])
        let purchase = try require(records.first)
        #expect(purchase.entryKey == "purchase:t1")
        #expect(purchase.amount == 250 && purchase.balanceDelta == 250 && purchase.deficitDelta == 0)
        #expect(purchase.balance == 650 && purchase.deficit == 0)
        #expect(purchase.transactionId == "t1" && purchase.originalTransactionId == "orig-t1")
        #expect(purchase.productId == "com.example.credits.400k")
        #expect(records[1].amount == -50 && records[1].balance == 600 && records[1].entryKey == "spend:k1")
        #expect(records[2].detail == #"{"credits":5}"#)
        #expect(records[3].reason == "VOLUNTARY" && records[3].transactionId == "t1")
        // Each record is made an event once.
        #expect(try await Self.route(store).isEmpty)
        // Another environment's endpoint does not hear Sandbox, nor is Sandbox's outbox Production's.
        #expect(
            try await store.routeWebhookEvents(environment: .production, limit: 10, at: Make.start) { _ in nil } == 0)
    }

    @Test(
        "leases: none twice at once, a customer's in order, retries when due, dead letters, resend",
        arguments: StoreEngine.allCases)
    func leases(engine: StoreEngine) async throws {
        let store = try await engine.makeStore()
        let (alice, bob) = (Make.user("_aaaaaaaaaaa1"), Make.user("_bbbbbbbbbbb2"))
        try await store.createUser(alice)
        try await store.createUser(bob)
        try await store.saveWebhookEndpoint(Self.endpoint("wh_a"))
        try await store.saveWebhookEndpoint(Self.endpoint("wh_b", events: ["spend"]))
        _ = try await store.apply(Make.purchase("a1", for: alice))
        _ = try await store.apply(Make.purchase("a2", for: alice))
        _ = try await store.apply(Make.purchase("b1", for: bob))
        _ = try await store.apply(
            LedgerRequest(owner: bob.id, environment: .sandbox, event: .spend(key: "s", amount: 1), at: Make.start))
        #expect(try await Self.route(store).count == 4)
        let backlog = try await store.webhookBacklog(environment: .sandbox)
        #expect(backlog.pending == 5 && backlog.dead == 0 && backlog.unrouted == 0 && backlog.oldest == Make.start)

        let until = Make.start.addingTimeInterval(60)
        let first = try await store.leaseWebhookDeliveries(
            environment: .sandbox, holder: "one", limit: 10, at: Make.start, until: until)
        // wh_a: alice's first and bob's first; wh_b: bob's spend (its only one).
        let leased = Set(first.map { "\($0.endpoint)/\($0.seq)" })
        #expect(first.count == 3)
        let seqs = try await store.webhookDeliveries(environment: .sandbox, state: .pending, limit: 10).map(\.seq)
        let (a1, a2, b1, spend) = (seqs.min()!, seqs.sorted()[1], seqs.sorted()[2], seqs.max()!)
        _ = a2
        #expect(leased == ["wh_a/\(a1)", "wh_a/\(b1)", "wh_b/\(spend)"])
        #expect(first.allSatisfy { $0.state == .pending && $0.attempts == 0 && $0.body == #"{"seq":\#($0.seq)}"# })
        // Another instance finds nothing free: leased, or waiting behind the customer's earlier one.
        #expect(
            try await store.leaseWebhookDeliveries(
                environment: .sandbox, holder: "two", limit: 10, at: Make.start, until: until
            ).isEmpty)
        // Only the holder finishes.
        let delivered = WebhookAttempt(
            endpoint: "wh_a", seq: a1, outcome: .delivered, status: 204, error: nil, at: Make.start)
        #expect(try await !store.finishWebhookAttempt(delivered, environment: .sandbox, holder: "two"))
        #expect(try await store.finishWebhookAttempt(delivered, environment: .sandbox, holder: "one"))
        #expect(try await !store.finishWebhookAttempt(delivered, environment: .sandbox, holder: "one"))
        // Alice's second is free now.
        let next = try await store.leaseWebhookDeliveries(
            environment: .sandbox, holder: "two", limit: 10, at: Make.start, until: until)
        #expect(next.map(\.seq) == [a2])

        // Bob's first fails: retried when due, not before; his spend at wh_b is on its own.
        let retryAt = Make.start.addingTimeInterval(5)
        #expect(
            try await store.finishWebhookAttempt(
                WebhookAttempt(
                    endpoint: "wh_a", seq: b1, outcome: .failed(retryAt: retryAt), status: 500,
                    error: "answered 500", at: Make.start), environment: .sandbox, holder: "one"))
        let later = Make.start.addingTimeInterval(70)
        #expect(
            try await store.leaseWebhookDeliveries(
                environment: .sandbox, holder: "one", limit: 10, at: Make.start.addingTimeInterval(4), until: later
            ).isEmpty)
        let retried = try await store.leaseWebhookDeliveries(
            environment: .sandbox, holder: "one", limit: 10, at: later, until: later.addingTimeInterval(60))
        // Due again: bob's retry, and the leases of two and of one's wh_b that ran out.
        #expect(Set(retried.map(\.seq)) == [a2, b1, spend])
        let bobs = try require(retried.first { $0.seq == b1 })
        #expect(bobs.attempts == 1 && bobs.lastStatus == 500 && bobs.lastError == "answered 500")
        #expect(bobs.firstAttemptAt == Make.start)
        #expect(
            try await store.finishWebhookAttempt(
                WebhookAttempt(
                    endpoint: "wh_a", seq: b1, outcome: .failed(retryAt: nil), status: nil, error: "no answer",
                    at: later), environment: .sandbox, holder: "one"))
        let dead = try await store.webhookDeliveries(environment: .sandbox, state: .dead, limit: 10)
        #expect(dead.map(\.seq) == [b1])
        #expect(try await store.webhookBacklog(environment: .sandbox).dead == 1)

        // Sent again: pending at once, with its attempts from zero.
        try await store.resendWebhookDelivery(endpoint: "wh_a", seq: b1, environment: .sandbox, at: later)
        let again = try await store.webhookDeliveries(environment: .sandbox, state: .pending, limit: 10)
        #expect(again.contains { $0.seq == b1 && $0.attempts == 0 && $0.firstAttemptAt == nil })
        await #expect(throws: StoreError.self) {
            try await store.resendWebhookDelivery(endpoint: "wh_a", seq: 999_999, environment: .sandbox, at: later)
        }
    }

    @Test(
        "a round in one transaction: the last answers recorded first, new records made events, then the due leased",
        arguments: StoreEngine.allCases)
    func round(engine: StoreEngine) async throws {
        let (store, alice) = try await Self.twoPurchases(engine)
        let until = Make.start.addingTimeInterval(60)
        func request(_ finishing: [WebhookAttempt], holder: String = "one", endpoints: [String]? = ["wh_a"])
            -> WebhookRoundRequest
        {
            WebhookRoundRequest(
                environment: .sandbox, holder: holder, finishing: finishing, routeLimit: 100, leaseLimit: 10,
                endpoints: endpoints, at: Make.start, until: until)
        }
        let route: @Sendable (OutboxRecord) -> WebhookEvent? = { record in
            WebhookEvent(id: UUID(), type: record.kind, body: #"{"seq":\#(record.seq)}"#, endpoints: ["wh_a"])
        }
        // Both made events; only alice's first leased (her second waits behind it).
        let first = try await store.webhookRound(request([]), route: route)
        #expect(first.finished.isEmpty && first.routed == 2 && first.leased.count == 1)
        let a1 = try require(first.leased.first)
        #expect(a1.body == #"{"seq":\#(a1.seq)}"#)
        // Another holder finds nothing, and cannot record one's answer.
        let answer = WebhookAttempt(
            endpoint: "wh_a", seq: a1.seq, outcome: .delivered, status: 204, error: nil, at: Make.start)
        let other = try await store.webhookRound(request([answer], holder: "two"), route: route)
        #expect(other.finished == [false] && other.routed == 0 && other.leased.isEmpty)
        // The answer recorded, then alice's second leased in the same transaction.
        let second = try await store.webhookRound(request([answer]), route: route)
        #expect(second.finished == [true] && second.routed == 0)
        #expect(second.leased.count == 1 && second.leased.first.map { $0.seq > a1.seq } == true)
        let delivered = try await store.webhookDeliveries(environment: .sandbox, state: .delivered, limit: 10)
        #expect(delivered.map(\.seq) == [a1.seq])
        // No endpoint this instance can sign for: nothing leased.
        _ = try await store.apply(Make.purchase("a3", for: alice))
        let unsigned = try await store.webhookRound(request([], endpoints: []), route: route)
        #expect(unsigned.routed == 1 && unsigned.leased.isEmpty)
    }

    @Test(
        "Apple's notifications are kept for apple.forward.url, body unchanged, only while it is set and once",
        arguments: StoreEngine.allCases)
    func forwarding(engine: StoreEngine) async throws {
        let store = try await engine.makeStore()
        let alice = Make.user("_aaaaaaaaaaa1")
        try await store.createUser(alice)
        func notification(_ uuid: String, owner: UUID? = nil) -> NotificationRecord {
            var record = NotificationRecord(
                uuid: uuid, environment: .sandbox, type: "DID_RENEW", transactionId: "t1", owner: owner,
                signedDate: Make.start, receivedAt: Make.start, outcome: .applied)
            record.forwardBody = #"{"signedPayload":"\#(uuid)"}"#
            return record
        }
        // A webhook endpoint alone does not forward.
        try await store.saveWebhookEndpoint(Self.endpoint("wh_a"))
        #expect(try await store.recordNotification(notification("n-0")))
        #expect(try await Self.route(store).isEmpty)
        try await store.saveWebhookEndpoint(
            WebhookEndpoint(
                id: WebhookEndpoint.forwardId(1), environment: .sandbox, url: "https://old.example.com/apple",
                secret: "", events: ["apple.notification"], createdAt: Make.start))
        #expect(try await store.recordNotification(notification("n-1", owner: alice.id)))
        #expect(try await store.recordNotification(notification("n-2")))
        // Apple's retry of one already kept is not kept again.
        #expect(try await !store.recordNotification(notification("n-1", owner: alice.id)))
        let records = try await Self.route(store)
        #expect(records.map(\.source) == [.apple, .apple])
        #expect(records.map(\.detail) == [#"{"signedPayload":"n-1"}"#, #"{"signedPayload":"n-2"}"#])
        #expect(records.map(\.supportId) == [alice.supportId.rawValue, ""])
        #expect(records.map(\.kind) == ["DID_RENEW", "DID_RENEW"])
    }

    @Test(
        "a deleted customer's events are still owed, without the reasons support wrote; a cancellation's audit is its own transaction's",
        arguments: StoreEngine.allCases)
    func deletionAndCancellation(engine: StoreEngine) async throws {
        let store = try await engine.makeStore()
        let alice = Make.user("_aaaaaaaaaaa1")
        try await store.createUser(alice)
        try await store.saveWebhookEndpoint(Self.endpoint("wh_a"))
        let grant = Grant(
            environment: .sandbox, recipient: alice.id, credits: 5, reason: "Ticket 9: John Smith", createdBy: "ada",
            createdAt: Make.start)
        try await store.createGrant(grant)
        let cancelled = try await store.cancelGrant(id: grant.id, environment: .sandbox, by: "ada", at: Make.start) {
            [
                AuditEvent(
                    environment: .sandbox, actor: "ada", action: "grant.cancel", subject: alice.supportId.rawValue,
                    after: #"{"id":"\#($0.id)","reason":"Ticket 9: John Smith"}"#, at: Make.start)
            ]
        }
        #expect(cancelled.cancelledAt == Make.start)
        _ = try await store.apply(
            LedgerRequest(
                owner: alice.id, environment: .sandbox,
                event: .adjustment(id: "a1", delta: 5, reason: "Ticket 9: John Smith"), at: Make.start))
        // The cancellation's audit entry made its record (written with the cancellation); the adjustment is made an
        // event whose body holds the reason.
        let endpoints = try await store.webhookEndpoints(environment: .sandbox)
        let seen = RecordLog()
        _ = try await store.routeWebhookEvents(environment: .sandbox, limit: 100, at: Make.start) { record in
            seen.append(record)
            guard record.source == .ledger else { return nil }
            return WebhookEvent(
                id: UUID(), type: "balance.adjusted", body: #"{"data":{"reason":"\#(record.reason ?? "")"},"id":"e"}"#,
                endpoints: endpoints.map(\.id))
        }
        #expect(seen.records.map(\.kind) == ["grant.cancel", "adjustment"])
        // One more, not made an event yet when the customer is deleted.
        _ = try await store.recordAudit(
            AuditEvent(
                environment: .sandbox, actor: "ada", action: "grant.cancel", subject: alice.supportId.rawValue,
                after: #"{"reason":"Ticket 9: John Smith"}"#, at: Make.start))
        _ = try await store.deleteUser(
            UserDeletion(user: alice.id, environment: .sandbox, actor: "ada", at: Make.start))
        let deliveries = try await store.webhookDeliveries(environment: .sandbox, state: nil, limit: 10)
        #expect(deliveries.count == 1)
        #expect(deliveries.allSatisfy { !$0.body.contains("John Smith") && $0.body.contains("reason") })
        let records = try await Self.route(store)
        #expect(records.contains { $0.kind == "grant.cancel" })
        #expect(records.allSatisfy { !($0.detail ?? "").contains("John Smith") && !($0.reason ?? "").contains("John") })
    }

    @Test("replay, removal, the backlog and pruning", arguments: StoreEngine.allCases)
    func replayAndPrune(engine: StoreEngine) async throws {
        let (store, alice) = try await Self.twoPurchases(engine)
        #expect(try await Self.route(store).count == 2)
        // A new endpoint hears what comes after; replay sends it what the outbox keeps.
        try await store.saveWebhookEndpoint(Self.endpoint("wh_late", events: ["purchase"]))
        #expect(try await store.webhookDeliveries(environment: .sandbox, state: nil, limit: 10).count == 2)
        #expect(
            try await store.replayWebhookEvents(
                endpoint: "wh_late", environment: .sandbox, since: Make.start, at: Make.start) == 2)
        #expect(
            try await store.replayWebhookEvents(
                endpoint: "wh_late", environment: .sandbox, since: Make.start.addingTimeInterval(1), at: Make.start)
                == 0)
        await #expect(throws: StoreError.self) {
            _ = try await store.replayWebhookEvents(
                endpoint: "wh_none", environment: .sandbox, since: Make.start, at: Make.start)
        }
        #expect(try await store.webhookBacklog(environment: .sandbox).pending == 4)
        // Removing an endpoint drops what it had not received.
        #expect(try await store.removeWebhookEndpoint(id: "wh_late", environment: .sandbox))
        #expect(try await !store.removeWebhookEndpoint(id: "wh_late", environment: .sandbox))
        #expect(try await store.webhookBacklog(environment: .sandbox).pending == 2)
        #expect(try await store.webhookEndpoints(environment: .sandbox).map(\.id) == ["wh_a"])
        #expect(try await store.webhookEndpoints(environment: .production).isEmpty)

        // Pruning keeps what is not delivered yet.
        let after = Make.start.addingTimeInterval(86_400)
        #expect(try await store.pruneWebhookEvents(environment: .sandbox, before: after) == 0)
        let leased = try await store.leaseWebhookDeliveries(
            environment: .sandbox, holder: "one", limit: 10, at: Make.start, until: after)
        for delivery in leased {
            _ = try await store.finishWebhookAttempt(
                WebhookAttempt(
                    endpoint: delivery.endpoint, seq: delivery.seq, outcome: .delivered, status: 200, error: nil,
                    at: Make.start), environment: .sandbox, holder: "one")
        }
        #expect(try await store.pruneWebhookEvents(environment: .sandbox, before: after) == 1)
        #expect(try await store.webhookDeliveries(environment: .sandbox, state: nil, limit: 10).count == 1)

        // Saving an endpoint again changes its secret and events, not its age.
        var changed = Self.endpoint("wh_a", events: ["spend"])
        (changed.previousSecret, changed.createdAt) = ("old-secret-0123456789", after)
        try await store.saveWebhookEndpoint(changed)
        let saved = try require(try await store.webhookEndpoints(environment: .sandbox).first)
        #expect(saved.events == ["spend"] && saved.previousSecret == "old-secret-0123456789")
        #expect(saved.createdAt == Make.start)
    }
}
