// swift-format-ignore-file: AllPublicDeclarationsHaveDocumentation

// The public methods here are the store protocols' requirements, documented there (`CofferStore/Stores`).
import CofferCore
import Foundation

/// The in-memory store's webhooks: endpoints, the outbox written with each change (as the other engines' triggers
/// write theirs), and deliveries.
struct WebhookOutbox {
    struct Record {
        var record: OutboxRecord
        var event: WebhookEvent?
        var routed = false
    }

    struct DeliveryKey: Hashable {
        var environment: AppStoreEnvironment
        var endpoint: String
        var seq: Int64
    }

    struct Delivery {
        var supportId: String
        var state = WebhookDeliveryState.pending
        var attempts = 0
        var firstAttemptAt: Date?
        var nextAt: Date
        var leaseHolder: String?
        var leaseUntil: Date?
        var lastStatus: Int?
        var lastError: String?
        var deliveredAt: Date?
    }

    var endpoints: [WebhookEndpoint] = []
    var records: [Record] = []
    var deliveries: [DeliveryKey: Delivery] = [:]
    var lastSeq: Int64 = 0

    /// Whether an endpoint hears Coffer's events there (`apple.forward.url` hears only Apple's notifications).
    func heard(_ environment: AppStoreEnvironment) -> Bool {
        endpoints.contains { $0.environment == environment && !$0.isForward }
    }

    mutating func append(_ record: OutboxRecord) {
        lastSeq += 1
        var record = record
        record.seq = lastSeq
        records.append(Record(record: record))
    }

    mutating func write(_ entry: LedgerEntry, environment: AppStoreEnvironment, supportId: String, original: String?) {
        guard entry.key.kind != .merge, heard(environment) else { return }
        append(
            OutboxRecord(
                seq: 0, environment: environment, source: .ledger, kind: entry.key.kind.rawValue, supportId: supportId,
                entryKey: entry.key.rawValue, amount: entry.amount, balanceDelta: entry.balanceDelta,
                deficitDelta: entry.deficitDelta, balance: entry.walletAfter.balance,
                deficit: entry.walletAfter.deficit, transactionId: entry.transactionId, originalTransactionId: original,
                productId: entry.productId,
                reason: entry.reason, createdAt: entry.createdAt, currency: entry.currency))
    }

    mutating func write(_ event: AuditEvent) {
        guard ["grant.create", "grant.cancel", "user.merge", "customer.delete"].contains(event.action),
            heard(event.environment)
        else { return }
        append(
            OutboxRecord(
                seq: 0, environment: event.environment, source: .audit, kind: event.action, supportId: event.subject,
                detail: event.after, createdAt: event.at))
    }

    mutating func write(_ notification: NotificationRecord, supportId: String) {
        guard notification.type == "EXPIRED", notification.owner != nil, heard(notification.environment) else {
            return
        }
        append(
            OutboxRecord(
                seq: 0, environment: notification.environment, source: .notification, kind: notification.type,
                supportId: supportId, transactionId: notification.transactionId,
                originalTransactionId: notification.originalTransactionId, reason: notification.subtype,
                createdAt: notification.receivedAt))
    }

    /// Apple's notification, its body unchanged, while the environment forwards (`apple.forward.url`).
    mutating func forward(_ notification: NotificationRecord, supportId: String) {
        guard let body = notification.forwardBody,
            endpoints.contains(where: { $0.environment == notification.environment && $0.isForward })
        else { return }
        append(
            OutboxRecord(
                seq: 0, environment: notification.environment, source: .apple, kind: notification.type,
                supportId: supportId, transactionId: notification.transactionId, reason: notification.subtype,
                detail: body, createdAt: notification.receivedAt))
    }

    /// A deleted customer's events, still owed to the endpoints, without the reasons support wrote.
    mutating func scrub(environment: AppStoreEnvironment, supportIds: Set<String>) {
        for index in records.indices
        where records[index].record.environment == environment
            && supportIds.contains(records[index].record.supportId)
            && [.ledger, .audit].contains(records[index].record.source)
        {
            if records[index].record.reason != nil { records[index].record.reason = UserDeletion.removedReason }
            records[index].record.detail = UserDeletion.anonymised(records[index].record.detail)
            if let body = records[index].event?.body,
                var object = try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any],
                var data = object["data"] as? [String: Any], data["reason"] != nil
            {
                data["reason"] = UserDeletion.removedReason
                object["data"] = data
                if let json = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]) {
                    records[index].event?.body = String(decoding: json, as: UTF8.self)
                }
            }
        }
    }

    func delivery(_ key: DeliveryKey) -> WebhookDelivery? {
        guard let delivery = deliveries[key], let record = records.first(where: { $0.record.seq == key.seq }),
            let event = record.event
        else { return nil }
        return WebhookDelivery(
            endpoint: key.endpoint, seq: key.seq, eventId: event.id, type: event.type, supportId: delivery.supportId,
            body: event.body, state: delivery.state, attempts: delivery.attempts,
            firstAttemptAt: delivery.firstAttemptAt, nextAttemptAt: delivery.nextAt, lastStatus: delivery.lastStatus,
            lastError: delivery.lastError, deliveredAt: delivery.deliveredAt, createdAt: record.record.createdAt)
    }

    mutating func queue(_ key: DeliveryKey, supportId: String, at: Date) {
        deliveries[key] = Delivery(supportId: supportId, nextAt: at)
    }
}

