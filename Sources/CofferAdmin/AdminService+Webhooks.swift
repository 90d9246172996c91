import CofferCore
import CofferStore
import Crypto
import Foundation

/// An endpoint as owners see it: its secret never shown again after it was made (only its first characters).
public struct WebhookEndpointView: Sendable, Hashable, Codable {
    /// The endpoint's id.
    public var id: String
    /// Where events go.
    public var url: String
    /// The events it hears; empty for every one.
    public var events: [String]
    /// The secret's fingerprint (`sha256:` and 8 hex digits of its SHA-256), never the secret itself; for the
    /// settings' endpoints, where the secret is.
    public var secretHint: String
    /// Whether a rotation runs (two secrets sign).
    public var rotating: Bool
    /// When it was added.
    public var createdAt: Date
    /// Whether the settings name it (`webhook.url`): changed there, not here.
    public var fromSettings: Bool
}

/// A delivery as support sees it: the event, where it stands, and its last answer.
public struct WebhookDeliveryView: Sendable, Hashable, Codable {
    /// The endpoint.
    public var endpoint: String
    /// The event's outbox sequence number (with the endpoint, what "send again" names).
    public var seq: Int64
    /// The event's id.
    public var eventId: String
    /// Its type.
    public var type: String
    /// The customer.
    public var supportId: String
    /// `pending`, `delivered` or `dead`.
    public var state: String
    /// Attempts made.
    public var attempts: Int
    /// The next attempt, while pending.
    public var nextAttemptAt: Date?
    /// The last answer's status.
    public var lastStatus: Int?
    /// What went wrong last.
    public var lastError: String?
    /// When it was delivered.
    public var deliveredAt: Date?
    /// When the event was written.
    public var createdAt: Date

    init(_ delivery: WebhookDelivery) {
        endpoint = delivery.endpoint
        seq = delivery.seq
        eventId = delivery.eventId.uuidString.lowercased()
        type = delivery.type
        supportId = delivery.supportId
        state = delivery.state.rawValue
        attempts = delivery.attempts
        nextAttemptAt = delivery.state == .pending ? delivery.nextAttemptAt : nil
        lastStatus = delivery.lastStatus
        lastError = delivery.lastError
        deliveredAt = delivery.deliveredAt
        createdAt = delivery.createdAt
    }
}

/// A new endpoint, or a rotated one: its view and its secret, shown this once.
public struct WebhookSecretView: Sendable, Hashable, Codable {
    /// The endpoint.
    public var endpoint: WebhookEndpointView
    /// The secret that signs from now on.
    public var secret: String
}

/// Owners' endpoints for signed webhooks, and support's view of the deliveries: each change audited.
extension AdminService {
    /// The environment's endpoints.
    public func webhookEndpoints(environment: AppStoreEnvironment) async throws -> [WebhookEndpointView] {
        try await store.webhookEndpoints(environment: environment).map(Self.view)
    }

    /// Adds an endpoint for `events` (empty: every one), signed with `secret` or a new one; audited (`webhook.add`).
    ///
    /// - Throws: ``AdminError/invalid(_:)`` for a URL, secret or event that cannot be taken.
    public func addWebhookEndpoint(
        environment: AppStoreEnvironment, url: String, events: String, secret: String?, actor: String
    ) async throws -> WebhookSecretView {
        if let problem = WebhookRules.problem(url: url) { throw AdminError.invalid("\(url) is \(problem)") }
        let types = try Self.events(events)
        var generator = SystemRandomNumberGenerator()
        let secret = secret ?? WebhookRules.makeSecret(using: &generator)
        if let problem = WebhookRules.problem(secret: secret) { throw AdminError.invalid(problem) }
        let endpoint = WebhookEndpoint(
            id: WebhookRules.makeId(using: &generator), environment: environment, url: url, secret: secret,
            events: types, createdAt: now())
        try await store.saveWebhookEndpoint(endpoint)
        let view = Self.view(endpoint)
        try await audit(environment, actor: actor, action: "webhook.add", subject: endpoint.id, after: view)
        return WebhookSecretView(endpoint: view, secret: secret)
    }

    /// Starts a rotation: a new secret signs beside the one before (two `v1=` values) until
    /// ``finishWebhookRotation(environment:id:actor:)``; audited (`webhook.rotate`).
    public func rotateWebhookSecret(environment: AppStoreEnvironment, id: String, actor: String) async throws
        -> WebhookSecretView
    {
        var endpoint = try await stored(id, environment: environment)
        guard endpoint.previousSecret == nil else {
            throw AdminError.invalid(
                "a rotation of \(id) runs already: end it first (the secret before would stop signing)")
        }
        var generator = SystemRandomNumberGenerator()
        (endpoint.previousSecret, endpoint.secret) = (endpoint.secret, WebhookRules.makeSecret(using: &generator))
        try await store.saveWebhookEndpoint(endpoint)
        let view = Self.view(endpoint)
        try await audit(environment, actor: actor, action: "webhook.rotate", subject: id, after: view)
        return WebhookSecretView(endpoint: view, secret: endpoint.secret)
    }

