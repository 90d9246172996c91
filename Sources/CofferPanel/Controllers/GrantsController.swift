import CofferAPI
import CofferAdmin
import CofferCore
import CofferHTTP
import CofferStore
import Foundation
import HTTPTypes
import Hummingbird

/// `/admin/grants`: the list, a grant with its confirmation, a cancellation, and (owners, Sandbox) deleting them
/// all.
struct GrantsController: PanelController {
    let panel: AdminPanel

    var routes: RouteCollection<CofferRequestContext> {
        let routes = RouteCollection(context: CofferRequestContext.self)
        routes.get("grants") { request, context in try await grants(request, context) }
        routes.post("grants") { request, context in try await create(request, context) }
        routes.post("grants/:id/cancel") { request, context in try await cancel(request, context) }
        routes.get("grants/delete-all") { _, context in try await confirmDeleteAll(context) }
        routes.post("grants/delete-all") { request, context in try await deleteAll(request, context) }
        return routes
    }

    /// `GET /admin/grants[?status=]`; also the page a refused grant comes back to.
    func grants(_ request: Request, _ context: CofferRequestContext, failure: PanelFailure? = nil) async throws
        -> Response
    {
        let session = try context.requireSession()
        let status = request.uri.queryParameters.get("status").flatMap { GrantStatus(rawValue: String($0)) }
        let grants = try await panel.service.grants(scope: panel.scope(session), status: status)
        return panel.render(
            GrantsPage(status: status, grants: GrantRows(grants, back: "grants", time: panel.times(context)).grants),
            context, notice: PanelNotice(query: request.uri.queryParameters.get("notice")), failure: failure)
    }

