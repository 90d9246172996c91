import CofferAdmin
import CofferCore
import CofferHTTP
import CofferStore
import Foundation
import Hummingbird

/// `/admin/users`: the search, a customer's page and the export of their history.
struct CustomersController: PanelController {
    let panel: AdminPanel

    var routes: RouteCollection<CofferRequestContext> {
        let routes = RouteCollection(context: CofferRequestContext.self)
        routes.get("users") { request, context in try await users(request, context) }
        routes.get("users/:supportId") { request, context in try await customer(request, context) }
        routes.get("users/:supportId/export.json") { request, context in
            try await export(request, context, format: "json")
        }
        routes.get("users/:supportId/export.csv") { request, context in
            try await export(request, context, format: "csv")
        }
        return routes
    }

    /// `GET /admin/users[?q=&page=]`.
    func users(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        let session = try context.requireSession()
        let query = request.uri.queryParameters.get("q") ?? ""
        let scope = panel.scope(session)
        return try await panel.attempt {
            let page = try AdminService.page(request.uri.queryParameters.get("page"))
            let result = try await panel.service.searchUsers(
                environment: scope.environment, query: query, page: page, sandboxMarkedOnly: scope.sandboxMarkedOnly)
            return panel.render(
                UsersPage(query: query, result: result, page: page, time: panel.times(context)), context)
        } otherwise: { failure in
            panel.render(UsersPage(query: query), context, failure: failure)
        }
    }

    /// `GET /admin/users/{supportId}`; also the page an action on the customer comes back to with its failure.
    func customer(
        _ request: Request, _ context: CofferRequestContext, supportId: String? = nil, failure: PanelFailure? = nil
    ) async throws -> Response {
        let session = try context.requireSession()
        let supportId = try supportId ?? context.parameters.require("supportId")
        return try await panel.attempt {
            let detail = try await panel.service.user(scope: panel.scope(session), supportId: supportId)
            let page = CustomerPage(
                detail, view: DataEnvironment(session.environment), catalog: panel.service.catalog,
                time: panel.times(context))
            return panel.render(
                page, context, notice: PanelNotice(query: request.uri.queryParameters.get("notice")), failure: failure)
        } otherwise: { lookup in
            noSuchUser(lookup, context)
        }
    }

    func noSuchUser(_ failure: PanelFailure, _ context: CofferRequestContext) -> Response {
        panel.render(
            MessagePage(heading: .noSuchUser, detail: failure.message, link: "/admin/users", linkText: .users),
            context, status: failure.status)
    }

    /// `GET /admin/users/{supportId}/export.json|csv`: the customer's history for a ticket or a data request,
    /// audited.
    func export(_ request: Request, _ context: CofferRequestContext, format: String) async throws -> Response {
        let session = try context.requireSession()
        let supportId = try context.parameters.require("supportId")
        let scope = panel.scope(session)
        return try await panel.attempt {
            try await panel.service.requireInScope(scope, supportId: supportId)
            let detail = try await panel.service.exportUser(
                environment: scope.environment, supportId: supportId, format: format, actor: context.adminActor)
            let name = "coffer-\(detail.user.supportId)"
            if format == "csv" {
                return AdminPanel.download(
                    AdminService.timelineCSV(detail), type: "text/csv; charset=utf-8", filename: name + ".csv")
            }
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            encoder.dateEncodingStrategy = .iso8601
            return AdminPanel.download(
                String(decoding: try encoder.encode(detail), as: UTF8.self), type: "application/json",
                filename: name + ".json")
        } otherwise: { failure in
            noSuchUser(failure, context)
        }
    }
}
