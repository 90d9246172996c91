import CofferService

/// How the admin panel is offered.
public struct PanelConfiguration: Sendable {
    /// Whether the panel answers requests from other machines; off, it answers loopback addresses only.
    public var allowRemote = false
    /// Whether session cookies are `Secure` with the `__Host-` prefix (set this behind TLS).
    public var secureCookies = false
    /// Hours a session lasts.
    public var sessionHours = 8
    /// The public host name the panel is reached by when ``allowRemote`` is on (`support.example.com`); other
    /// Host names than this and loopback names are refused, so DNS rebinding cannot reach the panel.
    public var publicHost: String?
    /// Requests to the sign-in page per client address.
    public var signInLimit = RateLimit(burst: 30, perSecond: 0.2)

    /// The defaults: loopback only, plain cookies, 8-hour sessions.
    public init() {}
}
