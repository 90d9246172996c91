import AsyncHTTPClient
import CofferCore
import CofferStore
import Crypto
import Foundation
import Logging
import NIOCore
import ServiceLifecycle

/// The endpoint the settings name: `webhook.url` and `webhook.secret` (with `webhook.previous.secret` during a
/// rotation).
public struct WebhookSettings: Sendable, Hashable {
    /// Where events are posted.
    public var url: String
    /// The secret that signs each request.
    public var secret: String
    /// The secret before, while a rotation runs: both sign.
    public var previousSecret: String?

    /// Creates the settings' endpoint.
    public init(url: String, secret: String, previousSecret: String? = nil) {
        self.url = url
        self.secret = secret
        self.previousSecret = previousSecret
    }
}

/// Posts one signed event to an endpoint.
public protocol WebhookSender: Sendable {
    /// Posts `body` to `url` with `headers`, answered within `timeout` seconds.
    ///
    /// - Returns: The answer's HTTP status.
    /// - Throws: When no answer came (refused, unreachable, past the deadline).
    func post(url: String, headers: [(String, String)], body: String, timeout: Int) async throws -> Int
}

/// The sender over AsyncHTTPClient: redirects are not followed (a 3xx is a failure), and the answer's body is read
/// up to 4 KiB and dropped.
public struct HTTPWebhookSender: WebhookSender {
    let client: HTTPClient

    /// A sender over `client`.
    public init(client: HTTPClient) { self.client = client }

    /// Posts and returns the status.
    public func post(url: String, headers: [(String, String)], body: String, timeout: Int) async throws -> Int {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        request.body = .bytes(ByteBuffer(string: body))
        let response = try await client.execute(request, deadline: .now() + .seconds(Int64(timeout)))
        _ = try? await response.body.collect(upTo: 4_096)
        return Int(response.status.code)
    }
}

/// HMAC-SHA256, as hex.
enum HMACSHA256 {
    static func hex(key: Data, message: Data) -> String {
        let code = HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: key))
        return code.map { String(format: "%02x", $0) }.joined()
    }

    /// Compares two hex strings without stopping at the first difference.
    static func constantTimeEqual(_ lhs: String, _ rhs: String) -> Bool {
        let (a, b) = (Array(lhs.utf8), Array(rhs.utf8))
        guard a.count == b.count else { return false }
        return zip(a, b).reduce(0) { $0 | ($1.0 ^ $1.1) } == 0
    }
}

/// Delivers the outbox's events to the developer's endpoints, on every instance: makes new records events (one
/// instance at a time), leases due deliveries (none sent twice at once; a customer's in order), posts each signed,
/// and records the answer: 2xx delivered, anything else retried by ``WebhookBackoff`` for 3 days, then a dead letter.
public struct WebhookDispatcher: Service {
    /// How long a lease lasts: longer than a round's posts can take (a round's deliveries posted `concurrency` at a
    /// time, each within ``timeout``: 8 waves of 10 s for 256 at 32), so a lease never ends while its post runs.
    static let lease: TimeInterval = 150
    /// An attempt's deadline, in seconds.
    static let timeout = 10
    /// How long delivered events are kept (for `coffer webhooks replay`).
    public static let retention: TimeInterval = 30 * 86_400

    let store: any CofferStore
    let catalog: Catalog
    let environment: AppStoreEnvironment
    let settings: WebhookSettings?
    /// `apple.forward.url`: where Apple's notifications go, unchanged.
    let forwardURLs: [String]
    let sender: any WebhookSender
    let metrics: ServerMetrics
    let logger: Logger
    let now: @Sendable () -> Date
    let clock: any TimerClock
    /// This instance, as the holder of its leases.
    let holder: String
    /// Seconds between rounds.
    let interval: Double
    /// Deliveries one round leases.
    let batch: Int
    /// Outbox records one round makes events (one write transaction, kept short beside the ledger's).
    static let routedPerRound = 256
    /// Requests a second, during a round, above which the server counts as busy.
    static let busyRate = 100.0
    /// The longest a full round's pause for a busy server lasts.
    static let longestPause: Duration = .seconds(2)
    /// Posts under way at once.
    let concurrency: Int