    /// `POST /admin/grants`: first a confirmation page with the balance before and after, then the grant; from
    /// the customer's page (`back=user`) a refusal goes back there.
    func create(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        let (session, form) = try await panel.checkedForm(request, context)
        let supportId = (form["supportId"] ?? "").trimmingCharacters(in: .whitespaces)
        let toUser = form["back"] == "user"
        let scope = panel.scope(session)
        let ceiling = context.panelAdmin?.grantCeiling
        return try await panel.attempt {
            guard let credits = PanelText.amount(form["credits"] ?? "") else {
                throw PanelFailure("Credits must be a whole number, e.g. 400,000 or 400000.")
            }
            let reason = (form["reason"] ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
            // The currency by id; none (or the default's) for the default currency.
            let currencyId = form["currency"].flatMap { $0.isEmpty ? nil : $0 }
            // Days after the claim the credits end; none: they never do.
            let days = (form["expiresInDays"] ?? "").trimmingCharacters(in: .whitespaces)
            guard days.isEmpty || Int(days) != nil else {
                throw PanelFailure("Expiring after must be a whole number of days, or empty for never.")
            }
            let expiresInDays = Int(days)
            guard form["confirm"] == "yes" else {
                let checked = try AdminService.checkGrant(credits: credits, reason: reason, ceiling: ceiling)
                let currency = try panel.service.ledgerCurrency(currencyId)
                try panel.service.checkExpiry(expiresInDays)
                let detail = try await panel.service.user(scope: scope, supportId: supportId)
                return panel.render(
                    confirmation(
                        detail, credits: credits, currency: currency, expiresInDays: expiresInDays, reason: checked,
                        toUser: toUser),
                    context)
            }
            try await panel.service.requireInScope(scope, supportId: supportId)
            let grant = try await panel.service.createGrant(
                environment: scope.environment, supportId: supportId, credits: credits, reason: reason,
                actor: context.adminActor, ceiling: ceiling, holder: session.adminName,
                id: form["grantId"].flatMap(UUID.init(uuidString:)), currency: currencyId, expiresInDays: expiresInDays)
            return AdminPanel.redirect(
                toUser
                    ? "/admin/users/\(URLText.escape(grant.supportId))?notice=granted"
                    : "/admin/grants?status=pending&notice=granted")
        } otherwise: { failure in
            toUser
                ? try await CustomersController(panel: panel).customer(
                    request, context, supportId: supportId, failure: failure)
                : try await grants(request, context, failure: failure)
        }
    }

    /// The page that asks before a grant: its reason, the grants waiting already, the balance before and after.
    func confirmation(
        _ detail: UserDetail, credits: Int64, currency: Currency?, expiresInDays: Int?, reason: String, toUser: Bool
    ) -> ConfirmPage {
        let id = detail.user.supportId
        var page = ConfirmPage(
            section: toUser ? .users : .grants, action: "/admin/grants",
            cancel: toUser ? "/admin/users/\(URLText.escape(id))" : "/admin/grants",
            fields: [
                HiddenField(name: "supportId", value: id), HiddenField(name: "credits", value: String(credits)),
                HiddenField(name: "reason", value: reason),
                HiddenField(name: "back", value: toUser ? "user" : "grants"),
                // Sent again (a retry after the database went away), it makes this grant, not a second.
                HiddenField(name: "grantId", value: UUID().uuidString.lowercased()),
                HiddenField(name: "currency", value: currency?.rawValue ?? ""),
                HiddenField(name: "expiresInDays", value: expiresInDays.map(String.init) ?? ""),
            ])
        let pending = detail.grants.filter { $0.status == .pending && $0.currency == currency?.rawValue }
        page.grant = ConfirmPage.Grant(
            supportId: id, credits: PanelText.credits(credits),
            unit: currency.map { panel.service.catalog.currencyName($0) } ?? "credits",
            expiry: expiresInDays.map {
                "They expire \($0) days after the app claims them; what is left then leaves the balance."
            },
            reason: reason,
            waiting: pending.isEmpty
                ? nil
                : ConfirmPage.Grant.Waiting(
                    count: pending.count, one: pending.count == 1,
                    credits: PanelText.credits(pending.reduce(0) { $0 + $1.credits })))
        let now = detail.editableBalance(of: currency?.rawValue)
        let (after, overflow) = now.addingReportingOverflow(credits)
        page.beforeAfter = BeforeAfter(
            backedUp: detail.walletMode != .server, onceClaimed: true, before: PanelText.credits(now),
            after: overflow ? "–" : PanelText.credits(after))
        return page
    }

    /// `POST /admin/grants/{id}/cancel`: first a confirmation page, then the cancellation (Production too); a
    /// grant the app claimed already is refused with what to do instead.
    func cancel(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        let (session, form) = try await panel.checkedForm(request, context)
        let id = try context.parameters.require("id")
        let back = form["back"] == "user" ? "user" : "grants"
        let scope = panel.scope(session)
        var backLink = "/admin/grants"
        var linkText = MessagePage.LinkText.grants
        return try await panel.attempt {
            let grant = try await panel.service.grant(environment: scope.environment, id: id)
            try await panel.service.requireInScope(scope, supportId: grant.supportId)
            backLink =
                back == "user" ? "/admin/users/\(URLText.escape(grant.supportId))" : "/admin/grants?status=pending"
            linkText = .back
            guard form["confirm"] == "yes" else {
                guard grant.status == .pending else {
                    let claimed = grant.status == .claimed
                    return panel.render(
                        MessagePage(
                            heading: .notCancelled, reason: claimed ? .grantClaimed : .grantCancelledAlready,
                            link: backLink, linkText: .back), context, status: claimed ? .badRequest : .ok)
                }
                var page = ConfirmPage(
                    section: back == "grants" ? .grants : .users,
                    action: "/admin/grants/\(URLText.escape(grant.id.uuidString.lowercased()))/cancel",
                    cancel: backLink, fields: [HiddenField(name: "back", value: back)])
                page.cancelGrant = ConfirmPage.CancelGrant(
                    supportId: grant.supportId, credits: PanelText.credits(grant.credits), createdBy: grant.createdBy,
                    createdAt: AdminPanel.time(grant.createdAt, context), reason: grant.reason)
                return panel.render(page, context)
            }
            _ = try await panel.service.cancelGrant(environment: scope.environment, id: id, actor: context.adminActor)
            return AdminPanel.redirect(backLink + (backLink.contains("?") ? "&" : "?") + "notice=cancelled")
        } otherwise: { failure in
            panel.render(
                MessagePage(heading: .notCancelled, detail: failure.message, link: backLink, linkText: linkText),
                context, status: failure.status)
        }
    }

    /// `GET /admin/grants/delete-all` (owners, Sandbox).
    func confirmDeleteAll(_ context: CofferRequestContext) async throws -> Response {
        let session = try context.requireOwner()
        guard session.environment == .sandbox else {
            return panel.render(
                MessagePage(
                    heading: .notInProduction, reason: .bulkDeleteInSandboxOnly, link: "/admin/grants",
                    linkText: .grants), context, status: .forbidden)
        }
        var page = ConfirmPage(
            section: .grants, action: "/admin/grants/delete-all", cancel: "/admin/grants", fields: [])
        page.deleteAll = ConfirmPage.DeleteAll(sandboxMarkedOnly: panel.scope(session).sandboxMarkedOnly)
        return panel.render(page, context)
    }

    /// `POST /admin/grants/delete-all` (owners, Sandbox).
    func deleteAll(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        let (session, form) = try await panel.checkedForm(request, context)
        _ = try context.requireOwner()
        guard form["confirm"] == "yes" else { return try await confirmDeleteAll(context) }
        return try await panel.attempt {
            _ = try await panel.service.deleteTestGrants(scope: panel.scope(session), actor: context.adminActor)
            return AdminPanel.redirect("/admin/grants?notice=deleted")
        } otherwise: { failure in
            panel.render(
                MessagePage(heading: .notDeleted, detail: failure.message, link: "/admin/grants", linkText: .grants),
                context, status: failure.status)
        }
    }
}

/// `/admin/grants`: the tabs by status and the grants.
struct GrantsPage: PanelPage {
    static let template = "grants"
    var section: PanelSection? { .grants }
    var allTab: Bool
    var pendingTab: Bool
    var claimedTab: Bool
    var cancelledTab: Bool
    var grants: [GrantRows.Row]

    init(status: GrantStatus?, grants: [GrantRows.Row]) {
        allTab = status == nil
        pendingTab = status == .pending
        claimedTab = status == .claimed
        cancelledTab = status == .cancelled
        self.grants = grants
    }
}
