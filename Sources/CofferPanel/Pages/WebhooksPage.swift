import CofferAdmin
import CofferCore
import CofferStore
import Foundation

/// An endpoint as the panel lists it.
struct WebhookEndpointRow: Sendable {
    var id, url, events, secretHint, added: String
    var rotating, fromSettings: Bool

    init(_ endpoint: WebhookEndpointView, time: (Date) -> String) {
        id = endpoint.id
        url = endpoint.url
        events = endpoint.events.isEmpty ? "every event" : endpoint.events.joined(separator: ", ")
        secretHint = endpoint.secretHint
        added = time(endpoint.createdAt)
        rotating = endpoint.rotating
        fromSettings = endpoint.fromSettings
    }
}

/// `/admin/webhooks`: the endpoints, what waits, the dead letters (with "Send again") and the latest deliveries.
struct WebhooksPage: PanelPage {
    static let template = "webhooks"
    var section: PanelSection? { .webhooks }

    var endpoints: [WebhookEndpointRow]
    var dead: [Row]
    var recent: [Row]
    var pending: String
    var deadCount: String
    var lag: String
    var isOwner: Bool

    struct Row: Sendable {
        var endpoint, seq, type, supportId, state, attempts, answer, at, next: String
    }

    init(
        endpoints: [WebhookEndpointView], dead: [WebhookDeliveryView], recent: [WebhookDeliveryView],
        backlog: WebhookBacklog, now: Date, isOwner: Bool, time: (Date) -> String
    ) {
        self.endpoints = endpoints.map { WebhookEndpointRow($0, time: time) }
        func row(_ item: WebhookDeliveryView) -> Row {
            Row(
                endpoint: item.endpoint, seq: String(item.seq), type: item.type, supportId: item.supportId,
                state: item.state, attempts: PanelText.count(item.attempts),
                answer: item.lastStatus.map { "answered \($0)" } ?? item.lastError ?? "not tried yet",
                at: time(item.createdAt), next: item.nextAttemptAt.map(time) ?? "")
        }
        self.dead = dead.map(row)
        self.recent = recent.map(row)
        pending = PanelText.count(backlog.pending + backlog.unrouted)
        deadCount = PanelText.count(backlog.dead)
        lag = backlog.oldest.map { PanelText.count(Int(max(0, now.timeIntervalSince($0)))) + " s" } ?? "none"
        self.isOwner = isOwner
    }
}

/// A new endpoint's secret, or a rotation's, shown this once.
struct WebhookSecretPage: PanelPage {
    static let template = "webhook-secret"
    var section: PanelSection? { .settings }
    var endpoint: WebhookEndpointRow
    var secret: String
    var rotated: Bool
}
