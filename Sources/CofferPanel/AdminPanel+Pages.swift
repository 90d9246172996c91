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

extension AdminPanel {
    func users(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        let session = try context.requireSession()
        let query = request.uri.queryParameters.get("q") ?? ""
        let pageNumber: Int
        let result: UserSearchResult
        do {
            pageNumber = try AdminService.page(request.uri.queryParameters.get("page"))
            result = try await service.searchUsers(
                environment: scope(session).environment, query: query, page: pageNumber,
                sandboxMarkedOnly: scope(session).sandboxMarkedOnly)
        } catch let error as AdminError {
            return page(
                "users", ["title": "Users", "onUsers": true, "query": query, "error": error.description],
                context: context, status: .badRequest)
        }
        let link = { (number: Int) in
            "/admin/users?page=\(number)" + (query.isEmpty ? "" : "&q=" + URLText.escape(query))
        }
        let matched: String? =
            switch result.matchedBy {
            case "transaction-id": "Found by transaction id."
            case "order-id": "Found by order id (looked up with Apple)."
            case "cloudkit-record-name": "Found by the old Support ID (the CloudKit user record name imported)."
            case "nothing":
                "Nothing matches \(query): try a Support ID prefix, a transaction id, an order id or an old Support ID "
                    + "from CloudKit."
            default: nil
            }
        return page(
            "users",
            [
                "title": "Users", "onUsers": true, "query": query, "matched": matched,
                "users": result.users.map { user in
                    [
                        "supportId": user.supportId, "created": Self.time(user.createdAt, context),
                        "balance": PanelText.credits(user.balance), "deficit": PanelText.credits(user.deficit),
                        "backupValue": user.backup.map { PanelText.credits($0.value) } ?? "–",
                        "backedUp": user.backup.map { Self.time($0.lastUpdated, context) } ?? "–",
                        "deleted": user.deletedAt != nil,
                    ] as [String: Any]
                },
                "previous": (pageNumber > 1 ? link(pageNumber - 1) : nil),
                "next": (result.hasMore ? link(pageNumber + 1) : nil),
            ], context: context)
    }

