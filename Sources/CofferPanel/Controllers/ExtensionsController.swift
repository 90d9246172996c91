import CofferAPI
import CofferAdmin
import CofferHTTP
import Foundation
import Hummingbird

/// `/admin/extensions`: every active subscriber of a product extended through Apple (owners), and the latest mass
/// extensions with Apple's progress.
struct ExtensionsController: PanelController {
    let panel: AdminPanel

    var routes: RouteCollection<CofferRequestContext> {
        let routes = RouteCollection(context: CofferRequestContext.self)
        routes.get("extensions") { request, context in try await extensions(request, context) }
        routes.post("extensions") { request, context in try await extendAll(request, context) }
        return routes
    }

    /// `GET /admin/extensions`; also the page a refused extension comes back to.
    func extensions(_ request: Request, _ context: CofferRequestContext, failure: PanelFailure? = nil) async throws
        -> Response
    {
        let session = try context.requireSession()
        let scope = panel.scope(session)
        // A Production server's Sandbox view reaches Sandbox-marked customers only: no mass extension from there.
        let page = ExtensionsPage(
            extensions: try await panel.service.massExtensions(environment: scope.environment),
            catalog: panel.service.catalog,
            canExtend: context.panelAdmin?.role == .owner && !scope.sandboxMarkedOnly, time: panel.times(context))
        return panel.render(
            page, context, notice: PanelNotice(query: request.uri.queryParameters.get("notice")), failure: failure)
    }

    /// `POST /admin/extensions` (owners): Apple's mass extension for the product chosen.
    func extendAll(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        let (session, form) = try await panel.checkedForm(request, context)
        _ = try context.requireOwner()
        let scope = panel.scope(session)
        let environment = scope.environment
        return try await panel.attempt {
            guard !scope.sandboxMarkedOnly else {
                throw PanelFailure(
                    "This view holds Sandbox-marked customers only: switch to Production to extend its subscribers.",
                    status: .forbidden)
            }
            guard let days = Int(form["days"] ?? ""), let code = Int(form["reasonCode"] ?? "") else {
                throw PanelFailure("Days and Apple's reason are whole numbers, e.g. 3 days for reason 3.")
            }
            let storefronts = (form["storefronts"] ?? "").uppercased().split(whereSeparator: { $0 == " " || $0 == "," })
                .map(String.init)
            _ = try await panel.service.extendAllSubscribers(
                environment: environment,
                request: MassExtensionRequest(
                    productId: form["productId"] ?? "", days: days, reasonCode: code, reason: form["reason"] ?? "",
                    storefronts: storefronts.isEmpty ? nil : storefronts),
                actor: context.adminActor)
            return AdminPanel.redirect("/admin/extensions?notice=extended-all")
        } otherwise: { failure in
            try await extensions(request, context, failure: failure)
        }
    }
}