extension InMemoryStore {
    public func webhookEndpoints(environment: AppStoreEnvironment) -> [WebhookEndpoint] {
        state.outbox.endpoints.filter { $0.environment == environment }
            .sorted { ($0.createdAt, $0.id) < ($1.createdAt, $1.id) }
    }

    public func saveWebhookEndpoint(_ endpoint: WebhookEndpoint) {
        if let index = state.outbox.endpoints.firstIndex(where: {
            $0.environment == endpoint.environment && $0.id == endpoint.id
        }) {
            var saved = endpoint
            saved.createdAt = state.outbox.endpoints[index].createdAt
            state.outbox.endpoints[index] = saved
        } else {
            state.outbox.endpoints.append(endpoint)
        }
    }

    public func removeWebhookEndpoint(id: String, environment: AppStoreEnvironment) -> Bool {
        state.outbox.deliveries = state.outbox.deliveries.filter {
            $0.key.environment != environment || $0.key.endpoint != id
        }
        let before = state.outbox.endpoints.count
        state.outbox.endpoints.removeAll { $0.environment == environment && $0.id == id }
        return state.outbox.endpoints.count < before
    }

    public func routeWebhookEvents(
        environment: AppStoreEnvironment, limit: Int, at: Date,
        _ route: @escaping @Sendable (OutboxRecord) -> WebhookEvent?
    ) -> Int {
        var count = 0
        for index in state.outbox.records.indices where count < limit {
            var item = state.outbox.records[index]
            guard item.record.environment == environment, !item.routed else { continue }
            var record = item.record
            if record.originalTransactionId == nil, let transactionId = record.transactionId {
                record.originalTransactionId =
                    state.receipt(transactionId: transactionId, environment: environment)?.transaction
                    .originalTransactionId
            }
            let event = route(record)
            (item.event, item.routed) = (event, true)
            state.outbox.records[index] = item
            for endpoint in Set(event?.endpoints ?? []) {
                let key = WebhookOutbox.DeliveryKey(environment: environment, endpoint: endpoint, seq: record.seq)
                if state.outbox.deliveries[key] == nil { state.outbox.queue(key, supportId: record.supportId, at: at) }
            }
            count += 1
        }
        return count
    }

    public func leaseWebhookDeliveries(
        environment: AppStoreEnvironment, holder: String, limit: Int, at: Date, until: Date, endpoints: [String]?
    ) -> [WebhookDelivery] {
        let pending = state.outbox.deliveries.filter { $0.key.environment == environment && $0.value.state == .pending }
        let due = pending.filter { key, delivery in
            endpoints.map { $0.contains(key.endpoint) } ?? true && delivery.nextAt <= at
                && (delivery.leaseUntil.map { $0 <= at } ?? true)
                && !pending.contains {
                    $0.key.endpoint == key.endpoint && $0.value.supportId == delivery.supportId && $0.key.seq < key.seq
                }
        }
        let picked = due.sorted { ($0.value.nextAt, $0.key.seq) < ($1.value.nextAt, $1.key.seq) }.prefix(max(0, limit))
        return picked.compactMap { key, _ in
            state.outbox.deliveries[key]?.leaseHolder = holder
            state.outbox.deliveries[key]?.leaseUntil = until
            return state.outbox.delivery(key)
        }
    }

    public func finishWebhookAttempts(_ attempts: [WebhookAttempt], environment: AppStoreEnvironment, holder: String)
        -> [Bool]
    {
        attempts.map { finish($0, environment: environment, holder: holder) }
    }

