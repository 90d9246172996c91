import CofferAPI
import CofferAdmin
import CofferCore
import CofferService
import CofferStore
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

extension AdminPanel {
    func dashboard(_ context: CofferRequestContext) async throws -> Response {
        let session = try context.requireSession()
        let figures = try await service.dashboard(environment: session.environment)
        return page(
            "dashboard",
            [
                "title": "Dashboard", "onDashboard": true,
                "figures": [
                    "users": figures.users, "pendingGrants": figures.pendingGrants,
                    "claimedGrants": figures.claimedGrants, "purchases": figures.purchases,
                    "refunds": figures.refunds, "usersInDeficit": figures.usersInDeficit,
                    "outstandingDeficit": figures.outstandingDeficit,
                    "otherEnvironmentPurchases": figures.otherEnvironmentPurchases,
                ],
                "otherEnvironment": session.environment == .production ? "Sandbox" : "Production",
                "hasOtherEnvironment": figures.otherEnvironmentPurchases > 0,
                "chart": DashboardChart.svg(figures.days),
            ], session: session)
    }

    func users(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        let session = try context.requireSession()
        let query = request.uri.queryParameters.get("q") ?? ""
        let pageNumber: Int
        let result: UserSearchResult
        do {
            pageNumber = try AdminService.page(request.uri.queryParameters.get("page"))
            result = try await service.searchUsers(environment: session.environment, query: query, page: pageNumber)
        } catch let error as AdminError {
            return page(
                "users", ["title": "Users", "onUsers": true, "query": query, "error": error.description],
                session: session, status: .badRequest)
        }
        let link = { (number: Int) in
            "/admin/users?page=\(number)" + (query.isEmpty ? "" : "&q=" + URLText.escape(query))
        }
        let matched: String? =
            switch result.matchedBy {
            case "transaction-id": "Found by transaction id."
            case "order-id": "Found by order id (looked up with Apple)."
            case "nothing": "Nothing matches \(query): try a Support ID prefix, a transaction id or an order id."
            default: nil
            }
        return page(
            "users",
            [
                "title": "Users", "onUsers": true, "query": query, "matched": matched,
                "users": result.users.map { user in
                    [
                        "supportId": user.supportId, "created": Self.time(user.createdAt), "balance": user.balance,
                        "deficit": user.deficit, "backupValue": user.backup.map { String($0.value) } ?? "–",
                        "backedUp": user.backup.map { Self.time($0.lastUpdated) } ?? "–",
                    ] as [String: Any]
                },
                "previous": (pageNumber > 1 ? link(pageNumber - 1) : nil),
                "next": (result.hasMore ? link(pageNumber + 1) : nil),
            ], session: session)
    }

    func user(_ request: Request, _ context: CofferRequestContext, supportId: String? = nil, error: String? = nil)
        async throws -> Response
    {
        let session = try context.requireSession()
        let supportId = try supportId ?? context.parameters.require("supportId")
        let detail: UserDetail
        do {
            detail = try await service.user(environment: session.environment, supportId: supportId)
        } catch let failure as AdminError {
            return message(
                "No such user", failure.description, link: "/admin/users", linkText: "Back to users",
                session: session, status: failure.status)
        }
        let backup = detail.user.backup
        let backupNote =
            backup.map { "backup, written by \($0.writer) \($0.writerName) at \(Self.time($0.lastUpdated))" }
            ?? "no backup from the device yet"
        let balanceNote =
            detail.walletMode == "server"
            ? "The server owns this balance: setting it adds an adjustment to the ledger."
            : "The app owns this balance: setting it writes an admin backup, which the app accepts on its next sync."
        return page(
            "user",
            [
                "title": detail.user.supportId, "onUsers": true, "walletMode": detail.walletMode,
                "user": [
                    "supportId": detail.user.supportId, "balance": detail.user.balance,
                    "deficit": detail.user.deficit,
                ],
                "identity": detail.mergedInto.map { "Merged into \($0)" }
                    ?? detail.appleAccount.map { "Apple account customer (\($0.environment.rawValue) data)" }
                    ?? "Anonymous install",
                "mergedInto": detail.mergedInto,
                "canMerge": detail.appleAccount == nil && detail.mergedInto == nil,
                "backupValue": backup.map { String($0.value) } ?? "–", "backupNote": backupNote,
                "entitlementCount": detail.entitlements.count,
                "entitlements": (detail.entitlements.isEmpty ? nil : detail.entitlements.joined(separator: ", ")),
                "balanceNote": balanceNote, "error": error,
                "notice": Self.notice(request.uri.queryParameters.get("notice")),
                "timeline": detail.timeline.map { item in
                    [
                        "at": Self.time(item.at), "kind": item.kind.rawValue, "summary": item.summary,
                        "credits": item.credits.map { $0 > 0 ? "+\($0)" : String($0) } ?? "",
                        "balanceAfter": item.balanceAfter.map(String.init) ?? "",
                        "otherEnvironment": item.dataEnvironment?.rawValue ?? "",
                        "fromOtherEnvironment": item.dataEnvironment.map { $0 != session.environment } ?? false,
                    ] as [String: Any]
                },
            ], session: session, status: error == nil ? .ok : .badRequest)
    }

