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
        let health = try await service.appleHealth(environment: session.environment)
        return page(
            "dashboard",
            [
                "title": "Dashboard", "onDashboard": true,
                "figures": [
                    "users": PanelText.count(figures.users), "pendingGrants": PanelText.count(figures.pendingGrants),
                    "claimedGrants": PanelText.count(figures.claimedGrants),
                    "purchases": PanelText.count(figures.purchases), "refunds": PanelText.count(figures.refunds),
                    "usersInDeficit": PanelText.count(figures.usersInDeficit),
                    "outstandingDeficit": PanelText.credits(figures.outstandingDeficit),
                    "otherEnvironmentPurchases": PanelText.count(figures.otherEnvironmentPurchases),
                    "otherEnvironmentCustomers": PanelText.count(figures.otherEnvironmentCustomers),
                    "otherEnvironmentCredits": PanelText.credits(figures.otherEnvironmentCredits),
                    "otherEnvironmentSubscriptions": PanelText.count(figures.otherEnvironmentSubscriptions),
                ],
                "otherEnvironment": session.environment == .production ? "Sandbox" : "Production",
                "hasOtherEnvironment": figures.otherEnvironmentPurchases > 0 || figures.otherEnvironmentCustomers > 0,
                "chart": DashboardChart.svg(figures.days),
                "apple": appleHealth(health, context),
                "money": money(figures),
            ], context: context)
    }

    /// The dashboard's money: what Apple's price fields say was paid and refunded over the window, per currency,
    /// per product and per day, with the refund rate, the active subscriptions and the loyalty lifetimes earned.
    func money(_ figures: DashboardFigures) -> [String: Any] {
        let revenue = DashboardFigures.totals(figures.revenue) { _ in "" }
        let refunded = DashboardFigures.totals(figures.refunded) { _ in "" }
        let currencies = Set(revenue.map(\.currency) + refunded.map(\.currency)).sorted()
        func amount(
            _ rows: [(key: String, currency: String, count: Int, amount: Int64)], _ key: String, _ currency: String
        )
            -> (count: Int, amount: Int64)
        {
            rows.first { $0.key == key && $0.currency == currency }.map { ($0.count, $0.amount) } ?? (0, 0)
        }
        let byProduct = DashboardFigures.totals(figures.revenue, by: \.productId)
        let refundedByProduct = DashboardFigures.totals(figures.refunded, by: \.productId)
        let productKeys = Set(
            byProduct.map { [$0.key, $0.currency] } + refundedByProduct.map { [$0.key, $0.currency] }
        )
        .sorted { ($0[1], $0[0]) < ($1[1], $1[0]) }
        let dayKey: (MoneyFigures) -> String = { Self.day($0.day) }
        let byDay = DashboardFigures.totals(figures.revenue, by: dayKey)
        let refundedByDay = DashboardFigures.totals(figures.refunded, by: dayKey)
        let dayKeys = Set(byDay.map { [$0.key, $0.currency] } + refundedByDay.map { [$0.key, $0.currency] })
            .sorted { ($0[0], $0[1]) > ($1[0], $1[1]) }
        return [
            "currencies": currencies.map { currency in
                let paid = amount(revenue, "", currency)
                let back = amount(refunded, "", currency)
                return [
                    "currency": currency, "revenue": PanelText.money(paid.amount, currency: currency),
                    "purchases": PanelText.count(paid.count),
                    "refunded": PanelText.money(back.amount, currency: currency),
                    "refunds": PanelText.count(back.count),
                    "net": PanelText.money(paid.amount &- back.amount, currency: currency),
                ]
            },
            "products": productKeys.map { key in
                let paid = amount(byProduct, key[0], key[1])
                let back = amount(refundedByProduct, key[0], key[1])
                return [
                    "product": service.catalog.product(id: key[0])?.name.map { "\($0) (\(key[0]))" } ?? key[0],
                    "currency": key[1], "purchases": PanelText.count(paid.count),
                    "revenue": PanelText.money(paid.amount, currency: key[1]), "refunds": PanelText.count(back.count),
                    "refunded": PanelText.money(back.amount, currency: key[1]),
                ]
            },
            "days": dayKeys.map { key in
                let paid = amount(byDay, key[0], key[1])
                let back = amount(refundedByDay, key[0], key[1])
                return [
                    "day": key[0], "currency": key[1], "purchases": PanelText.count(paid.count),
                    "revenue": PanelText.money(paid.amount, currency: key[1]),
                    "refunded": PanelText.money(back.amount, currency: key[1]),
                ]
            },
            "refundRate": String(format: "%.1f%%", figures.refundRate * 100),
            "windowRefunds": PanelText.count(figures.windowRefunds),
            "windowPurchases": PanelText.count(figures.windowPurchases),
            "activeSubscriptions": PanelText.count(figures.activeSubscriptions),
            "loyaltyTotal": PanelText.count(figures.loyaltyLifetimes.reduce(0) { $0 + $1.count }),
            "loyalty": figures.loyaltyLifetimes.map { ["group": $0.group, "count": PanelText.count($0.count)] },
        ]
    }

    /// A UTC day as `2026-11-26`.
    static func day(_ date: Date) -> String {
        date.formatted(Date.ISO8601FormatStyle(timeZone: .gmt).year().month().day())
    }

    /// The dashboard's Apple card: what arrived, what was refused, what recovery found, each in words, with a
    /// warning when something needs a look.
    func appleHealth(_ health: AppleHealth, _ context: CofferRequestContext) -> [String: Any] {
        let now = now
        var card: [String: Any] = [:]
        if let last = health.lastNotification {
            let hours = now.timeIntervalSince(last.receivedAt) / 3_600
            card["last"] =
                "\(last.type)\(last.subtype.map { " (\($0))" } ?? "") at \(Self.time(last.receivedAt, context)), "
                + "\(Self.ago(hours)), from \(last.source == "recovery" ? "the recovery service" : "Apple")"
            // A live app with customers hears from Apple every day or two; three quiet days want a look.
            if hours > 72 {
                card["quiet"] =
                    "Nothing from Apple for \(Self.ago(hours).replacingOccurrences(of: " ago", with: "")): check the "
                    + "notification URL in App Store Connect (`coffer appstore test-notification` sends a test)."
            }
        } else {
            card["quiet"] =
                "No notification from Apple yet: set this server's /v1/apple/notifications as the App Store Server "
                + "Notifications URL (version 2) in App Store Connect."
        }
        card["types"] = health.lastWeek.map { ["type": $0.type, "count": PanelText.count($0.count)] }
        let refusals = api.dependencies.metrics.notificationRefusals
        card["refusals"] =
            refusals.count == 0
            ? "None refused on this instance since \(Self.time(refusals.since, context))."
            : "\(PanelText.count(refusals.count)) refused on this instance since \(Self.time(refusals.since, context)); "
                + "the last at \(refusals.lastAt.map { Self.time($0, context) } ?? "?"): \(refusals.lastStatus ?? "?")"
        card["refusalsWarn"] = refusals.count > 0
        if api.dependencies.appStoreAPI == nil {
            card["recovery"] =
                "Off: without the App Store Server API key (appstore.key.*), missed notifications are not recovered."
            card["recoveryWarn"] = true
        } else if let run = health.recovery {
            card["recovery"] =
                run.error.map { "The last run, at \(Self.time(run.at, context)), failed: \($0)" }
                ?? "The last run, at \(Self.time(run.at, context)), read \(PanelText.count(run.read)) notifications "
                + "from Apple's history, \(PanelText.count(run.new)) not seen before, and delivered "
                + "\(PanelText.count(run.filled)) missing transactions."
            card["recoveryWarn"] = run.error != nil
        } else {
            card["recovery"] = "On; it has not finished a run yet."
        }
        return card
    }

    /// "5 minutes ago", "3 hours ago", "4 days ago".
    static func ago(_ hours: Double) -> String {
        if hours < 1 { return "\(max(0, Int(hours * 60))) minutes ago" }
        if hours < 48 { return "\(Int(hours)) hours ago" }
        return "\(Int(hours / 24)) days ago"
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
            detail = try await service.user(environment: session.environment, supportId: supportId)
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
            detail.walletMode == "server"
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
                        "otherEnvironment": subscription.dataEnvironment.map { $0 != session.environment } ?? false,
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
                        "fromOtherEnvironment": purchase.dataEnvironment.map { $0 != session.environment } ?? false,
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
                        "fromOtherEnvironment": item.dataEnvironment.map { $0 != session.environment } ?? false,
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
            return detail.walletMode == "server"
                ? "The server keeps this customer's balance: \(ledger) credits in its ledger."
                : "The app keeps the balance on the device and has not backed it up here yet; the server's ledger "
                    + "holds \(ledger) credits of purchases and grants it delivered."
        }
        let copy = PanelText.credits(backup.value)
        let when = Self.time(backup.lastUpdated, context)
        let writer = backup.writer == "admin" ? "support (\(backup.writerName))" : "the device \(backup.writerName)"
        if detail.walletMode == "server" {
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
        let reason = (form["reason"] ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
        let detail: UserDetail
        do {
            detail = try await service.user(environment: session.environment, supportId: supportId)
        } catch let error as AdminError {
            return try await user(request, context, error: error.description)
        }
        let current = detail.walletMode == "server" ? detail.user.balance : detail.user.backup?.value ?? 0
        guard form["confirm"] == "yes" else {
            guard !reason.isEmpty else {
                return try await user(request, context, error: "A reason is required, e.g. \"Ticket #42\".")
            }
            let change = balance - current
            return page(
                "confirm",
                [
                    "title": "Set the balance", "onUsers": true,
                    "heading": "Set the balance of \(detail.user.supportId) to \(PanelText.credits(balance))?",
                    "explanation":
                        (detail.walletMode == "server"
                        ? "The ledger takes an adjustment of \(PanelText.change(change)) credits"
                        : "Coffer writes an admin backup the app accepts on its next sync "
                            + "(\(PanelText.change(change)) credits)")
                        + ", recorded in the audit log with the reason \"\(reason)\".",
                    "beforeAfter": [
                        "label": detail.walletMode == "server" ? "Balance" : "Backed-up balance",
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
        guard form["expected"] == String(current) else {
            return try await user(
                request, context,
                error: "The balance changed since the confirmation page (it is \(PanelText.credits(current)) now), "
                    + "so nothing was changed. Check it and set it again.")
        }
        do {
            _ = try await service.setBalance(
                environment: session.environment, supportId: supportId, balance: balance, reason: reason,
                actor: context.adminActor)
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
                from = try await service.user(environment: session.environment, supportId: supportId)
                account = try await service.user(environment: session.environment, supportId: into)
                tokens = try await service.tokenCounts(environment: session.environment, supportId: supportId)
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
                        + (from.walletMode == "server" ? "balance and deficit" : "last backed-up balance")
                        + ", purchases, grants and history move once. "
                        + PanelText.mergedTokens(tokens, into: account.user.supportId)
                        + " This cannot be undone.",
                    "action": "/admin/users/\(URLText.escape(from.user.supportId))/merge",
                    "button": "Merge into \(account.user.supportId)",
                    "cancel": "/admin/users/\(URLText.escape(from.user.supportId))",
                    "fields": [
                        ["name": "into", "value": account.user.supportId], ["name": "confirm", "value": "yes"],
                        ["name": "code", "value": code], ["name": "overrideReason", "value": overrideReason],
                    ],
                ], context: context)
        }
        let done: MergeResponse
        do {
            done = try await service.mergeUsers(
                environment: session.environment, from: supportId, into: into, consent: consent,
                actor: context.adminActor)
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
                detail = try await service.user(environment: session.environment, supportId: supportId)
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
            _ = try await service.deleteUser(
                environment: session.environment, supportId: supportId, actor: context.adminActor)
        } catch let error as AdminError {
            return try await user(request, context, error: error.description)
        }
        return Self.redirect("/admin/users/\(URLText.escape(supportId))?notice=customer-deleted")
    }

    func grants(
        _ request: Request, _ context: CofferRequestContext, error: String? = nil,
        errorStatus: HTTPResponse.Status = .badRequest
    ) async throws -> Response {
        let session = try context.requireSession()
        let status = request.uri.queryParameters.get("status").flatMap { GrantStatus(rawValue: String($0)) }
        let grants = try await service.grants(environment: session.environment, status: status)
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
                detail = try await service.user(environment: session.environment, supportId: supportId)
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
            grant = try await service.createGrant(
                environment: session.environment, supportId: supportId, credits: credits, reason: reason,
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
        let now = detail.walletMode == "server" ? detail.user.balance : detail.user.backup?.value ?? 0
        let (after, overflow) = now.addingReportingOverflow(credits)
        return [
            "label": detail.walletMode == "server"
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
            grant = try await service.grant(environment: session.environment, id: id)
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
            _ = try await service.cancelGrant(environment: session.environment, id: id, actor: context.adminActor)
        } catch let error as AdminError {
            return message(
                "Not cancelled", error.description, link: backLink, linkText: "Back", context: context,
                status: error.status)
        }
        return Self.redirect(backLink + (backLink.contains("?") ? "&" : "?") + "notice=cancelled")
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
        _ = try await store.setAdminTimeZone(name: session.adminName, timeZone: stored)
        return Self.redirect("/admin/settings?notice=settings")
    }

    func confirmDeleteAll(_ context: CofferRequestContext) async throws -> Response {
        let session = try context.requireOwner()
        guard session.environment == .sandbox else {
            return message(
                "Not in Production", "Grants can be deleted in bulk in Sandbox only.", link: "/admin/grants",
                linkText: "Back to grants", context: context, status: .forbidden)
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
            ], context: context)
    }

    func deleteAll(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        let (session, form) = try await checkedForm(request, context)
        _ = try context.requireOwner()
        guard form["confirm"] == "yes" else { return try await confirmDeleteAll(context) }
        do {
            _ = try await service.deleteAllGrants(environment: session.environment, actor: context.adminActor)
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
        guard let environment = CofferCore.Environment(rawValue: form["environment"] ?? "") else {
            return Self.redirect("/admin")
        }
        if environment == .production, form["confirm"] != "yes" {
            return Self.redirect("/admin/environment?to=Production")
        }
        try await store.setSessionEnvironment(tokenHash: session.tokenHash, environment: environment)
        return Self.redirect("/admin")
    }

    /// The audit log's filter from a query: an admin, a customer (Support ID) and an action (or family).
    static func auditQuery(_ request: Request) -> AuditQuery {
        func value(_ name: String) -> String? {
            let text = (request.uri.queryParameters.get(name) ?? "").trimmingCharacters(in: .whitespaces)
            return text.isEmpty ? nil : text
        }
        return AuditQuery(subject: value("customer"), admin: value("admin"), action: value("action"))
    }

    /// `GET /admin/audit[?admin=&customer=&action=]`: the newest 200 matching, and a CSV link for all (to 10,000).
    func audit(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        let session = try context.requireSession()
        let query = Self.auditQuery(request)
        let events: [AuditEvent]
        do {
            events = try await service.auditLog(environment: session.environment, query: query)
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
            environment: session.environment, query: Self.auditQuery(request), limit: AdminService.auditExportLimit)
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
            detail = try await service.exportUser(
                environment: session.environment, supportId: supportId, format: format, actor: context.adminActor)
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
