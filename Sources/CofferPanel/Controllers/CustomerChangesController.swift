import CofferAPI
import CofferAdmin
import CofferCore
import CofferHTTP
import CofferStore
import Foundation
import Hummingbird

/// Changes to a customer: an owner's balance edit, merge and deletion, each asked first on a confirmation page, and
/// support's subscription extension; a refusal comes back to the customer's page.
struct CustomerChangesController: PanelController {
    let panel: AdminPanel

    var routes: RouteCollection<CofferRequestContext> {
        let routes = RouteCollection(context: CofferRequestContext.self)
        routes.post("users/:supportId/balance") { request, context in try await setBalance(request, context) }
        routes.post("users/:supportId/merge") { request, context in try await merge(request, context) }
        routes.post("users/:supportId/delete") { request, context in try await delete(request, context) }
        routes.post("users/:supportId/extend") { request, context in try await extend(request, context) }
        routes.post("users/:supportId/entitlement-grants") { request, context in
            try await grantEntitlement(request, context)
        }
        routes.post("entitlement-grants/:id/cancel") { request, context in
            try await cancelEntitlementGrant(request, context)
        }
        return routes
    }

    /// Runs a change; its refusal shows on the customer's page.
    private func change(
        _ request: Request, _ context: CofferRequestContext, _ action: () async throws -> Response
    ) async throws -> Response {
        try await panel.attempt(action) { failure in
            try await CustomersController(panel: panel).customer(request, context, failure: failure)
        }
    }

    /// `POST /admin/users/{supportId}/extend`: the customer's active subscriptions extended through Apple (support
    /// too: a goodwill gesture); Apple's answer lands on the timeline.
    func extend(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        let (session, form) = try await panel.checkedForm(request, context)
        let supportId = try context.parameters.require("supportId")
        let scope = panel.scope(session)
        return try await change(request, context) {
            guard let days = Int(form["days"] ?? ""), let code = Int(form["reasonCode"] ?? "") else {
                throw PanelFailure("Days and Apple's reason are whole numbers, e.g. 7 days for reason 1.")
            }
            try await panel.service.requireInScope(scope, supportId: supportId)
            _ = try await panel.service.extendSubscriptions(
                environment: scope.environment, supportId: supportId,
                request: ExtendSubscriptionRequest(days: days, reasonCode: code, reason: form["reason"] ?? ""),
                actor: context.adminActor)
            return AdminPanel.redirect("/admin/users/\(URLText.escape(supportId))?notice=extended")
        }
    }

    /// `POST /admin/users/{supportId}/entitlement-grants`: an entitlement for a number of days (support too).
    func grantEntitlement(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        let (session, form) = try await panel.checkedForm(request, context)
        let supportId = try context.parameters.require("supportId")
        let scope = panel.scope(session)
        return try await change(request, context) {
            guard let days = Int(form["days"] ?? "") else {
                throw PanelFailure("Days are a whole number, e.g. 7.")
            }
            try await panel.service.requireInScope(scope, supportId: supportId)
            _ = try await panel.service.grantEntitlement(
                environment: scope.environment, support: context.panelAdmin?.role == .support,
                request: EntitlementGrantRequest(
                    supportId: supportId, entitlement: form["entitlement"] ?? "", days: days,
                    reason: form["reason"] ?? ""),
                actor: context.adminActor)
            return AdminPanel.redirect("/admin/users/\(URLText.escape(supportId))?notice=entitlement-granted")
        }
    }

    /// `POST /admin/entitlement-grants/{id}/cancel`: the entitlement ends now; back to the customer's page.
    func cancelEntitlementGrant(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        let (session, form) = try await panel.checkedForm(request, context)
        let id = try context.parameters.require("id")
        let supportId = form["supportId"] ?? ""
        let scope = panel.scope(session)
        return try await panel.attempt {
            try await panel.service.requireInScope(scope, supportId: supportId)
            _ = try await panel.service.cancelEntitlementGrant(
                environment: scope.environment, id: id, actor: context.adminActor, supportId: supportId)
            return AdminPanel.redirect("/admin/users/\(URLText.escape(supportId))?notice=cancelled")
        } otherwise: { failure in
            try await CustomersController(panel: panel).customer(
                request, context, supportId: supportId, failure: failure)
        }
    }