    /// A dispatcher for the server's environment.
    public init(
        store: any CofferStore, catalog: Catalog, environment: AppStoreEnvironment, settings: WebhookSettings?,
        forwardURLs: [String] = [], sender: any WebhookSender, metrics: ServerMetrics, logger: Logger,
        now: @escaping @Sendable () -> Date, clock: any TimerClock, holder: String = UUID().uuidString,
        interval: Double = 1, batch: Int = 256, concurrency: Int = 32
    ) {
        self.concurrency = max(1, concurrency)
        self.forwardURLs = forwardURLs
        self.store = store
        self.catalog = catalog
        self.environment = environment
        self.settings = settings
        self.sender = sender
        self.metrics = metrics
        self.logger = logger
        self.now = now
        self.clock = clock
        self.holder = holder
        self.interval = interval
        self.batch = batch
    }

    /// What one round did.
    public struct Round: Sendable, Equatable {
        /// Outbox records made events.
        public var routed = 0
        /// Deliveries answered 2xx.
        public var delivered = 0
        /// Deliveries that failed (to be retried, or dead).
        public var failed = 0
        /// Deliveries leased (and posted) this round.
        public var leased = 0

        /// This round's counts with `other`'s answers added.
        func adding(_ other: Round) -> Round {
            var sum = self
            sum.delivered += other.delivered
            sum.failed += other.failed
            return sum
        }
    }