    func user(
        _ request: Request, _ context: CofferRequestContext, supportId: String? = nil, error: String? = nil,
        errorStatus: HTTPResponse.Status = .badRequest
    ) async throws -> Response {
        let session = try context.requireSession()
        let supportId = try supportId ?? context.parameters.require("supportId")
        let detail: UserDetail
        do {
            detail = try await service.user(scope: scope(session), supportId: supportId)
        } catch let failure as AdminError {
            return message(
                "No such user", failure.description, link: "/admin/users", linkText: "Back to users",
                context: context, status: failure.status)
        }
        let backup = detail.user.backup
        let backupNote =
            backup.map { "backup, written by \($0.writer) \($0.writerName) at \(Self.time($0.lastUpdated, context))" }
            ?? "no backup from the device yet"
        let balanceNote =
            detail.walletMode == .server
            ? "The server owns this balance: setting it adds an adjustment to the ledger."
            : "The app owns this balance: setting it writes an admin backup, which the app accepts on its next sync."
        return page(
            "user",
            [
                "title": detail.user.supportId, "onUsers": true, "walletMode": detail.walletMode,
                "user": [
                    "supportId": detail.user.supportId, "balance": PanelText.credits(detail.user.balance),
                    "deficit": PanelText.credits(detail.user.deficit),
                ],
                "identity": detail.mergedInto.map { "Merged into \($0)" }
                    ?? detail.appleAccount.map { "Apple account customer (\($0.environment.rawValue) data)" }
                    ?? "Anonymous install",
                "mergedInto": detail.mergedInto,
                "canMerge": detail.appleAccount == nil && detail.mergedInto == nil && detail.user.deletedAt == nil,
                "canChange": detail.user.deletedAt == nil && detail.mergedInto == nil,
                "deleted": detail.user.deletedAt.map {
                    "Deleted at the customer's request on \(Self.time($0, context)): the app's sign-in, devices, "
                        + "backups, the Apple account link and written reasons are removed; the purchases and the "
                        + "ledger stay, anonymised, so totals add up."
                },
                "backupValue": backup.map { PanelText.credits($0.value) } ?? "–", "backupNote": backupNote,
                "walletStory": Self.walletStory(detail, context),
                "subscriptions": detail.subscriptions.map { subscription in
                    [
                        "group": subscription.group, "product": subscription.product,
                        "state": subscription.state.rawValue,
                        "stateClass": subscription.state.rawValue.replacingOccurrences(of: " ", with: "-"),
                        "sentence": subscription.sentence { Self.time($0, context) },
                        "started": subscription.startedAt.map { Self.time($0, context) } ?? "–",
                        "periods": PanelText.count(subscription.paidPeriods),
                        "otherEnvironment": subscription.dataEnvironment.map {
                            $0 != DataEnvironment(session.environment)
                        } ?? false,
                        "dataEnvironment": subscription.dataEnvironment?.rawValue ?? "",
                        "originalTransactionId": subscription.originalTransactionId,
                    ] as [String: Any]
                },
                "pendingGrants": [
                    "grants": grantRows(detail.grants.filter { $0.status == .pending }, back: "user", context)
                ],
                "entitlementCount": detail.entitlements.count,
                "entitlements": (detail.entitlements.isEmpty ? nil : detail.entitlements.joined(separator: ", ")),
                "balanceNote": balanceNote, "error": error,
                "notice": Self.notice(request.uri.queryParameters.get("notice")),
                "purchases": detail.purchases.map { purchase in
                    [
                        "at": Self.time(purchase.purchaseDate, context), "product": purchase.product,
                        "productId": purchase.productId,
                        "quantity": purchase.quantity > 1 ? "× \(PanelText.count(purchase.quantity))" : "",
                        "price": purchase.priceText ?? "–", "storefront": purchase.storefront ?? "",
                        "status": purchase.status == .revoked ? "refunded" : purchase.status.rawValue,
                        "credits": purchase.credits.map(PanelText.credits) ?? "",
                        "refund": purchase.refundedAt.map {
                            "\(Self.time($0, context)): \(purchase.refundReasonText ?? "")"
                        } ?? "",
                        "familyShared": purchase.familyShared, "transactionId": purchase.transactionId,
                        "otherEnvironment": purchase.dataEnvironment?.rawValue ?? "",
                        "fromOtherEnvironment": purchase.dataEnvironment.map {
                            $0 != DataEnvironment(session.environment)
                        } ?? false,
                    ] as [String: Any]
                },
                "verify": detail.verifyReport.map { report in
                    [
                        "at": Self.time(report.reportedAt, context), "summary": report.summary,
                        "items": report.items.prefix(100).map { item in
                            [
                                "transactionId": item.transaction.transactionId,
                                "product": service.catalog.product(id: item.transaction.productId)?.name
                                    ?? item.transaction.productId,
                                "verdict": VerifyReportView.words(item.verdict),
                                "warn": item.verdict == .couldNotBeVerified,
                                "state": (item.transaction.isFinished ? "finished" : "unfinished")
                                    + (item.transaction.isVerified ? "" : ", not verified by StoreKit"),
                            ] as [String: Any]
                        },
                    ] as [String: Any]
                },
                "timeline": detail.timeline.map { item in
                    [
                        "at": Self.time(item.at, context), "kind": item.kind.rawValue, "summary": item.summary,
                        "credits": item.credits.map(PanelText.change) ?? "",
                        "balanceAfter": item.balanceAfter.map(PanelText.credits) ?? "",
                        "otherEnvironment": item.dataEnvironment?.rawValue ?? "",
                        "fromOtherEnvironment": item.dataEnvironment.map { $0 != DataEnvironment(session.environment) }
                            ?? false,
                    ] as [String: Any]
                },
            ], context: context, status: error == nil ? .ok : errorStatus)
    }

