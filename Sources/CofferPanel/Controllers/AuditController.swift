import CofferAdmin
import CofferCore
import CofferHTTP
import CofferStore
import Hummingbird

/// `/admin/audit`: the audit log, filtered, and its CSV export.
struct AuditController: PanelController {
    let panel: AdminPanel

    var routes: RouteCollection<CofferRequestContext> {
        let routes = RouteCollection(context: CofferRequestContext.self)
        routes.get("audit") { request, context in try await audit(request, context) }
        routes.get("audit.csv") { request, context in try await csv(request, context) }
        return routes
    }

    /// `GET /admin/audit[?admin=&customer=&action=]`: the newest 200 matching, and a CSV link for all (to 10,000).
    func audit(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        let session = try context.requireSession()
        let query = AuditQuery(request)
        return try await panel.attempt {
            let events = try await panel.service.auditLog(environment: panel.scope(session).environment, query: query)
            return panel.render(AuditPage(events, query: query, time: panel.times(context)), context)
        } otherwise: { failure in
            panel.render(AuditPage(), context, failure: failure)
        }
    }

    /// `GET /admin/audit.csv[?admin=&customer=&action=]`: the matching events, newest first, up to 10,000.
    func csv(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        let session = try context.requireSession()
        let events = try await panel.service.auditLog(
            environment: panel.scope(session).environment, query: AuditQuery(request),
            limit: AdminService.auditExportLimit)
        return AdminPanel.download(
            AdminService.auditCSV(events), type: "text/csv; charset=utf-8",
            filename: "coffer-audit-\(session.environment.rawValue.lowercased()).csv")
    }
}

/// `/admin/environment`: switching the session between Production and Sandbox (to Production after a
/// confirmation).
struct EnvironmentController: PanelController {
    let panel: AdminPanel

    var routes: RouteCollection<CofferRequestContext> {
        let routes = RouteCollection(context: CofferRequestContext.self)
        routes.get("environment") { request, context in try await confirm(request, context) }
        routes.post("environment") { request, context in try await switchTo(request, context) }
        return routes
    }

    func confirm(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        _ = try context.requireSession()
        guard request.uri.queryParameters.get("to") == "Production" else { return AdminPanel.redirect("/admin") }
        var page = ConfirmPage(
            section: nil, action: "/admin/environment", cancel: "/admin",
            fields: [HiddenField(name: "environment", value: "Production")])
        page.production = true
        return panel.render(page, context)
    }

    func switchTo(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        let (session, form) = try await panel.checkedForm(request, context)
        guard let environment = AppStoreEnvironment(rawValue: form["environment"] ?? "") else {
            return AdminPanel.redirect("/admin")
        }
        if environment == .production, form["confirm"] != "yes" {
            return AdminPanel.redirect("/admin/environment?to=Production")
        }
        try await panel.signIn.switchEnvironment(of: session, to: environment)
        return AdminPanel.redirect("/admin")
    }
}
