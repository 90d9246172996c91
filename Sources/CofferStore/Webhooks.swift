import CofferCore
import Foundation

/// Where the developer's own backend hears of Coffer's changes: a URL, the secret that signs each request, and the
/// events it wants.
public struct WebhookEndpoint: Sendable, Hashable, Codable {
    /// The id of the endpoint the settings name (`webhook.url`, `webhook.secret`): every instance writes it at start,
    /// with its secret kept in the settings only.
    public static let settingsId = "settings"

    /// The endpoint's id: ``settingsId``, or `wh_` and 16 hex digits for one added with `coffer webhooks add` or
    /// on the panel.
    public var id: String
    /// The environment whose events it hears.
    public var environment: AppStoreEnvironment
    /// Where events are posted (`https://`, or `http://` to loopback).
    public var url: String
    /// The secret that signs each request; empty for the settings' endpoint (its secret is in the settings).
    public var secret: String
    /// During a rotation, the secret before: both sign (two `v1=` values) until the rotation ends.
    public var previousSecret: String?
    /// The event types it hears (``WebhookEventType``); empty for every one.
    public var events: [String]
    /// When it was added.
    public var createdAt: Date

    /// Creates an endpoint.
    public init(
        id: String, environment: AppStoreEnvironment, url: String, secret: String, previousSecret: String? = nil,
        events: [String] = [], createdAt: Date
    ) {
        self.id = id
        self.environment = environment
        self.url = url
        self.secret = secret
        self.previousSecret = previousSecret
        self.events = events
        self.createdAt = createdAt
    }

    /// The id of the `n`th URL of `apple.forward.url` (from 1): every instance writes them at start.
    public static func forwardId(_ n: Int) -> String { "forward-\(n)" }

    /// Whether it is an `apple.forward.url`: it hears Apple's notifications, unchanged, and nothing else.
    public var isForward: Bool { id.hasPrefix("forward-") }

    /// Whether the settings name it (`webhook.url` or `apple.forward.url`): changed there, not on the panel or
    /// with `coffer webhooks`.
    public var isFromSettings: Bool { id == Self.settingsId || isForward }

    /// The types a replay sends it: its own, or (hearing every event) each of Coffer's events.
    public var replayedTypes: [String] { events.isEmpty ? WebhookEventType.allCases.map(\.rawValue) : events }

    /// Whether it hears events of `type`.
    public func hears(_ type: String) -> Bool { events.isEmpty || events.contains(type) }
}

/// One change written to the outbox in the same database transaction as the change itself, as the store's
/// triggers copy it: a ledger entry, an audit entry of support's or a customer's (a grant made or cancelled, a
/// merge, a deletion), or Apple's notice that a subscription expired. The delivery service turns it into an event
/// (``WebhookEvent``) once.
public struct OutboxRecord: Sendable, Hashable {
    /// Where it came from.
    public enum Source: String, Sendable, Hashable, CaseIterable {
        /// A ledger entry; ``OutboxRecord/kind`` is its ``LedgerEntryKind``.
        case ledger
        /// An audit entry; ``OutboxRecord/kind`` is its action (`grant.create`, `grant.cancel`, `user.merge`,
        /// `customer.delete`) and ``OutboxRecord/detail`` its state after, as JSON.
        case audit
        /// Apple's notification; ``OutboxRecord/kind`` is its type (`EXPIRED`) and ``OutboxRecord/reason`` its
        /// subtype.
        case notification
        /// Apple's notification as it came, for `apple.forward.url`: ``OutboxRecord/detail`` is its body, unchanged.
        case apple
    }