    /// `POST /admin/users/{supportId}/balance`: first a page showing the balance before and after, then the
    /// change, refused if the balance moved in between.
    /// The device's backup beside the server's ledger, in words: which one is the balance, and why they can
    /// differ.
    static func walletStory(_ detail: UserDetail, _ context: CofferRequestContext) -> String {
        let ledger = PanelText.credits(detail.user.balance)
        guard let backup = detail.user.backup else {
            return detail.walletMode == .server
                ? "The server keeps this customer's balance: \(ledger) credits in its ledger."
                : "The app keeps the balance on the device and has not backed it up here yet; the server's ledger "
                    + "holds \(ledger) credits of purchases and grants it delivered."
        }
        let copy = PanelText.credits(backup.value)
        let when = Self.time(backup.lastUpdated, context)
        let writer = backup.writer == "admin" ? "support (\(backup.writerName))" : "the device \(backup.writerName)"
        if detail.walletMode == .server {
            return "The server keeps this customer's balance: \(ledger) credits in its ledger. The backup "
                + "(\(copy), written by \(writer) at \(when)) is the app's own copy and is not the balance."
        }
        let difference =
            backup.value == detail.user.balance
            ? "The two agree."
            : "They differ by \(PanelText.change(backup.value - detail.user.balance)): what the app spent or earned on "
                + "the device, which only the backup knows."
        return "The app keeps the balance on the device: \(copy) credits, backed up by \(writer) at \(when), and "
            + "restored from there after a reinstall. The server's ledger holds \(ledger) credits of the purchases, "
            + "grants and refunds it handled. " + difference
    }

    func setBalance(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        let (session, form) = try await checkedForm(request, context)
        _ = try context.requireOwner()
        let supportId = try context.parameters.require("supportId")
        guard let balance = PanelText.amount(form["balance"] ?? "") else {
            return try await user(
                request, context, error: "The balance must be a whole number, e.g. 1,200,000 or 1200000.")
        }
        let reason: String
        do {
            _ = try SupportRules.balance(balance)
            reason = try SupportRules.reason(form["reason"] ?? "")
        } catch {
            return try await user(request, context, error: error.description)
        }
        let detail: UserDetail
        do {
            detail = try await service.user(scope: scope(session), supportId: supportId)
        } catch let error as AdminError {
            return try await user(request, context, error: error.description)
        }
        let current = detail.editableBalance
        guard form["confirm"] == "yes" else {
            let change = balance - current
            return page(
                "confirm",
                [
                    "title": "Set the balance", "onUsers": true,
                    "heading": "Set the balance of \(detail.user.supportId) to \(PanelText.credits(balance))?",
                    "explanation":
                        (detail.walletMode == .server
                        ? "The ledger takes an adjustment of \(PanelText.change(change)) credits"
                        : "Coffer writes an admin backup the app accepts on its next sync "
                            + "(\(PanelText.change(change)) credits)")
                        + ", recorded in the audit log with the reason \"\(reason)\".",
                    "beforeAfter": [
                        "label": detail.walletMode == .server ? "Balance" : "Backed-up balance",
                        "before": PanelText.credits(current), "after": PanelText.credits(balance),
                    ],
                    "action": "/admin/users/\(URLText.escape(detail.user.supportId))/balance",
                    "button": "Set the balance to \(PanelText.credits(balance))",
                    "cancel": "/admin/users/\(URLText.escape(detail.user.supportId))",
                    "fields": [
                        ["name": "balance", "value": String(balance)], ["name": "reason", "value": reason],
                        ["name": "expected", "value": String(current)], ["name": "confirm", "value": "yes"],
                    ],
                ], context: context)
        }
        // The balance the confirmation page showed, checked inside the edit's transaction.
        guard let expected = form["expected"].flatMap({ Int64($0) }) else {
            return try await user(request, context, error: "The confirmation is incomplete; set the balance again.")
        }
        do {
            try await service.requireInScope(scope(session), supportId: supportId)
            _ = try await service.setBalance(
                environment: scope(session).environment, supportId: supportId, balance: balance, expected: expected,
                reason: reason, actor: context.adminActor)
        } catch let error as AdminError {
            return try await user(request, context, error: error.description)
        }
        return Self.redirect("/admin/users/\(URLText.escape(supportId))?notice=balance")
    }