    /// `POST /admin/users/{supportId}/balance`: first a page showing the balance before and after, then the
    /// change, refused if the balance moved in between.
    func setBalance(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        let (session, form) = try await panel.checkedForm(request, context)
        _ = try context.requireOwner()
        let supportId = try context.parameters.require("supportId")
        let scope = panel.scope(session)
        return try await change(request, context) {
            guard let balance = PanelText.amount(form["balance"] ?? "") else {
                throw PanelFailure("The balance must be a whole number, e.g. 1,200,000 or 1200000.")
            }
            _ = try SupportRules.balance(balance)
            let reason = try SupportRules.reason(form["reason"] ?? "")
            // The currency by id; none (or the default's) for the default currency.
            let currencyId = form["currency"].flatMap { $0.isEmpty ? nil : $0 }
            let currency = try panel.service.ledgerCurrency(currencyId)
            let detail = try await panel.service.user(scope: scope, supportId: supportId)
            let current = detail.editableBalance(of: currency?.rawValue)
            guard form["confirm"] == "yes" else {
                let id = URLText.escape(detail.user.supportId)
                var page = ConfirmPage(
                    section: .users, action: "/admin/users/\(id)/balance", cancel: "/admin/users/\(id)",
                    fields: [
                        HiddenField(name: "balance", value: String(balance)),
                        HiddenField(name: "reason", value: reason),
                        HiddenField(name: "expected", value: String(current)),
                        HiddenField(name: "currency", value: currency?.rawValue ?? ""),
                    ])
                page.balanceEdit = ConfirmPage.BalanceEdit(
                    supportId: detail.user.supportId,
                    balance: PanelText.credits(balance)
                        + (currency.map { " " + panel.service.catalog.currencyName($0) } ?? ""),
                    change: PanelText.change(balance - current), reason: reason,
                    serverWallet: detail.walletMode == .server)
                page.beforeAfter = BeforeAfter(
                    backedUp: detail.walletMode != .server, onceClaimed: false, before: PanelText.credits(current),
                    after: PanelText.credits(balance))
                return panel.render(page, context)
            }
            // The balance the confirmation page showed, checked inside the edit's transaction.
            guard let expected = form["expected"].flatMap({ Int64($0) }) else {
                throw PanelFailure("The confirmation is incomplete; set the balance again.")
            }
            try await panel.service.requireInScope(scope, supportId: supportId)
            _ = try await panel.service.setBalance(
                environment: scope.environment, supportId: supportId, balance: balance, expected: expected,
                reason: reason, actor: context.adminActor, currency: currencyId)
            return AdminPanel.redirect("/admin/users/\(URLText.escape(supportId))?notice=balance")
        }
    }

    /// `POST /admin/users/{supportId}/merge`: first a confirmation page naming both customers, then the merge.
    func merge(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        let (session, form) = try await panel.checkedForm(request, context)
        _ = try context.requireOwner()
        let supportId = try context.parameters.require("supportId")
        let scope = panel.scope(session)
        let field = { (name: String) in (form[name] ?? "").trimmingCharacters(in: .whitespacesAndNewlines) }
        let (into, code, overrideReason, intoCode) = (
            field("into"), field("code"), field("overrideReason"), field("intoCode")
        )
        return try await change(request, context) {
            let consent = try MergeConsent(code: code, overrideReason: overrideReason)
            guard form["confirm"] == "yes" else {
                let from = try await panel.service.user(scope: scope, supportId: supportId)
                let account = try await panel.service.user(scope: scope, supportId: into)
                let tokens = try await panel.service.tokenCounts(environment: scope.environment, supportId: supportId)
                let id = URLText.escape(from.user.supportId)
                var page = ConfirmPage(
                    section: .users, action: "/admin/users/\(id)/merge", cancel: "/admin/users/\(id)",
                    fields: [
                        HiddenField(name: "into", value: account.user.supportId),
                        HiddenField(name: "code", value: code),
                        HiddenField(name: "overrideReason", value: overrideReason),
                        HiddenField(name: "intoCode", value: intoCode),
                    ])
                page.merge = ConfirmPage.Merge(
                    from: from.user.supportId, fromBalance: PanelText.credits(from.user.balance),
                    fromDeficit: PanelText.credits(from.user.deficit),
                    fromBackup: from.user.backup.map { PanelText.credits($0.value) }, into: account.user.supportId,
                    intoBalance: PanelText.credits(account.user.balance), serverWallet: from.walletMode == .server,
                    tokens: PanelText.mergedTokens(tokens, into: account.user.supportId))
                return panel.render(page, context)
            }
            try await panel.service.requireInScope(scope, supportId: supportId)
            try await panel.service.requireInScope(scope, supportId: into)
            let done = try await panel.service.mergeUsers(
                environment: scope.environment, from: supportId, into: into, consent: consent, intoCode: intoCode,
                actor: context.adminActor)
            return AdminPanel.redirect("/admin/users/\(URLText.escape(done.into))?notice=merged")
        }
    }

    /// `POST /admin/users/{supportId}/delete` (owners): first a confirmation page saying what is removed and
    /// what stays, then the deletion.
    func delete(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        let (session, form) = try await panel.checkedForm(request, context)
        _ = try context.requireOwner()
        let supportId = try context.parameters.require("supportId")
        let scope = panel.scope(session)
        return try await change(request, context) {
            guard form["confirm"] == "yes" else {
                let detail = try await panel.service.user(scope: scope, supportId: supportId)
                let id = URLText.escape(detail.user.supportId)
                var page = ConfirmPage(
                    section: .users, action: "/admin/users/\(id)/delete", cancel: "/admin/users/\(id)", fields: [])
                page.deletion = ConfirmPage.Deletion(
                    supportId: detail.user.supportId, balance: PanelText.credits(detail.user.balance),
                    deficit: PanelText.credits(detail.user.deficit))
                page.beforeAfter = BeforeAfter(
                    backedUp: false, onceClaimed: false, before: PanelText.credits(detail.user.balance), after: "0")
                return panel.render(page, context)
            }
            try await panel.service.requireInScope(scope, supportId: supportId)
            _ = try await panel.service.deleteUser(
                environment: scope.environment, supportId: supportId, actor: context.adminActor)
            return AdminPanel.redirect("/admin/users/\(URLText.escape(supportId))?notice=customer-deleted")
        }
    }
}
