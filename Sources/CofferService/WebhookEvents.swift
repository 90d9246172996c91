import CofferCore
import CofferStore
import Foundation

/// How an outbox record becomes an event: its type and its body, by the core's words, for the endpoints that hear it.
public enum WebhookEvents {
    /// The event an outbox record makes, or `nil` when it makes none (the merge's second audit entry, say).
    ///
    /// - Parameters:
    ///   - record: The record, with its transaction's original transaction read.
    ///   - catalog: The catalog (a renewal is a later transaction of an auto-renewable subscription).
    ///   - endpoints: The environment's endpoints: the event goes to those that hear its type.
    ///   - id: The event's id.
    public static func event(
        for record: OutboxRecord, catalog: Catalog, endpoints: [WebhookEndpoint], id: UUID = UUID()
    ) -> WebhookEvent? {
        let here = endpoints.filter { $0.environment == record.environment }
        if record.source == .apple {
            // Apple's notification goes to `apple.forward.url` as it came, and nowhere else.
            guard let body = record.detail else { return nil }
            return WebhookEvent(
                id: id, type: appleNotification, body: body, endpoints: here.filter(\.isForward).map(\.id))
        }
        guard let (type, data) = typeAndData(record, catalog: catalog) else { return nil }
        let body: [String: Any] = [
            "id": id.uuidString.lowercased(), "type": type.rawValue, "createdAt": timestamp(record.createdAt),
            "environment": record.environment.rawValue, "supportId": record.supportId, "data": data,
        ]
        guard
            let json = try? JSONSerialization.data(
                withJSONObject: body, options: [.sortedKeys, .withoutEscapingSlashes]),
            let text = String(data: json, encoding: .utf8)
        else { return nil }
        return WebhookEvent(
            id: id, type: type.rawValue, body: text,
            endpoints: here.filter { !$0.isForward && $0.hears(type.rawValue) }.map(\.id))
    }

    /// The type of a forwarded notification of Apple's (not one of Coffer's events).
    public static let appleNotification = "apple.notification"

    /// ISO 8601 in UTC, to the second.
    static func timestamp(_ date: Date) -> String {
        date.formatted(.iso8601)
    }

    private static func typeAndData(_ record: OutboxRecord, catalog: Catalog) -> (WebhookEventType, [String: Any])? {
        let made: (WebhookEventType, [String: Any])?
        switch record.source {
        case .ledger: made = ledger(record, catalog: catalog)
        case .audit: made = audit(record)
        case .apple, .notification: return notice(record)
        }
        // Amounts say which currency they count: the ledger entry's, or the default (audit records of merges, grants).
        guard var (type, data) = made else { return nil }
        let amounts: Set = [
            "credits", "balance", "deficit", "closedBalance", "closedDeficit", "movedBalance", "movedDeficit",
        ]
        if !Set(data.keys).isDisjoint(with: amounts) {
            data["currency"] = (record.currency ?? catalog.defaultCurrency).rawValue
        }
        return (type, data)
    }

    /// Apple's notices the developer's backend hears of: a subscription that expired.
    private static func notice(_ record: OutboxRecord) -> (WebhookEventType, [String: Any])? {
        guard record.source == .notification, record.kind == "EXPIRED" else { return nil }
        return (
            .subscriptionExpired,
            compact([
                "transactionId": record.transactionId, "originalTransactionId": record.originalTransactionId,
                "productId": record.productId, "reason": record.reason,
            ])
        )
    }

    private static func ledger(_ record: OutboxRecord, catalog: Catalog) -> (WebhookEventType, [String: Any])? {
        guard let kind = LedgerEntryKind(rawValue: record.kind) else { return nil }
        let amount = record.amount ?? 0
        let id = record.entryKey.flatMap(IdempotencyKey.init(rawValue:))?.id
        var data = compact([
            "balance": record.balance, "deficit": record.deficit, "balanceChange": record.balanceDelta,
            "deficitChange": record.deficitDelta,
        ])
        let transaction = compact([
            "transactionId": record.transactionId, "originalTransactionId": record.originalTransactionId,
            "productId": record.productId,
        ])
        let type: WebhookEventType
        switch kind {
        case .purchase:
            let renewal =
                catalog.product(id: record.productId ?? "")?.kind == .autoRenewable
                && record.originalTransactionId.map { $0 != record.transactionId } == true
            type = renewal ? .subscriptionRenewed : .purchaseDelivered
            data.merge(transaction) { $1 }
            data["credits"] = amount
        case .revocation:
            type = .purchaseRefunded
            data.merge(transaction) { $1 }
            data["credits"] = -amount
        case .reversal:
            type = .purchaseRefundReversed
            data.merge(transaction) { $1 }
            data["credits"] = amount
        case .grant:
            type = .grantClaimed
            data.merge(compact(["grantId": id, "reason": record.reason])) { $1 }
            data["credits"] = amount
        case .adjustment:
            type = .balanceAdjusted
            data.merge(compact(["adjustmentId": id, "reason": record.reason])) { $1 }
            data["credits"] = amount
        case .spend:
            type = .balanceSpent
            data.merge(compact(["spendKey": id])) { $1 }
            data["credits"] = -amount
        case .expiry:
            type = .creditsExpired
            if let period = id.flatMap(CreditLots.allowanceTransaction(ofLot:)) {
                data["transactionId"] = period
            } else {
                data.merge(compact(["grantId": id])) { $1 }
            }
            data["credits"] = -amount
        case .allowance:
            type = .allowanceCredited
            data.merge(transaction) { $1 }
            data["credits"] = amount
        case .merge:
            return nil
        }
        return (type, data)
    }