    /// `POST /admin/users/{supportId}/merge`: first a confirmation page naming both customers, then the merge.
    func merge(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        let (session, form) = try await checkedForm(request, context)
        _ = try context.requireOwner()
        let supportId = try context.parameters.require("supportId")
        let into = (form["into"] ?? "").trimmingCharacters(in: .whitespaces)
        let code = (form["code"] ?? "").trimmingCharacters(in: .whitespaces)
        let overrideReason = (form["overrideReason"] ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
        let intoCode = (form["intoCode"] ?? "").trimmingCharacters(in: .whitespaces)
        let consent: MergeConsent
        do {
            consent = try MergeConsent(code: code, overrideReason: overrideReason)
        } catch {
            return try await user(request, context, error: error.description)
        }
        guard form["confirm"] == "yes" else {
            let from: UserDetail
            let account: UserDetail
            let tokens: TokenCounts
            do {
                from = try await service.user(scope: scope(session), supportId: supportId)
                account = try await service.user(scope: scope(session), supportId: into)
                tokens = try await service.tokenCounts(environment: scope(session).environment, supportId: supportId)
            } catch let error as AdminError {
                return try await user(request, context, error: error.description)
            }
            return page(
                "confirm",
                [
                    "title": "Merge customers", "onUsers": true,
                    "heading": "Merge \(from.user.supportId) into \(account.user.supportId)?",
                    "explanation":
                        "\(from.user.supportId) (anonymous, balance \(PanelText.credits(from.user.balance)), deficit "
                        + "\(PanelText.credits(from.user.deficit)), backup "
                        + "\(from.user.backup.map { PanelText.credits($0.value) } ?? "none")) joins "
                        + "\(account.user.supportId) (Apple account, balance \(PanelText.credits(account.user.balance))). Its "
                        + (from.walletMode == .server ? "balance and deficit" : "last backed-up balance")
                        + ", purchases, grants and history move once. "
                        + PanelText.mergedTokens(tokens, into: account.user.supportId)
                        + " This cannot be undone.",
                    "action": "/admin/users/\(URLText.escape(from.user.supportId))/merge",
                    "button": "Merge into \(account.user.supportId)",
                    "cancel": "/admin/users/\(URLText.escape(from.user.supportId))",
                    "fields": [
                        ["name": "into", "value": account.user.supportId], ["name": "confirm", "value": "yes"],
                        ["name": "code", "value": code], ["name": "overrideReason", "value": overrideReason],
                        ["name": "intoCode", "value": intoCode],
                    ],
                ], context: context)
        }
        let done: MergeResponse
        do {
            try await service.requireInScope(scope(session), supportId: supportId)
            try await service.requireInScope(scope(session), supportId: into)
            done = try await service.mergeUsers(
                environment: scope(session).environment, from: supportId, into: into, consent: consent,
                intoCode: intoCode, actor: context.adminActor)
        } catch let error as AdminError {
            return try await user(request, context, error: error.description)
        }
        return Self.redirect("/admin/users/\(URLText.escape(done.into))?notice=merged")
    }

    /// `POST /admin/users/{supportId}/delete` (owners): first a confirmation page saying what is removed and
    /// what stays, then the deletion.
    func deleteCustomer(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        let (session, form) = try await checkedForm(request, context)
        _ = try context.requireOwner()
        let supportId = try context.parameters.require("supportId")
        guard form["confirm"] == "yes" else {
            let detail: UserDetail
            do {
                detail = try await service.user(scope: scope(session), supportId: supportId)
            } catch let error as AdminError {
                return try await user(request, context, error: error.description)
            }
            let id = detail.user.supportId
            return page(
                "confirm",
                [
                    "title": "Delete customer", "onUsers": true,
                    "heading": "Delete \(id) at the customer's request?",
                    "explanation":
                        "For a data request (App Store guideline 5.1.1(v)). The app's sign-in stops working (within a "
                        + "minute on every instance); "
                        + "its devices, push tokens, backups, the link to the Apple account and every reason written "
                        + "on its grants and ledger entries are removed; pending grants are cancelled. A closing "
                        + "entry takes the balance of \(PanelText.credits(detail.user.balance)) and the deficit of "
                        + "\(PanelText.credits(detail.user.deficit)) to zero. The purchases and the ledger's amounts "
                        + "stay, anonymised, so no purchase is ever credited twice and the totals still add up; the "
                        + "audit log keeps who deleted it. This cannot be undone.",
                    "beforeAfter": [
                        "label": "Balance", "before": PanelText.credits(detail.user.balance), "after": "0",
                    ],
                    "action": "/admin/users/\(URLText.escape(id))/delete",
                    "button": "Delete \(id)",
                    "cancel": "/admin/users/\(URLText.escape(id))",
                    "fields": [["name": "confirm", "value": "yes"]],
                ], context: context)
        }
        do {
            try await service.requireInScope(scope(session), supportId: supportId)
            _ = try await service.deleteUser(
                environment: scope(session).environment, supportId: supportId, actor: context.adminActor)
        } catch let error as AdminError {
            return try await user(request, context, error: error.description)
        }
        return Self.redirect("/admin/users/\(URLText.escape(supportId))?notice=customer-deleted")
    }

    /// `GET /admin/settings`: the signed-in admin's own settings (the time zone beside UTC).
    func settings(_ request: Request, _ context: CofferRequestContext, error: String? = nil) async throws
        -> Response
    {
        let session = try context.requireSession()
        let current = context.adminTimeZone?.identifier ?? "UTC"
        return page(
            "settings",
            [
                "title": "Settings", "onSettings": true, "error": error,
                "notice": Self.notice(request.uri.queryParameters.get("notice")),
                "zones": PanelText.timeZones.map { ["name": $0, "selected": $0 == current] as [String: Any] },
                "example": PanelText.time(now, in: context.adminTimeZone),
                "twoFactorOn": context.panelAdmin?.hasTwoFactor == true,
                "recoveryCodesLeft": context.panelAdmin?.recoveryCodeHashes.count ?? 0,
                "role": context.panelAdmin?.role.rawValue ?? "",
                "grantLimit": context.panelAdmin?.grantCeiling.map(PanelText.credits) ?? "no limit",
            ], context: context, status: error == nil ? .ok : .badRequest)
    }

    /// `POST /admin/settings`.
    func saveSettings(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        let (session, form) = try await checkedForm(request, context)
        let name = form["timeZone"] ?? ""
        guard let zone = PanelText.timeZone(name) else {
            return try await settings(request, context, error: "\(name) is not a time zone this server knows.")
        }
        let stored = zone.identifier == "UTC" || zone.identifier == "GMT" ? nil : zone.identifier
        try await signIn.setTimeZone(of: session.adminName, to: stored)
        return Self.redirect("/admin/settings?notice=settings")
    }

    func confirmDeleteAll(_ context: CofferRequestContext) async throws -> Response {
        let session = try context.requireOwner()
        guard session.environment == .sandbox else {
            return message(
                "Not in Production", "Grants can be deleted in bulk in Sandbox only.", link: "/admin/grants",
                linkText: "Back to grants", context: context, status: .forbidden)
        }
        let explanation =
            scope(session).sandboxMarkedOnly
            ? "This removes every grant to this Production server's test customers (App Review, TestFlight and "
                + "sandbox testers: their AppTransaction or purchases are Apple's Sandbox), pending and claimed. "
                + "Credits already claimed stay in the ledger. No real customer's grant is touched."
            : "This removes all Sandbox grants, pending and claimed (test data). Credits already claimed "
                + "stay in the ledger. Production is not touched."
        return page(
            "confirm",
            [
                "title": "Delete all grants", "onGrants": true, "heading": "Delete every Sandbox grant?",
                "explanation": explanation,
                "action": "/admin/grants/delete-all", "button": "Delete all Sandbox grants",
                "cancel": "/admin/grants", "fields": [["name": "confirm", "value": "yes"]],
            ], context: context)
    }

    func deleteAll(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        let (session, form) = try await checkedForm(request, context)
        _ = try context.requireOwner()
        guard form["confirm"] == "yes" else { return try await confirmDeleteAll(context) }
        do {
            _ = try await service.deleteTestGrants(scope: scope(session), actor: context.adminActor)
        } catch let error as AdminError {
            return message(
                "Not deleted", error.description, link: "/admin/grants", linkText: "Back to grants",
                context: context, status: error.status)
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
            ], context: context)
    }