    func setBalance(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        let (session, form) = try await checkedForm(request, context)
        let supportId = try context.parameters.require("supportId")
        guard let balance = Int64(form["balance"]?.trimmingCharacters(in: .whitespaces) ?? "") else {
            return try await user(request, context, error: "The balance must be a whole number.")
        }
        do {
            _ = try await service.setBalance(
                environment: session.environment, supportId: supportId, balance: balance, reason: form["reason"] ?? "",
                actor: context.adminActor)
        } catch let error as AdminError {
            return try await user(request, context, error: error.description)
        }
        return Self.redirect("/admin/users/\(URLText.escape(supportId))?notice=balance")
    }

    /// `POST /admin/users/{supportId}/merge`: first a confirmation page naming both customers, then the merge.
    func merge(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        let (session, form) = try await checkedForm(request, context)
        let supportId = try context.parameters.require("supportId")
        let into = (form["into"] ?? "").trimmingCharacters(in: .whitespaces)
        guard form["confirm"] == "yes" else {
            let from: UserDetail
            let account: UserDetail
            do {
                from = try await service.user(environment: session.environment, supportId: supportId)
                account = try await service.user(environment: session.environment, supportId: into)
            } catch let error as AdminError {
                return try await user(request, context, error: error.description)
            }
            return page(
                "confirm",
                [
                    "title": "Merge customers", "onUsers": true,
                    "heading": "Merge \(from.user.supportId) into \(account.user.supportId)?",
                    "explanation":
                        "\(from.user.supportId) (anonymous, balance \(from.user.balance), deficit \(from.user.deficit), "
                        + "backup \(from.user.backup.map { String($0.value) } ?? "none")) joins "
                        + "\(account.user.supportId) (Apple account, balance \(account.user.balance)). Its "
                        + (from.walletMode == "server" ? "balance and deficit" : "last backed-up balance")
                        + ", purchases, grants and history move once, and its app signs in as "
                        + "\(account.user.supportId) from now on. This cannot be undone.",
                    "action": "/admin/users/\(URLText.escape(from.user.supportId))/merge",
                    "button": "Merge into \(account.user.supportId)",
                    "cancel": "/admin/users/\(URLText.escape(from.user.supportId))",
                    "fields": [
                        ["name": "into", "value": account.user.supportId], ["name": "confirm", "value": "yes"],
                    ],
                ], session: session)
        }
        let done: MergeResponse
        do {
            done = try await service.mergeUsers(
                environment: session.environment, from: supportId, into: into, actor: context.adminActor)
        } catch let error as AdminError {
            return try await user(request, context, error: error.description)
        }
        return Self.redirect("/admin/users/\(URLText.escape(done.into))?notice=merged")
    }

    func grants(_ request: Request, _ context: CofferRequestContext, error: String? = nil) async throws -> Response {
        let session = try context.requireSession()
        let status = request.uri.queryParameters.get("status").flatMap { GrantStatus(rawValue: String($0)) }
        let grants = try await service.grants(environment: session.environment, status: status)
        return page(
            "grants",
            [
                "title": "Grants", "onGrants": true, "allTab": status == nil, "pendingTab": status == .pending,
                "claimedTab": status == .claimed, "error": error,
                "notice": Self.notice(request.uri.queryParameters.get("notice")),
                "grants": grants.map { grant in
                    [
                        "created": Self.time(grant.createdAt), "supportId": grant.supportId, "credits": grant.credits,
                        "status": grant.status.rawValue, "createdBy": grant.createdBy, "reason": grant.reason,
                    ] as [String: Any]
                },
            ], session: session, status: error == nil ? .ok : .badRequest)
    }

