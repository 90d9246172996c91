import CofferAdmin
import CofferCore
import CofferHTTP
import CofferStore
import Foundation
import Hummingbird

/// `/admin/webhooks`: the deliveries of Coffer's signed events, the dead letters with "Send again"; and the owners'
/// endpoints on the Settings page (`/admin/settings/webhooks...`).
struct WebhooksController: PanelController {
    let panel: AdminPanel

    var routes: RouteCollection<CofferRequestContext> {
        let routes = RouteCollection(context: CofferRequestContext.self)
        routes.get("webhooks") { request, context in try await webhooks(request, context) }
        routes.post("webhooks/resend") { request, context in try await resend(request, context) }
        routes.post("settings/webhooks") { request, context in try await add(request, context) }
        routes.post("settings/webhooks/remove") { request, context in try await remove(request, context) }
        routes.post("settings/webhooks/rotate") { request, context in try await rotate(request, context) }
        return routes
    }

    /// `GET /admin/webhooks`; also the page a refused "Send again" comes back to.
    func webhooks(_ request: Request, _ context: CofferRequestContext, failure: PanelFailure? = nil) async throws
        -> Response
    {
        let session = try context.requireSession()
        let environment = panel.scope(session).environment
        let service = panel.service
        let page = WebhooksPage(
            endpoints: try await service.webhookEndpoints(environment: environment),
            dead: try await service.webhookDeliveries(environment: environment, state: .dead, limit: 100),
            recent: try await service.webhookDeliveries(environment: environment, state: nil, limit: 50),
            backlog: try await service.webhookBacklog(environment: environment), now: panel.now,
            isOwner: context.panelAdmin?.role == .owner, time: panel.times(context))
        return panel.render(
            page, context, notice: PanelNotice(query: request.uri.queryParameters.get("notice")), failure: failure)
    }

    /// `POST /admin/webhooks/resend`: one delivery (a dead letter, say) sent again.
    func resend(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        let (session, form) = try await panel.checkedForm(request, context)
        return try await panel.attempt {
            guard let seq = Int64(form["seq"] ?? "") else {
                throw PanelFailure("Which delivery? Its number is missing.")
            }
            try await panel.service.resendWebhookDelivery(
                environment: panel.scope(session).environment, endpoint: form["endpoint"] ?? "", seq: seq,
                actor: context.adminActor)
            return AdminPanel.redirect("/admin/webhooks?notice=webhook-resent")
        } otherwise: { failure in
            try await webhooks(request, context, failure: failure)
        }
    }

    /// `POST /admin/settings/webhooks` (owners): a new endpoint, its secret shown once.
    func add(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        let (session, form) = try await panel.checkedForm(request, context)
        _ = try context.requireOwner()
        return try await panel.attempt {
            let events = WebhookEventType.allCases.map(\.rawValue).filter { form["event-\($0)"] == "on" }
            let made = try await panel.service.addWebhookEndpoint(
                environment: panel.scope(session).environment,
                url: (form["url"] ?? "").trimmingCharacters(in: .whitespaces),
                events: events.joined(separator: ","), secret: nil, actor: context.adminActor)
            return panel.render(
                WebhookSecretPage(
                    endpoint: WebhookEndpointRow(made.endpoint, time: panel.times(context)), secret: made.secret,
                    rotated: false), context)
        } otherwise: { failure in
            try await SettingsController(panel: panel).settings(request, context, failure: failure)
        }
    }

    /// `POST /admin/settings/webhooks/remove` (owners).
    func remove(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        let (session, form) = try await panel.checkedForm(request, context)
        _ = try context.requireOwner()
        return try await panel.attempt {
            try await panel.service.removeWebhookEndpoint(
                environment: panel.scope(session).environment, id: form["id"] ?? "", actor: context.adminActor)
            return AdminPanel.redirect("/admin/settings?notice=webhook-removed")
        } otherwise: { failure in
            try await SettingsController(panel: panel).settings(request, context, failure: failure)
        }
    }

    /// `POST /admin/settings/webhooks/rotate` (owners): a new secret beside the old one, or (`done`) the old one ended.
    func rotate(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        let (session, form) = try await panel.checkedForm(request, context)
        _ = try context.requireOwner()
        let (environment, id) = (panel.scope(session).environment, form["id"] ?? "")
        return try await panel.attempt {
            if form["done"] == "1" {
                _ = try await panel.service.finishWebhookRotation(
                    environment: environment, id: id, actor: context.adminActor)
                return AdminPanel.redirect("/admin/settings?notice=webhook-rotated")
            }
            let made = try await panel.service.rotateWebhookSecret(
                environment: environment, id: id, actor: context.adminActor)
            return panel.render(
                WebhookSecretPage(
                    endpoint: WebhookEndpointRow(made.endpoint, time: panel.times(context)), secret: made.secret,
                    rotated: true), context)
        } otherwise: { failure in
            try await SettingsController(panel: panel).settings(request, context, failure: failure)
        }
    }
}