    /// The outbox's sequence number: events of one customer go in this order.
    public var seq: Int64
    /// The environment.
    public var environment: AppStoreEnvironment
    /// Where it came from.
    public var source: Source
    /// What it is, by its source.
    public var kind: String
    /// The customer's Support ID, as it was when the change was written.
    public var supportId: String
    /// The ledger entry's key (`purchase:2000000123`, `grant:<id>`, ...).
    public var entryKey: String?
    /// The entry's nominal amount.
    public var amount: Int64?
    /// How the entry changed the balance.
    public var balanceDelta: Int64?
    /// How the entry changed the deficit.
    public var deficitDelta: Int64?
    /// The balance after the entry.
    public var balance: Int64?
    /// The deficit after the entry.
    public var deficit: Int64?
    /// The transaction.
    public var transactionId: String?
    /// The transaction's original transaction (read when the event is made: a renewal's differs).
    public var originalTransactionId: String?
    /// The product.
    public var productId: String?
    /// The entry's reason, or the notification's subtype.
    public var reason: String?
    /// The audit entry's state after, as JSON.
    public var detail: String?
    /// When the change was written.
    public var createdAt: Date
    /// The currency of a ledger entry of another currency than the default (``LedgerEntry/currency``), as the entry
    /// was written; `nil` for the default currency's.
    public var currency: Currency?

    /// Creates a record.
    public init(
        seq: Int64, environment: AppStoreEnvironment, source: Source, kind: String, supportId: String,
        entryKey: String? = nil, amount: Int64? = nil, balanceDelta: Int64? = nil, deficitDelta: Int64? = nil,
        balance: Int64? = nil, deficit: Int64? = nil, transactionId: String? = nil,
        originalTransactionId: String? = nil, productId: String? = nil, reason: String? = nil,
        detail: String? = nil, createdAt: Date, currency: Currency? = nil
    ) {
        self.currency = currency
        self.seq = seq
        self.environment = environment
        self.source = source
        self.kind = kind
        self.supportId = supportId
        self.entryKey = entryKey
        self.amount = amount
        self.balanceDelta = balanceDelta
        self.deficitDelta = deficitDelta
        self.balance = balance
        self.deficit = deficit
        self.transactionId = transactionId
        self.originalTransactionId = originalTransactionId
        self.productId = productId
        self.reason = reason
        self.detail = detail
        self.createdAt = createdAt
    }
}

/// An outbox record made an event: its id (the same on every retry), type and body, and the endpoints it goes to.
public struct WebhookEvent: Sendable, Hashable {
    /// The event's id.
    public var id: UUID
    /// Its type (``WebhookEventType``).
    public var type: String
    /// The JSON body, exactly as every attempt posts it.
    public var body: String
    /// The endpoints that hear it (none: it is kept, and goes nowhere).
    public var endpoints: [String]

    /// Creates an event.
    public init(id: UUID, type: String, body: String, endpoints: [String]) {
        self.id = id
        self.type = type
        self.body = body
        self.endpoints = endpoints
    }
}

/// Where one event stands at one endpoint.
public enum WebhookDeliveryState: String, Sendable, Hashable, Codable, CaseIterable {
    /// Not delivered yet: waiting for its attempt or its retry.
    case pending
    /// The endpoint answered 2xx.
    case delivered
    /// Retried for 3 days without a 2xx: a dead letter, until support sends it again.
    case dead
}

/// One event at one endpoint: its body, its state and its attempts.
public struct WebhookDelivery: Sendable, Hashable {
    /// The endpoint.
    public var endpoint: String
    /// The event's outbox sequence number.
    public var seq: Int64
    /// The event's id.
    public var eventId: UUID
    /// The event's type.
    public var type: String
    /// The customer's Support ID (events of one customer go in order).
    public var supportId: String
    /// The JSON body.
    public var body: String
    /// Where it stands.
    public var state: WebhookDeliveryState
    /// Attempts made.
    public var attempts: Int
    /// When it was first attempted (retries end 3 days after).
    public var firstAttemptAt: Date?
    /// When it is attempted next, while pending.
    public var nextAttemptAt: Date
    /// The last answer's HTTP status, if one came.
    public var lastStatus: Int?
    /// What went wrong last.
    public var lastError: String?
    /// When it was delivered.
    public var deliveredAt: Date?
    /// When the event was written.
    public var createdAt: Date