    func createGrant(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        let (session, form) = try await checkedForm(request, context)
        let supportId = (form["supportId"] ?? "").trimmingCharacters(in: .whitespaces)
        let toUser = form["back"] == "user"
        func refuse(_ text: String) async throws -> Response {
            if toUser { return try await user(request, context, supportId: supportId, error: text) }
            return try await grants(request, context, error: text)
        }
        guard let credits = Int64(form["credits"]?.trimmingCharacters(in: .whitespaces) ?? "") else {
            return try await refuse("Credits must be a whole number.")
        }
        let grant: GrantView
        do {
            grant = try await service.createGrant(
                environment: session.environment, supportId: supportId, credits: credits, reason: form["reason"] ?? "",
                actor: context.adminActor)
        } catch let error as AdminError {
            return try await refuse(error.description)
        }
        return Self.redirect(
            toUser
                ? "/admin/users/\(URLText.escape(grant.supportId))?notice=granted"
                : "/admin/grants?status=pending&notice=granted")
    }

    func confirmDeleteAll(_ context: CofferRequestContext) async throws -> Response {
        let session = try context.requireSession()
        guard session.environment == .sandbox else {
            return message(
                "Not in Production", "Grants can be deleted in bulk in Sandbox only.", link: "/admin/grants",
                linkText: "Back to grants", session: session, status: .forbidden)
        }
        return page(
            "confirm",
            [
                "title": "Delete all grants", "onGrants": true, "heading": "Delete every Sandbox grant?",
                "explanation":
                    "This removes all Sandbox grants, pending and claimed (test data). Credits already claimed "
                    + "stay in the ledger. Production is not touched.",
                "action": "/admin/grants/delete-all", "button": "Delete all Sandbox grants",
                "cancel": "/admin/grants", "fields": [["name": "confirm", "value": "yes"]],
            ], session: session)
    }

    func deleteAll(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        let (session, form) = try await checkedForm(request, context)
        guard form["confirm"] == "yes" else { return try await confirmDeleteAll(context) }
        do {
            _ = try await service.deleteAllGrants(environment: session.environment, actor: context.adminActor)
        } catch let error as AdminError {
            return message(
                "Not deleted", error.description, link: "/admin/grants", linkText: "Back to grants",
                session: session, status: error.status)
        }
        return Self.redirect("/admin/grants?notice=deleted")
    }

    func confirmEnvironment(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        let session = try context.requireSession()
        guard request.uri.queryParameters.get("to") == "Production" else { return Self.redirect("/admin") }
        return page(
            "confirm",
            [
                "title": "Switch to Production", "heading": "Switch to Production?",
                "explanation":
                    "Production holds your real customers' purchases and balances. Every page will show Production "
                    + "data, and grants and balance changes will reach real customers.",
                "action": "/admin/environment", "button": "Switch to Production", "cancel": "/admin",
                "fields": [["name": "environment", "value": "Production"], ["name": "confirm", "value": "yes"]],
            ], session: session)
    }

    func switchEnvironment(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        let (session, form) = try await checkedForm(request, context)
        guard let environment = CofferCore.Environment(rawValue: form["environment"] ?? "") else {
            return Self.redirect("/admin")
        }
        if environment == .production, form["confirm"] != "yes" {
            return Self.redirect("/admin/environment?to=Production")
        }
        try await store.setSessionEnvironment(tokenHash: session.tokenHash, environment: environment)
        return Self.redirect("/admin")
    }

    func audit(_ context: CofferRequestContext) async throws -> Response {
        let session = try context.requireSession()
        let rows = try await service.auditLog(environment: session.environment).map { event -> [String: Any] in
            [
                "at": Self.time(event.at), "actor": event.actor, "action": event.action, "subject": event.subject,
                "before": event.before ?? "", "after": event.after ?? "",
            ]
        }
        return page("audit", ["title": "Audit log", "onAudit": true, "events": rows], session: session)
    }
}
