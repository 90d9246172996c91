import CofferAPI
import CofferAdmin
import CofferCore
import CofferHTTP
import CofferService
import CofferStore
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// The panel's grants: the list, a grant with its confirmation, and a cancellation.
extension AdminPanel {
    func grants(
        _ request: Request, _ context: CofferRequestContext, error: String? = nil,
        errorStatus: HTTPResponse.Status = .badRequest
    ) async throws -> Response {
        let session = try context.requireSession()
        let status = request.uri.queryParameters.get("status").flatMap { GrantStatus(rawValue: String($0)) }
        let grants = try await service.grants(scope: scope(session), status: status)
        return page(
            "grants",
            [
                "title": "Grants", "onGrants": true, "allTab": status == nil, "pendingTab": status == .pending,
                "claimedTab": status == .claimed, "cancelledTab": status == .cancelled, "error": error,
                "notice": Self.notice(request.uri.queryParameters.get("notice")),
                "grants": grantRows(grants, back: "grants", context),
            ], context: context, status: error == nil ? .ok : errorStatus)
    }

    func createGrant(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        let (session, form) = try await checkedForm(request, context)
        let supportId = (form["supportId"] ?? "").trimmingCharacters(in: .whitespaces)
        let toUser = form["back"] == "user"
        func refuse(_ text: String, status: HTTPResponse.Status = .badRequest) async throws -> Response {
            if toUser {
                return try await user(request, context, supportId: supportId, error: text, errorStatus: status)
            }
            return try await grants(request, context, error: text, errorStatus: status)
        }
        guard let credits = PanelText.amount(form["credits"] ?? "") else {
            return try await refuse("Credits must be a whole number, e.g. 400,000 or 400000.")
        }
        var reason = (form["reason"] ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
        guard form["confirm"] == "yes" else {
            let detail: UserDetail
            do {
                reason = try AdminService.checkGrant(
                    credits: credits, reason: reason, ceiling: context.panelAdmin?.grantCeiling)
                detail = try await service.user(scope: scope(session), supportId: supportId)
            } catch let error as AdminError {
                return try await refuse(error.description, status: error.status)
            }
            return page(
                "confirm",
                [
                    "title": "Grant credits", "onGrants": !toUser, "onUsers": toUser,
                    "heading": "Grant \(PanelText.credits(credits)) credits to \(detail.user.supportId)?",
                    "explanation": grantExplanation(detail, credits: credits, reason: reason),
                    "beforeAfter": beforeAfter(detail, credits: credits),
                    "action": "/admin/grants", "button": "Grant \(PanelText.credits(credits)) credits",
                    "cancel": toUser ? "/admin/users/\(URLText.escape(detail.user.supportId))" : "/admin/grants",
                    "fields": [
                        ["name": "supportId", "value": detail.user.supportId],
                        ["name": "credits", "value": String(credits)], ["name": "reason", "value": reason],
                        ["name": "back", "value": toUser ? "user" : "grants"], ["name": "confirm", "value": "yes"],
                        // Sent again (a retry after the database went away), it makes this grant, not a second.
                        ["name": "grantId", "value": UUID().uuidString.lowercased()],
                    ],
                ], context: context)
        }
        let grant: GrantView
        do {
            try await service.requireInScope(scope(session), supportId: supportId)
            grant = try await service.createGrant(
                environment: scope(session).environment, supportId: supportId, credits: credits, reason: reason,
                actor: context.adminActor, ceiling: context.panelAdmin?.grantCeiling, holder: session.adminName,
                id: form["grantId"].flatMap(UUID.init(uuidString:)))
        } catch let error as AdminError {
            return try await refuse(error.description, status: error.status)
        }
        return Self.redirect(
            toUser
                ? "/admin/users/\(URLText.escape(grant.supportId))?notice=granted"
                : "/admin/grants?status=pending&notice=granted")
    }

    /// What granting does, in words, for the confirmation page.
    func grantExplanation(_ detail: UserDetail, credits: Int64, reason: String) -> String {
        let pending = detail.grants.filter { $0.status == .pending }
        let waiting =
            pending.isEmpty
            ? ""
            : " \(pending.count) grant\(pending.count == 1 ? "" : "s") of "
                + "\(PanelText.credits(pending.reduce(0) { $0 + $1.credits })) credits \(pending.count == 1 ? "is" : "are") "
                + "waiting for the app already."
        return "Reason: \"\(reason)\". The app picks the grant up on its next launch, foreground or refresh, and "
            + "it is recorded in the audit log. Until the app claims it, it can be cancelled." + waiting
    }

    /// The balance before and after a grant of `credits`, for the confirmation page.
    func beforeAfter(_ detail: UserDetail, credits: Int64) -> [String: String] {
        let now = detail.editableBalance
        let (after, overflow) = now.addingReportingOverflow(credits)
        return [
            "label": detail.walletMode == .server
                ? "Balance, once the app claims it" : "Backed-up balance, once the app claims it",
            "before": PanelText.credits(now), "after": overflow ? "–" : PanelText.credits(after),
        ]
    }

    /// Grants as table rows, with a cancel button on the pending ones.
    func grantRows(_ grants: [GrantView], back: String, _ context: CofferRequestContext) -> [[String: Any]] {
        grants.map { grant in
            [
                "id": grant.id.uuidString.lowercased(), "created": Self.time(grant.createdAt, context),
                "supportId": grant.supportId, "credits": PanelText.credits(grant.credits),
                "status": grant.status.rawValue, "createdBy": grant.createdBy, "reason": grant.reason,
                "cancellable": grant.status == .pending, "back": back,
                "cancelledNote": grant.cancelledAt.map {
                    "cancelled by \(grant.cancelledBy ?? "?") at \(Self.time($0, context))"
                } ?? "",
            ] as [String: Any]
        }
    }

    /// `POST /admin/grants/{id}/cancel`: first a confirmation page, then the cancellation (Production too); a
    /// grant the app claimed already is refused with what to do instead.
    func cancelGrant(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        let (session, form) = try await checkedForm(request, context)
        let id = try context.parameters.require("id")
        let back = form["back"] == "user" ? "user" : "grants"
        let grant: GrantView
        do {
            grant = try await service.grant(environment: scope(session).environment, id: id)
            try await service.requireInScope(scope(session), supportId: grant.supportId)
        } catch let error as AdminError {
            return message(
                "Not cancelled", error.description, link: "/admin/grants", linkText: "Back to grants",
                context: context, status: error.status)
        }
        let backLink =
            back == "user" ? "/admin/users/\(URLText.escape(grant.supportId))" : "/admin/grants?status=pending"
        guard form["confirm"] == "yes" else {
            guard grant.status == .pending else {
                return message(
                    "Not cancelled",
                    grant.status == .claimed
                        ? "The app claimed this grant already: the credits are the customer's. Answer it with a new "
                            + "adjustment (set the balance) instead."
                        : "This grant was cancelled already.", link: backLink, linkText: "Back",
                    context: context, status: grant.status == .claimed ? .badRequest : .ok)
            }
            return page(
                "confirm",
                [
                    "title": "Cancel a grant", "onGrants": back == "grants", "onUsers": back == "user",
                    "heading": "Cancel the grant of \(PanelText.credits(grant.credits)) credits to \(grant.supportId)?",
                    "explanation":
                        "Created by \(grant.createdBy) at \(Self.time(grant.createdAt, context)): \"\(grant.reason)\". "
                        + "The app will not get these credits; the cancellation is recorded in the audit log. "
                        + "If the app claims it first, it is the customer's and cannot be cancelled.",
                    "action": "/admin/grants/\(URLText.escape(grant.id.uuidString.lowercased()))/cancel",
                    "button": "Cancel the grant", "cancel": backLink, "cancelText": "Keep it",
                    "fields": [["name": "back", "value": back], ["name": "confirm", "value": "yes"]],
                ], context: context)
        }
        do {
            _ = try await service.cancelGrant(
                environment: scope(session).environment, id: id, actor: context.adminActor)
        } catch let error as AdminError {
            return message(
                "Not cancelled", error.description, link: backLink, linkText: "Back", context: context,
                status: error.status)
        }
        return Self.redirect(backLink + (backLink.contains("?") ? "&" : "?") + "notice=cancelled")
    }
}