    /// Creates a delivery.
    public init(
        endpoint: String, seq: Int64, eventId: UUID, type: String, supportId: String, body: String,
        state: WebhookDeliveryState, attempts: Int, firstAttemptAt: Date?, nextAttemptAt: Date, lastStatus: Int?,
        lastError: String?, deliveredAt: Date?, createdAt: Date
    ) {
        self.endpoint = endpoint
        self.seq = seq
        self.eventId = eventId
        self.type = type
        self.supportId = supportId
        self.body = body
        self.state = state
        self.attempts = attempts
        self.firstAttemptAt = firstAttemptAt
        self.nextAttemptAt = nextAttemptAt
        self.lastStatus = lastStatus
        self.lastError = lastError
        self.deliveredAt = deliveredAt
        self.createdAt = createdAt
    }
}

/// How one attempt ended.
public struct WebhookAttempt: Sendable, Hashable {
    /// What came of it.
    public enum Outcome: Sendable, Hashable {
        /// A 2xx answer.
        case delivered
        /// No 2xx answer: retried at the date, or a dead letter when `nil`.
        case failed(retryAt: Date?)
    }

    /// The endpoint.
    public var endpoint: String
    /// The event's outbox sequence number.
    public var seq: Int64
    /// What came of it.
    public var outcome: Outcome
    /// The answer's HTTP status, if one came.
    public var status: Int?
    /// What went wrong (at most 500 characters are kept).
    public var error: String?
    /// When it was made.
    public var at: Date

    /// Creates an attempt.
    public init(endpoint: String, seq: Int64, outcome: Outcome, status: Int?, error: String?, at: Date) {
        self.endpoint = endpoint
        self.seq = seq
        self.outcome = outcome
        self.status = status
        self.error = error
        self.at = at
    }
}

/// The outbox's backlog, for metrics and the panel.
public struct WebhookBacklog: Sendable, Hashable {
    /// The most each count reads: past it, the count says this many (a backlog of millions costs a page no more
    /// than one of a hundred thousand).
    public static let countLimit = 100_000

    /// Deliveries not made yet (at most ``countLimit``).
    public var pending: Int
    /// Dead letters (at most ``countLimit``).
    public var dead: Int
    /// Outbox records not made events yet (at most ``countLimit``).
    public var unrouted: Int
    /// When the oldest pending delivery's event was written, or the oldest unrouted record (the lag).
    public var oldest: Date?

    /// Creates a backlog.
    public init(pending: Int, dead: Int, unrouted: Int, oldest: Date?) {
        self.pending = pending
        self.dead = dead
        self.unrouted = unrouted
        self.oldest = oldest
    }
}

/// One round of the delivery service's writes, made in one transaction by
/// ``WebhookStore/webhookRound(_:route:)``: the last round's answers recorded, new records made events, due
/// deliveries leased.
public struct WebhookRoundRequest: Sendable, Hashable {
    /// The environment.
    public var environment: AppStoreEnvironment
    /// This instance, as the holder of its leases.
    public var holder: String
    /// Answers to record first (as ``WebhookStore/finishWebhookAttempts(_:environment:holder:)``), in key order.
    public var finishing: [WebhookAttempt]
    /// Outbox records to make events, at most.
    public var routeLimit: Int
    /// Deliveries to lease, at most.
    public var leaseLimit: Int
    /// The endpoints this instance can sign for (`nil`: any).
    public var endpoints: [String]?
    /// Now: new deliveries are due at it, and due ones are leased at it.
    public var at: Date
    /// When the leases end.
    public var until: Date

    /// Creates a round's request.
    public init(
        environment: AppStoreEnvironment, holder: String, finishing: [WebhookAttempt], routeLimit: Int,
        leaseLimit: Int, endpoints: [String]?, at: Date, until: Date
    ) {
        self.environment = environment
        self.holder = holder
        self.finishing = finishing
        self.routeLimit = routeLimit
        self.leaseLimit = leaseLimit
        self.endpoints = endpoints
        self.at = at
        self.until = until
    }
}

/// What one round's transaction did.
public struct WebhookRoundResult: Sendable, Hashable {
    /// For each answer recorded, whether its lease was still the holder's.
    public var finished: [Bool]
    /// Outbox records made events (or passed over).
    public var routed: Int
    /// The deliveries leased.
    public var leased: [WebhookDelivery]

    /// Creates a result.
    public init(finished: [Bool], routed: Int, leased: [WebhookDelivery]) {
        self.finished = finished
        self.routed = routed
        self.leased = leased
    }
}