    private static func audit(_ record: OutboxRecord) -> (WebhookEventType, [String: Any])? {
        let detail =
            record.detail.flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] } ?? [:]
        func pick(_ keys: [String: String]) -> [String: Any] {
            var data: [String: Any] = [:]
            for (from, to) in keys { if let value = detail[from], !(value is NSNull) { data[to] = value } }
            return data
        }
        switch record.kind {
        case "grant.create", "grant.cancel":
            var data = pick([
                "id": "grantId", "credits": "credits", "reason": "reason", "createdBy": "createdBy",
                "status": "status", "cancelledBy": "cancelledBy",
            ])
            // Lowercase, as grant.claimed's (the ledger's key) has it.
            if let id = data["grantId"] as? String { data["grantId"] = id.lowercased() }
            return (record.kind == "grant.create" ? .grantCreated : .grantCancelled, data)
        case "user.merge":
            // Written once for each customer; the event is the merged one's.
            guard detail["from"] as? String == record.supportId else { return nil }
            return (
                .customerMerged,
                pick([
                    "from": "from", "into": "into", "movedBalance": "movedBalance", "movedDeficit": "movedDeficit",
                    "balance": "balance", "deficit": "deficit",
                ])
            )
        case "customer.delete":
            return (
                .customerDeleted,
                pick([
                    "closedBalance": "closedBalance", "closedDeficit": "closedDeficit",
                    "cancelledGrants": "cancelledGrants",
                ])
            )
        default:
            return nil
        }
    }

    private static func compact(_ values: [String: Any?]) -> [String: Any] { values.compactMapValues { $0 } }
}

/// The `Coffer-Signature` header: `t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>`, one `v1=` for
/// each secret (two during a rotation).
public enum WebhookSignature {
    /// The header's name.
    public static let header = "Coffer-Signature"

    /// The header's value for `body` signed at `at` with each secret.
    public static func value(body: String, secrets: [String], at: Date) -> String {
        let timestamp = Int64(at.timeIntervalSince1970.rounded(.down))
        let signed = Data("\(timestamp).\(body)".utf8)
        return (["t=\(timestamp)"] + secrets.map { "v1=" + HMACSHA256.hex(key: Data($0.utf8), message: signed) })
            .joined(separator: ",")
    }

    /// Whether `value` signs `body` with `secret`, at most `tolerance` seconds from `now` (as a receiver checks it).
    public static func verify(
        _ value: String, body: String, secret: String, now: Date, tolerance: TimeInterval = 300
    ) -> Bool {
        var timestamp: Int64?
        var signatures: [String] = []
        for part in value.split(separator: ",") {
            let pair = part.split(separator: "=", maxSplits: 1).map(String.init)
            guard pair.count == 2 else { continue }
            if pair[0] == "t" { timestamp = Int64(pair[1]) }
            if pair[0] == "v1" { signatures.append(pair[1]) }
        }
        guard let timestamp, abs(now.timeIntervalSince1970 - Double(timestamp)) <= tolerance else { return false }
        let expected = HMACSHA256.hex(key: Data(secret.utf8), message: Data("\(timestamp).\(body)".utf8))
        return signatures.contains { HMACSHA256.constantTimeEqual($0, expected) }
    }
}

/// When a failed delivery is tried again: within 10 seconds first, then less and less often, for 3 days from its
/// first attempt; after that it is a dead letter.
public enum WebhookBackoff {
    /// How long retries go on.
    public static let window: TimeInterval = 3 * 86_400
    /// The waits after the first, second, ... failure; the last repeats.
    public static let delays: [TimeInterval] = [5, 30, 120, 600, 1_800, 3_600, 7_200, 14_400, 28_800]

    /// When to try again after `attempts` failed attempts (this one included), the first made at `firstAttemptAt`;
    /// `nil` when the 3 days are over.
    public static func retryAt(attempts: Int, firstAttemptAt: Date, now: Date) -> Date? {
        let end = firstAttemptAt.addingTimeInterval(window)
        guard now < end else { return nil }
        let delay = delays[min(max(attempts, 1), delays.count) - 1]
        return min(now.addingTimeInterval(delay), end)
    }
}