    private func finish(_ attempt: WebhookAttempt, environment: AppStoreEnvironment, holder: String) -> Bool {
        let key = WebhookOutbox.DeliveryKey(environment: environment, endpoint: attempt.endpoint, seq: attempt.seq)
        guard var delivery = state.outbox.deliveries[key], delivery.leaseHolder == holder, delivery.state == .pending
        else { return false }
        delivery.attempts += 1
        delivery.firstAttemptAt = delivery.firstAttemptAt ?? attempt.at
        (delivery.lastStatus, delivery.lastError) = (attempt.status, attempt.error.map { String($0.prefix(500)) })
        (delivery.leaseHolder, delivery.leaseUntil) = (nil, nil)
        switch attempt.outcome {
        case .delivered: (delivery.state, delivery.deliveredAt) = (.delivered, attempt.at)
        case .failed(let retryAt?):
            delivery.nextAt = retryAt
            // The customer's later deliveries wait behind this one: not due before its retry.
            for (other, waiting) in state.outbox.deliveries
            where other.environment == environment && other.endpoint == key.endpoint && other.seq > key.seq
                && waiting.state == .pending && waiting.supportId == delivery.supportId && waiting.nextAt < retryAt
            {
                state.outbox.deliveries[other]?.nextAt = retryAt
            }
        case .failed(nil): delivery.state = .dead
        }
        state.outbox.deliveries[key] = delivery
        return true
    }

    public func webhookDeliveries(environment: AppStoreEnvironment, state wanted: WebhookDeliveryState?, limit: Int)
        -> [WebhookDelivery]
    {
        let keys = state.outbox.deliveries.filter { key, delivery in
            key.environment == environment && (wanted == nil || delivery.state == wanted)
        }.keys.sorted { ($1.seq, $0.endpoint) < ($0.seq, $1.endpoint) }
        return keys.prefix(max(0, limit)).compactMap { state.outbox.delivery($0) }
    }

    public func resendWebhookDelivery(endpoint: String, seq: Int64, environment: AppStoreEnvironment, at: Date) throws {
        let key = WebhookOutbox.DeliveryKey(environment: environment, endpoint: endpoint, seq: seq)
        guard var delivery = state.outbox.deliveries[key] else {
            throw StoreError.notFound("delivery \(seq) to \(endpoint)")
        }
        // A lease that runs is kept: the attempt under way ends it.
        (delivery.state, delivery.attempts, delivery.firstAttemptAt) = (.pending, 0, nil)
        (delivery.nextAt, delivery.deliveredAt) = (at, nil)
        state.outbox.deliveries[key] = delivery
    }

    public func replayWebhookEvents(endpoint: String, environment: AppStoreEnvironment, since: Date, at: Date) throws
        -> Int
    {
        guard let heard = webhookEndpoints(environment: environment).first(where: { $0.id == endpoint }) else {
            throw StoreError.notFound("webhook endpoint \(endpoint)")
        }
        var count = 0
        for item in state.outbox.records where item.record.environment == environment && item.routed {
            guard let event = item.event, item.record.createdAt >= since, heard.replayedTypes.contains(event.type)
            else { continue }
            let key = WebhookOutbox.DeliveryKey(environment: environment, endpoint: endpoint, seq: item.record.seq)
            if var delivery = state.outbox.deliveries[key] {
                (delivery.state, delivery.attempts, delivery.firstAttemptAt) = (.pending, 0, nil)
                (delivery.nextAt, delivery.deliveredAt) = (at, nil)
                state.outbox.deliveries[key] = delivery
            } else {
                state.outbox.queue(key, supportId: item.record.supportId, at: at)
            }
            count += 1
        }
        return count
    }

    public func webhookBacklog(environment: AppStoreEnvironment) -> WebhookBacklog {
        let deliveries = state.outbox.deliveries.filter { $0.key.environment == environment }
        let pendingSeqs = Set(deliveries.filter { $0.value.state == .pending }.map(\.key.seq))
        let records = state.outbox.records.filter { $0.record.environment == environment }
        let unrouted = records.filter { !$0.routed }
        let oldest = records.filter { !$0.routed || pendingSeqs.contains($0.record.seq) }.map(\.record.createdAt).min()
        return WebhookBacklog(
            pending: pendingSeqs.isEmpty ? 0 : deliveries.values.filter { $0.state == .pending }.count,
            dead: deliveries.values.filter { $0.state == .dead }.count, unrouted: unrouted.count, oldest: oldest)
    }

    public func pruneWebhookEvents(environment: AppStoreEnvironment, before: Date) -> Int {
        let pending = Set(
            state.outbox.deliveries.filter { $0.key.environment == environment && $0.value.state == .pending }
                .map(\.key.seq))
        let done = Set(
            state.outbox.records.filter {
                $0.record.environment == environment && $0.routed && $0.record.createdAt < before
                    && !pending.contains($0.record.seq)
            }.map(\.record.seq))
        state.outbox.records.removeAll { done.contains($0.record.seq) }
        state.outbox.deliveries = state.outbox.deliveries.filter {
            $0.key.environment != environment || !done.contains($0.key.seq)
        }
        return done.count
    }
}