    /// Runs a round every `interval` seconds until the server shuts down; a round that fails is logged and the next
    /// one runs. (The server records the settings' endpoints with ``publishSettings()`` before it listens.) Each
    /// round's answers are recorded in the next round's one write transaction, and on shutdown on their own.
    public func run() async throws {
        var rounds = 0
        var unrecorded: [WebhookAttempt] = []
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            do {
                let (started, served) = (clock.elapsed, metrics.requestsServed)
                let (round, answers) = try await round(recording: unrecorded)
                unrecorded = answers
                let took = clock.elapsed - started
                let seconds = Double(took.components.seconds) + Double(took.components.attoseconds) / 1e18
                // Requests answered during the round, per second (probes and scrapes are not counted).
                let busy = seconds > 0 && Double(metrics.requestsServed - served) / seconds > Self.busyRate
                if rounds % 3_600 == 0 {
                    _ = try await store.pruneWebhookEvents(
                        environment: environment, before: now().addingTimeInterval(-Self.retention))
                }
                if rounds % 5 == 0 { try await observeBacklog() }
                rounds += 1
                // A full round means more is waiting: the next one runs at once, unless the server is busy
                // answering requests: then the rounds give way to them, taking at most about a tenth of the time
                // (the events wait in the outbox, and the backlog drains once the peak has passed).
                if round.routed >= Self.routedPerRound || round.leased >= batch {
                    if busy {
                        let pause = min(took * 9, Self.longestPause)
                        try await cancelWhenGracefulShutdown { try await self.clock.sleep(for: pause) }
                    }
                    continue
                }
                // Nothing new: the answers are recorded now rather than held for a round that may be a second away.
                if !unrecorded.isEmpty {
                    _ = try await record(unrecorded)
                    unrecorded = []
                }
            } catch {
                rounds += 1
                logger.error("webhooks: a round failed; trying again: \(error)")
            }
            try? await clock.sleep(for: .milliseconds(Int64(interval * 1_000)))
        }
        // What was posted is recorded before the instance ends (else it would be sent again after its lease).
        if !unrecorded.isEmpty {
            do { _ = try await record(unrecorded) } catch {
                logger.error("webhooks: the last answers were not recorded; they will be sent again: \(error)")
            }
        }
    }

    /// Records the settings' endpoint (its secret stays in the settings) and `apple.forward.url`'s in the store. One
    /// the settings no longer name stays until `coffer webhooks remove` (an instance started without the setting,
    /// in a rolling deploy say, removes nothing for the others).
    public func publishSettings() async throws {
        if let settings {
            try await store.saveWebhookEndpoint(
                WebhookEndpoint(
                    id: WebhookEndpoint.settingsId, environment: environment, url: settings.url, secret: "",
                    createdAt: now()))
        } else if let kept = try await store.webhookEndpoints(environment: environment).first(where: {
            $0.id == WebhookEndpoint.settingsId
        }) {
            let message =
                "webhooks: the database has the settings' endpoint (\(kept.url)), but this instance's settings name no "
                + "webhook.url: this instance does not post to it. If no instance should, remove it with "
                + "`coffer webhooks remove settings`."
            logger.warning("\(message)")
        }
        for (index, url) in forwardURLs.enumerated() {
            try await store.saveWebhookEndpoint(
                WebhookEndpoint(
                    id: WebhookEndpoint.forwardId(index + 1), environment: environment, url: url, secret: "",
                    events: [WebhookEvents.appleNotification], createdAt: now()))
        }
    }

    /// One round: new records made events, then the due deliveries posted and their answers recorded.
    public func runOnce() async throws -> Round {
        let (round, answers) = try await round(recording: [])
        return round.adding(try await record(answers))
    }

    /// A round whose write transaction first records `earlier` answers, then makes new records events and leases the
    /// due deliveries; the leased ones are posted, and their answers returned to be recorded by the next round.
    func round(recording earlier: [WebhookAttempt]) async throws -> (Round, [WebhookAttempt]) {
        let endpoints = try await store.webhookEndpoints(environment: environment)
        // No endpoint, nothing written to the outbox and nothing owed: no write transaction either.
        guard !endpoints.isEmpty || !earlier.isEmpty else { return (Round(), []) }
        let catalog = catalog
        let at = now()
        // Only what this instance can sign for: the settings' endpoint needs this instance's settings to name it.
        let signable = endpoints.filter { $0.isForward || secrets(of: $0) != nil }.map(\.id)
        let result = try await store.webhookRound(
            WebhookRoundRequest(
                environment: environment, holder: holder, finishing: earlier,
                routeLimit: endpoints.isEmpty ? 0 : Self.routedPerRound,
                leaseLimit: batch, endpoints: signable, at: at, until: at.addingTimeInterval(Self.lease))
        ) { record in
            WebhookEvents.event(for: record, catalog: catalog, endpoints: endpoints)
        }
        var round = tally(earlier, finished: result.finished)
        round.routed = result.routed
        round.leased = result.leased.count
        guard !result.leased.isEmpty else { return (round, []) }
        let byId = Dictionary(endpoints.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        // At most `concurrency` posts at once (the HTTP client's connections).
        let concurrency = self.concurrency
        let attempts = await withTaskGroup(of: WebhookAttempt.self) { group in
            var pending = result.leased[...]
            for delivery in pending.prefix(concurrency) {
                group.addTask { await attempt(delivery, endpoint: byId[delivery.endpoint]) }
            }
            pending = pending.dropFirst(concurrency)
            var attempts: [WebhookAttempt] = []
            for await done in group {
                attempts.append(done)
                if let delivery = pending.popFirst() {
                    group.addTask { await attempt(delivery, endpoint: byId[delivery.endpoint]) }
                }
            }
            return attempts
        }
        // Recorded in key order: every instance takes the rows' locks in one order.
        return (round, attempts.sorted { ($0.endpoint, $0.seq) < ($1.endpoint, $1.seq) })
    }

    /// Records answers in one transaction and counts them.
    func record(_ attempts: [WebhookAttempt]) async throws -> Round {
        guard !attempts.isEmpty else { return Round() }
        let finished = try await store.finishWebhookAttempts(attempts, environment: environment, holder: holder)
        return tally(attempts, finished: finished)
    }

    /// Counts recorded answers (those whose lease was still this instance's) in the metrics and a round.
    func tally(_ attempts: [WebhookAttempt], finished: [Bool]) -> Round {
        var round = Round()
        for (attempt, kept) in zip(attempts, finished) {
            guard kept else { continue }
            switch attempt.outcome {
            case .delivered:
                round.delivered += 1
                metrics.webhookAttempt("delivered")
            case .failed(let retryAt):
                round.failed += 1
                metrics.webhookAttempt(retryAt == nil ? "dead" : "failed")
                logger.warning(
                    "webhook delivery failed",
                    metadata: [
                        "endpoint": "\(attempt.endpoint)", "seq": "\(attempt.seq)",
                        "error": "\(attempt.error ?? "")", "retry": "\(retryAt.map { "\($0)" } ?? "none: dead letter")",
                    ])
            }
        }
        return round
    }

    /// Posts one delivery, signed with the endpoint's secrets, and says how it ended.
    func attempt(_ delivery: WebhookDelivery, endpoint: WebhookEndpoint?) async -> WebhookAttempt {
        func failed(_ status: Int?, _ error: String, retry: Bool = true) -> WebhookAttempt {
            let at = now()
            let retryAt =
                retry
                ? WebhookBackoff.retryAt(
                    attempts: delivery.attempts + 1, firstAttemptAt: delivery.firstAttemptAt ?? at, now: at) : nil
            return WebhookAttempt(
                endpoint: delivery.endpoint, seq: delivery.seq, outcome: .failed(retryAt: retryAt), status: status,
                error: error, at: at)
        }
        let headers: [(String, String)]
        if let endpoint, endpoint.isForward {
            // Apple's notification as Apple posted it: its own signature (the JWS) is what the backend checks.
            headers = [("content-type", "application/json"), ("user-agent", "Coffer-Forwarder/1")]
        } else {
            guard let endpoint, let secrets = secrets(of: endpoint) else {
                return failed(nil, "the endpoint \(delivery.endpoint) is gone or has no secret here", retry: false)
            }
            let signature = WebhookSignature.value(body: delivery.body, secrets: secrets, at: now())
            headers = [
                ("content-type", "application/json"), ("user-agent", "Coffer-Webhooks/1"),
                (WebhookSignature.header, signature), ("Coffer-Event-Id", delivery.eventId.uuidString.lowercased()),
                ("Coffer-Event-Type", delivery.type),
            ]
        }
        guard let endpoint else { return failed(nil, "the endpoint \(delivery.endpoint) is gone", retry: false) }
        do {
            let status = try await sender.post(
                url: endpoint.url, headers: headers, body: delivery.body, timeout: Self.timeout)
            guard (200..<300).contains(status) else { return failed(status, "answered \(status)") }
            return WebhookAttempt(
                endpoint: delivery.endpoint, seq: delivery.seq, outcome: .delivered, status: status, error: nil,
                at: now())
        } catch {
            return failed(nil, "no answer: \(error)")
        }
    }

    /// The secrets that sign for `endpoint`: the settings' for the settings' endpoint.
    func secrets(of endpoint: WebhookEndpoint) -> [String]? {
        let (secret, previous) =
            endpoint.id == WebhookEndpoint.settingsId
            ? (settings?.secret ?? "", settings?.previousSecret) : (endpoint.secret, endpoint.previousSecret)
        guard !secret.isEmpty else { return nil }
        return [secret] + [previous].compactMap { $0 }.filter { !$0.isEmpty }
    }

    /// Sets the backlog's gauges: pending, dead letters, and the lag (the age of the oldest event not delivered).
    public func observeBacklog() async throws {
        let backlog = try await store.webhookBacklog(environment: environment)
        metrics.webhookBacklog(backlog, now: now())
    }
}