    /// Ends a rotation: only the new secret signs; audited (`webhook.rotate.done`).
    public func finishWebhookRotation(environment: AppStoreEnvironment, id: String, actor: String) async throws
        -> WebhookEndpointView
    {
        var endpoint = try await stored(id, environment: environment)
        endpoint.previousSecret = nil
        try await store.saveWebhookEndpoint(endpoint)
        let view = Self.view(endpoint)
        try await audit(environment, actor: actor, action: "webhook.rotate.done", subject: id, after: view)
        return view
    }

    /// Removes an endpoint and what it had not received; audited (`webhook.remove`). One the settings name
    /// (`settings`, `forward-N`) comes back at the next start of an instance whose settings still name it.
    ///
    /// - Throws: ``AdminError/notFound(_:)``.
    public func removeWebhookEndpoint(environment: AppStoreEnvironment, id: String, actor: String) async throws {
        let endpoint = try await endpoint(id, environment: environment)
        guard try await store.removeWebhookEndpoint(id: id, environment: environment) else {
            throw AdminError.notFound("webhook endpoint \(id)")
        }
        try await audit(environment, actor: actor, action: "webhook.remove", subject: id, before: Self.view(endpoint))
    }

    /// Sends an endpoint every kept event written since `since` again, as the same events; audited
    /// (`webhook.replay`).
    ///
    /// - Returns: How many.
    public func replayWebhookEvents(environment: AppStoreEnvironment, id: String, since: Date, actor: String)
        async throws -> Int
    {
        _ = try await endpoint(id, environment: environment)
        let count = try await store.replayWebhookEvents(endpoint: id, environment: environment, since: since, at: now())
        try await audit(
            environment, actor: actor, action: "webhook.replay", subject: id,
            after: ["since": since.formatted(.iso8601), "events": "\(count)"])
        return count
    }

    /// The latest deliveries (in one state, or all), newest first.
    public func webhookDeliveries(environment: AppStoreEnvironment, state: WebhookDeliveryState?, limit: Int = 200)
        async throws -> [WebhookDeliveryView]
    {
        try await store.webhookDeliveries(environment: environment, state: state, limit: limit).map(
            WebhookDeliveryView.init)
    }

    /// Sends one delivery again (a dead letter, say), with 3 days of retries again; audited (`webhook.resend`).
    public func resendWebhookDelivery(environment: AppStoreEnvironment, endpoint: String, seq: Int64, actor: String)
        async throws
    {
        do {
            try await store.resendWebhookDelivery(endpoint: endpoint, seq: seq, environment: environment, at: now())
        } catch StoreError.notFound {
            throw AdminError.notFound("delivery \(seq) to \(endpoint)")
        }
        try await audit(
            environment, actor: actor, action: "webhook.resend", subject: endpoint, after: ["seq": "\(seq)"])
    }

    /// The webhooks' backlog.
    public func webhookBacklog(environment: AppStoreEnvironment) async throws -> WebhookBacklog {
        try await store.webhookBacklog(environment: environment)
    }

    /// The event types in a comma-separated list, as an admin error.
    static func events(_ list: String) throws -> [String] {
        do {
            return try WebhookRules.events(list)
        } catch {
            throw AdminError.invalid(error.description)
        }
    }

    private func endpoint(_ id: String, environment: AppStoreEnvironment) async throws -> WebhookEndpoint {
        guard let endpoint = try await store.webhookEndpoints(environment: environment).first(where: { $0.id == id })
        else { throw AdminError.notFound("webhook endpoint \(id)") }
        return endpoint
    }

    /// An endpoint added here (not the settings' one, which the settings change).
    private func stored(_ id: String, environment: AppStoreEnvironment) async throws -> WebhookEndpoint {
        let endpoint = try await endpoint(id, environment: environment)
        guard !endpoint.isFromSettings else {
            throw AdminError.invalid(
                "\(id) is changed in the settings (webhook.url and webhook.secret, or apple.forward.url)")
        }
        return endpoint
    }

    static func view(_ endpoint: WebhookEndpoint) -> WebhookEndpointView {
        let fromSettings = endpoint.isFromSettings
        let hint =
            endpoint.isForward
            ? "none: Apple's notifications as they came"
            : fromSettings
                ? "in the settings" : fingerprint(endpoint.secret)
        return WebhookEndpointView(
            id: endpoint.id, url: endpoint.url, events: endpoint.events, secretHint: hint,
            rotating: endpoint.previousSecret != nil, createdAt: endpoint.createdAt, fromSettings: fromSettings)
    }
}

/// A secret's fingerprint, to tell secrets apart without showing any of one: `sha256:` and the first 8 hex digits of
/// its SHA-256.
func fingerprint(_ secret: String) -> String {
    "sha256:" + SHA256.hash(data: Data(secret.utf8)).prefix(4).map { String(format: "%02x", $0) }.joined()
}
