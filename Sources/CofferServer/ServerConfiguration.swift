import CofferCore
import CofferHTTP
import CofferPanel
import CofferService

/// How a Coffer server runs: where it listens and what its HTTP edge allows, with what its use cases run with
/// (``service``, whose settings read as this type's own: `configuration.bundleId`).
@dynamicMemberLookup
public struct ServerConfiguration: Sendable {
    /// What the use cases run with: the app, the environment, the wallet, the ledger's batches.
    public var service: ServiceConfiguration
    /// The address to listen on.
    public var host = "127.0.0.1"
    /// The port to listen on.
    public var port = 8080
    /// The largest request body accepted, in bytes (a signed transaction is about 4 KB; a notification
    /// with its nested data about 12 KB).
    public var maximumBodySize = 64 * 1024
    /// Seconds an idle keep-alive connection stays open.
    public var idleTimeout = 60
    /// Seconds a request may take before it is answered 503 `timeout` (the event stream is exempt).
    public var requestTimeout = 30
    /// Seconds between keep-alive comments on an open event stream.
    public var eventKeepAlive = 15
    /// How the admin panel is offered.
    public var panel = PanelConfiguration()
    /// Reverse proxies whose `X-Forwarded-For` names the real client (for rate limits, the sign-in throttle,
    /// the panel's "this machine only" and the audit log); nobody else's forwarded headers are believed.
    public var trustedProxies = TrustedProxies()
    /// New users per client address (`POST /v1/users`): a burst real customers behind one busy NAT never
    /// meet, then one a second.
    public var userCreationLimit = RateLimit(burst: 60, perSecond: 1)
    /// Notifications that fail verification per client address; Apple's, which verify, are never counted.
    public var notificationFailureLimit = RateLimit(burst: 60, perSecond: 1)
    /// Offer signatures per customer (`/v1/me/offers/...`): two ECDSA signatures each, more than a shop screen
    /// ever asks for, then one every five seconds.
    public var offerSigningLimit = RateLimit(burst: 20, perSecond: 0.2)
    /// Event streams one user may hold open.
    public var eventStreamsPerUser = 4
    /// Event streams one client address (IPv6 by /64) may hold open, whatever tokens it presents.
    public var eventStreamsPerAddress = 100
    /// Event streams open at once on this server.
    public var eventStreamsTotal = 1_000
    /// The most connections open at once; further ones wait in the listen backlog.
    public var maximumConnections = 4_096
    /// Seconds a client has to send a request's head and body once it starts one (slow clients are cut off).
    public var readTimeout = 30
    /// When set, `/metrics` answers only requests carrying `Authorization: Bearer <token>`.
    public var metricsToken: String?

    /// Creates a configuration for an app.
    public init(bundleId: String) { service = ServiceConfiguration(bundleId: bundleId) }

    /// A setting of the use cases (``service``), read and written as the server's own.
    public subscript<Value>(dynamicMember keyPath: WritableKeyPath<ServiceConfiguration, Value>) -> Value {
        get { service[keyPath: keyPath] }
        set { service[keyPath: keyPath] = newValue }
    }
}
