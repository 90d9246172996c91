import CofferStore
import Foundation
import Prometheus
import Synchronization

/// The server's Prometheus metrics, in a registry the composition root owns (no global metrics system),
/// served at `GET /metrics`.
public final class ServerMetrics: Sendable {
    /// The registry; its text exposition is what `/metrics` answers.
    public let registry: PrometheusCollectorRegistry

    /// The labels of a request's metrics.
    private struct RequestLabels: Hashable {
        var route: String
        var method: String
        var status: Int
    }

    /// A request's counter and histogram by their labels, found again without the registry's lookup (which
    /// builds the labels and takes the registry's lock on every call).
    private let requestMetrics = Mutex<[RequestLabels: (counter: Counter, histogram: DurationHistogram)]>([:])

    /// Apple's notifications refused as not verifying, on this instance since it started (the dashboard's
    /// health).
    public struct RefusalTally: Sendable, Equatable {
        /// When counting began: the instance's start.
        public var since: Date
        /// How many.
        public var count = 0
        /// When the last one came.
        public var lastAt: Date?
        /// Its verification status (`INVALID_CHAIN`, `INVALID_ENVIRONMENT`, ...).
        public var lastStatus: String?
    }

    private let refusals: Mutex<RefusalTally>

    /// The notifications refused so far.
    public var notificationRefusals: RefusalTally { refusals.withLock { $0 } }

    /// Creates the metrics in a new registry.
    public init(started: Date = Date()) {
        registry = PrometheusCollectorRegistry()
        refusals = Mutex(RefusalTally(since: started))
    }

    /// Counts a notification refused as not verifying.
    func notificationRefused(status: String, at date: Date) {
        refusals.withLock { tally in
            tally.count += 1
            tally.lastAt = date
            tally.lastStatus = status
        }
    }

    private static func name(_ metric: String, _ unit: String, _ help: String) -> MetricNameDescriptor {
        MetricNameDescriptor(namespace: "coffer", metricName: metric, unitName: unit, helpText: help)
    }

    private let served = Atomic<Int>(0)
    /// Routes that say nothing of the load: health probes and metric scrapes.
    static let probes: Set<String> = ["/healthz", "/readyz", "/livez", "/metrics"]

    /// HTTP requests answered since the server started: how busy it is, for the work it does beside them (the
    /// webhooks' rounds give way to a busy server).
    public var requestsServed: Int { served.load(ordering: .relaxed) }

    /// Counts an HTTP request by route, method and status, and records its duration.
    public func request(route: String, method: String, status: Int, duration: Duration) {
        if !Self.probes.contains(route) { served.add(1, ordering: .relaxed) }
        let key = RequestLabels(route: route, method: method, status: status)
        let metrics =
            requestMetrics.withLock { $0[key] }
            ?? {
                let made = (
                    counter: registry.makeCounter(
                        descriptor: Self.name("http_requests", "total", "HTTP requests by route, method and status."),
                        labels: [("route", route), ("method", method), ("status", String(status))]),
                    histogram: registry.makeDurationHistogram(
                        descriptor: Self.name("http_request_duration", "seconds", "HTTP request durations by route."),
                        labels: [("route", route)],
                        buckets: [
                            .milliseconds(1), .milliseconds(5), .milliseconds(10), .milliseconds(25),
                            .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1),
                            .seconds(5),
                        ])
                )
                // Routes are the router's, methods and statuses few: the map stays small. Bounded all the same.
                requestMetrics.withLock { if $0.count < 4_096 { $0[key] = made } }
                return made
            }()
        metrics.counter.increment()
        metrics.histogram.record(duration)
    }

    /// Counts a purchase delivered into the ledger, by where it came from (`app`, `notification`,
    /// `recovery`).
    func delivered(source: String) {
        registry.makeCounter(
            descriptor: Self.name("deliveries", "total", "Purchases delivered into the ledger, by source."),
            labels: [("source", source)]
        ).increment()
    }

    /// Counts a revocation (refund or revoke) applied to the ledger.
    func revoked() {
        registry.makeCounter(
            descriptor: Self.name("revocations", "total", "Refunds and revocations applied to the ledger."),
            labels: []
        ).increment()
    }

    /// Counts signed data that failed verification, by Apple's status name.
    func verificationFailed(status: String) {
        registry.makeCounter(
            descriptor: Self.name("verification_failures", "total", "Signed data refused, by verification status."),
            labels: [("status", status)]
        ).increment()
    }

    /// Counts a notification received and records how long after Apple signed it it arrived.
    func notificationReceived(type: String, lag: Double) {
        registry.makeCounter(
            descriptor: Self.name("notifications", "total", "App Store Server Notifications received, by type."),
            labels: [("type", type)]
        ).increment()
        registry.makeValueHistogram(
            descriptor: Self.name(
                "notification_lag", "seconds", "Seconds between Apple signing a notification and Coffer receiving it."),
            labels: [],
            buckets: [1, 5, 30, 60, 300, 3_600, 86_400, 604_800]
        ).record(max(0, lag))
    }

    /// Counts a webhook attempt by how it ended (`delivered`, `failed`: retried, `dead`: a dead letter).
    func webhookAttempt(_ outcome: String) {
        registry.makeCounter(
            descriptor: Self.name("webhook_deliveries", "total", "Webhook attempts, by outcome."),
            labels: [("outcome", outcome)]
        ).increment()
    }

    /// Sets the webhooks' backlog: deliveries pending, dead letters, and the lag (seconds since the oldest event
    /// not delivered yet was written; 0 when none waits).
    func webhookBacklog(_ backlog: WebhookBacklog, now: Date) {
        registry.makeGauge(descriptor: Self.name("webhook_pending", "", "Webhook deliveries not made yet.")).set(
            Double(backlog.pending + backlog.unrouted))
        registry.makeGauge(descriptor: Self.name("webhook_dead_letters", "", "Webhook dead letters.")).set(
            Double(backlog.dead))
        registry.makeGauge(
            descriptor: Self.name(
                "webhook_lag", "seconds", "Seconds since the oldest webhook event not delivered yet was written.")
        ).set(max(0, backlog.oldest.map { now.timeIntervalSince($0) } ?? 0))
    }

    /// The text exposition format.
    public func exposition() -> String { registry.emitToString() }
}