    func switchEnvironment(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        let (session, form) = try await checkedForm(request, context)
        guard let environment = CofferCore.AppStoreEnvironment(rawValue: form["environment"] ?? "") else {
            return Self.redirect("/admin")
        }
        if environment == .production, form["confirm"] != "yes" {
            return Self.redirect("/admin/environment?to=Production")
        }
        try await signIn.switchEnvironment(of: session, to: environment)
        return Self.redirect("/admin")
    }

    /// `GET /admin/audit[?admin=&customer=&action=]`: the newest 200 matching, and a CSV link for all (to 10,000).
    func audit(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        let session = try context.requireSession()
        let query = AuditQuery(request)
        let events: [AuditEvent]
        do {
            events = try await service.auditLog(environment: scope(session).environment, query: query)
        } catch let error as AdminError {
            return page(
                "audit", ["title": "Audit log", "onAudit": true, "error": error.description], context: context,
                status: .badRequest)
        }
        let rows = events.map { event -> [String: Any] in
            [
                "at": Self.time(event.at, context), "actor": event.actor, "action": event.action,
                "subject": event.subject,
                "before": event.before ?? "", "after": event.after ?? "",
            ]
        }
        var csv = "/admin/audit.csv"
        let filters = [("admin", query.admin), ("customer", query.subject), ("action", query.action)]
            .compactMap { name, value in value.map { "\(name)=\(URLText.escape($0))" } }
        if !filters.isEmpty { csv += "?" + filters.joined(separator: "&") }
        return page(
            "audit",
            [
                "title": "Audit log", "onAudit": true, "events": rows, "admin": query.admin ?? "",
                "customer": query.subject ?? "", "action": query.action ?? "", "csv": csv,
                "filtered": !filters.isEmpty,
            ], context: context)
    }

    /// `GET /admin/audit.csv[?admin=&customer=&action=]`: the matching events, newest first, up to 10,000.
    func auditCSV(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        let session = try context.requireSession()
        let events = try await service.auditLog(
            environment: scope(session).environment, query: AuditQuery(request),
            limit: AdminService.auditExportLimit)
        return Self.download(
            AdminService.auditCSV(events), type: "text/csv; charset=utf-8",
            filename: "coffer-audit-\(session.environment.rawValue.lowercased()).csv")
    }

    /// `GET /admin/users/{supportId}/export.json|csv`: the customer's history for a ticket or a data request,
    /// audited.
    func exportUser(_ request: Request, _ context: CofferRequestContext, format: String) async throws -> Response {
        let session = try context.requireSession()
        let supportId = try context.parameters.require("supportId")
        let detail: UserDetail
        do {
            try await service.requireInScope(scope(session), supportId: supportId)
            detail = try await service.exportUser(
                environment: scope(session).environment, supportId: supportId, format: format, actor: context.adminActor
            )
        } catch let error as AdminError {
            return message(
                "No such user", error.description, link: "/admin/users", linkText: "Back to users", context: context,
                status: error.status)
        }
        let name = "coffer-\(detail.user.supportId)"
        if format == "csv" {
            return Self.download(
                AdminService.timelineCSV(detail), type: "text/csv; charset=utf-8", filename: name + ".csv")
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        return Self.download(
            String(decoding: try encoder.encode(detail), as: UTF8.self), type: "application/json",
            filename: name + ".json")
    }
}
