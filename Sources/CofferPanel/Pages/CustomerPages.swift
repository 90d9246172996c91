import CofferAPI
import CofferAdmin
import CofferCore
import CofferStore
import Foundation

/// `/admin/users`: a search and a page of customers.
struct UsersPage: PanelPage {
    static let template = "users"
    var section: PanelSection? { .users }

    /// What the search matched by.
    enum Match: PanelChoice { case transactionId, orderId, cloudKitRecordName, nothing }

    var query: String
    var matched: Match?
    var users: [Row] = []
    var previous: String?
    var next: String?

    struct Row: Sendable {
        var supportId, created, balance, deficit, backupValue, backedUp: String
        var deleted: Bool
    }

    /// The page for a query that was refused.
    init(query: String) { self.query = query }

    init(query: String, result: UserSearchResult, page: Int, time: (Date) -> String) {
        self.query = query
        matched =
            switch result.matchedBy {
            case .transactionId: .transactionId
            case .orderId: .orderId
            case .cloudKitRecordName: .cloudKitRecordName
            case .nothing: .nothing
            case .all, .supportId: nil
            }
        users = result.users.map { user in
            Row(
                supportId: user.supportId, created: time(user.createdAt), balance: PanelText.credits(user.balance),
                deficit: PanelText.credits(user.deficit),
                backupValue: user.backup.map { PanelText.credits($0.value) } ?? "–",
                backedUp: user.backup.map { time($0.lastUpdated) } ?? "–", deleted: user.deletedAt != nil)
        }
        let link = { (number: Int) in
            "/admin/users?page=\(number)" + (query.isEmpty ? "" : "&q=" + URLText.escape(query))
        }
        previous = page > 1 ? link(page - 1) : nil
        next = result.hasMore ? link(page + 1) : nil
    }
}

/// `/admin/users/{supportId}`: a customer's balance, backup, subscriptions, purchases, the app's last Verify
/// Purchases, pending grants and timeline, with support's actions.
struct CustomerPage: PanelPage {
    static let template = "user"
    var section: PanelSection? { .users }

    var user: Figures
    var walletMode: String
    var serverWallet: Bool
    var mergedInto: String?
    /// The environment of the Apple account's data, for an Apple account customer.
    var appleAccount: String?
    /// Apple's record of the customer's app purchase, in words, for an Apple account customer.
    var appTransaction: String?
    var canMerge: Bool
    var canChange: Bool
    /// Whether support can extend a subscription here: a subscription paid up or in Apple's grace period.
    var canExtend: Bool
    /// The entitlements support may grant for a time here (the catalog's), none for a customer who cannot change.
    var grantableEntitlements: [String]
    var canGrantEntitlement: Bool
    var entitlementGrants: [EntitlementGrantRow]
    var discrepancies: [DiscrepancyRow]
    var hasDiscrepancies: Bool

    /// What the latest reconciliation with Apple's history found about one transaction.
    struct DiscrepancyRow: Sendable {
        var foundAt, transactionId, productId, kind, words: String
        var detail: String?
        var repairedAt: String?
    }

    /// An entitlement granted for a time.
    struct EntitlementGrantRow: Sendable {
        var id, entitlement, startsAt, endsAt, state, stateClass, createdBy, reason: String
        var active: Bool
    }
    var deletedAt: String?
    var backup: Backup?
    var backupValue: String
    var subscriptions: [Subscription]
    var pendingGrants: GrantRows
    var entitlementCount: Int
    var entitlements: String?
    var purchases: [Purchase]
    var verify: Verify?
    var refundRequests: [RefundRequest]
    var consent: String
    var timeline: [TimelineRow]
    /// The currencies other than the default, each with its balance and deficit, for a catalog of several.
    var currencies: [CurrencyFigure]
    /// The currencies a grant may be in, the default first: for a catalog of several, in the server wallet.
    var grantCurrencies: [CurrencyChoice]
    var choosesCurrency: Bool

    /// A currency support may name.
    struct CurrencyChoice: Sendable {
        var id, name: String
    }

    /// Another currency's figures.
    struct CurrencyFigure: Sendable {
        var id, name, balance, deficit: String
        var owes: Bool
    }

    /// One of Apple's refund requests and what Coffer answered.
    struct RefundRequest: Sendable {
        var at, transactionId, outcome, reason: String
        var answer: String?
        var sent: Bool
    }

    struct Figures: Sendable {
        var supportId, balance, deficit: String
    }

    /// The device's backup beside the ledger.
    struct Backup: Sendable {
        var value, writer, writerName: String
        var byDevice: Bool
        var at: String
        var agrees: Bool
        var difference: String
        /// The other currencies backed up (`40 Gems`), `nil` for none.
        var others: String?
    }

    struct Subscription: Sendable {
        var group, product, state, stateClass, sentence, started, periods: String
        var otherEnvironment: Bool
        var dataEnvironment, originalTransactionId: String
    }

    struct Purchase: Sendable {
        var at, product, productId: String
        var quantity: String?
        var price, storefront, status, credits: String
        var refundedAt: String?
        var refundReason: String
        var familyShared: Bool
        var transactionId, otherEnvironment: String
        var fromOtherEnvironment: Bool
    }

    struct Verify: Sendable {
        var at, summary: String
        var items: [Item]

        struct Item: Sendable {
            var transactionId, product, verdict: String
            var warn: Bool
            var finished: Bool
            var verified: Bool
        }
    }

    struct TimelineRow: Sendable {
        var at, kind, summary, credits, balanceAfter, otherEnvironment: String
        var fromOtherEnvironment: Bool
    }

    init(_ detail: UserDetail, view: DataEnvironment, catalog: Catalog, time: (Date) -> String) {
        let summary = detail.user
        grantCurrencies =
            catalog.currencies.count > 1
            ? catalog.currencies.map { CurrencyChoice(id: $0.id.rawValue, name: $0.name) } : []
        choosesCurrency = !grantCurrencies.isEmpty
        currencies = detail.balances.keys.filter { $0 != catalog.defaultCurrency.rawValue }.sorted().map { id in
            let deficit = detail.deficits[id] ?? 0
            return CurrencyFigure(
                id: id, name: Currency(rawValue: id).map(catalog.currencyName) ?? id,
                balance: PanelText.credits(detail.balances[id] ?? 0), deficit: PanelText.credits(deficit),
                owes: deficit > 0)
        }
        user = Figures(
            supportId: summary.supportId, balance: PanelText.credits(summary.balance),
            deficit: PanelText.credits(summary.deficit))
        walletMode = detail.walletMode.rawValue
        serverWallet = detail.walletMode == .server
        mergedInto = detail.mergedInto
        appleAccount = detail.appleAccount?.environment.rawValue
        if detail.appleAccount != nil {
            appTransaction =
                detail.appTransaction.map { app in
                    "Apple's record: first got the app \(app.originalPurchaseDate.map(time) ?? "on an unknown date")"
                        + (app.originalApplicationVersion.map { ", version \($0)" } ?? "")
                        + (app.originalPlatform.map { " on \($0)" } ?? "")
                        + (app.environment.map { " (\($0) data)" } ?? "") + ", app transaction \(app.appTransactionId)."
                }
                ?? "Apple's record of the app purchase is not available (no App Store Server API key, or Apple did not answer)."
        }
        canMerge = detail.appleAccount == nil && detail.mergedInto == nil && summary.deletedAt == nil
        canChange = summary.deletedAt == nil && detail.mergedInto == nil
        canExtend =
            canChange && detail.subscriptions.contains { [.active, .expiring, .inGrace].contains($0.state) }
        grantableEntitlements =
            canChange
            ? Array(Set(catalog.products.flatMap(\.entitlements) + catalog.loyalty.flatMap(\.entitlements))).sorted()
            : []
        canGrantEntitlement = !grantableEntitlements.isEmpty
        entitlementGrants = detail.entitlementGrants.map { grant in
            let state = grant.cancelledAt != nil ? "cancelled" : grant.active ? "active" : "ended"
            return EntitlementGrantRow(
                id: grant.id.uuidString.lowercased(), entitlement: grant.entitlement, startsAt: time(grant.startsAt),
                endsAt: time(grant.endsAt), state: state, stateClass: state == "active" ? "delivered" : "",
                createdBy: grant.createdBy, reason: grant.reason, active: grant.active)
        }
        discrepancies = detail.discrepancies.map {
            DiscrepancyRow(
                foundAt: time($0.foundAt), transactionId: $0.transactionId, productId: $0.productId, kind: $0.kind,
                words: $0.words, detail: $0.detail.isEmpty ? nil : $0.detail, repairedAt: $0.repairedAt.map(time))
        }
        hasDiscrepancies = !discrepancies.isEmpty
        deletedAt = summary.deletedAt.map(time)
        backup = summary.backup.map { backup in
            Backup(
                value: PanelText.credits(backup.value), writer: backup.writer.rawValue, writerName: backup.writerName,
                byDevice: backup.writer == .device, at: time(backup.lastUpdated),
                agrees: backup.value == summary.balance,
                difference: PanelText.change(backup.value - summary.balance),
                others: (backup.currencies ?? [:]).isEmpty
                    ? nil
                    : (backup.currencies ?? [:]).sorted { $0.key < $1.key }.map { id, balance in
                        "\(PanelText.credits(balance)) \(Currency(rawValue: id).map(catalog.currencyName) ?? id)"
                    }.joined(separator: ", "))
        }
        backupValue = summary.backup.map { PanelText.credits($0.value) } ?? "–"
        let other = { (data: DataEnvironment?) in data.map { $0 != view } ?? false }
        subscriptions = detail.subscriptions.map { subscription in
            Subscription(
                group: subscription.group, product: subscription.product, state: subscription.state.rawValue,
                stateClass: subscription.state.rawValue.replacingOccurrences(of: " ", with: "-"),
                sentence: subscription.sentence(time), started: subscription.startedAt.map(time) ?? "–",
                periods: PanelText.count(subscription.paidPeriods),
                otherEnvironment: other(subscription.dataEnvironment),
                dataEnvironment: subscription.dataEnvironment?.rawValue ?? "",
                originalTransactionId: subscription.originalTransactionId)
        }
        pendingGrants = GrantRows(detail.grants.filter { $0.status == .pending }, back: "user", time: time)
        entitlementCount = detail.entitlements.count
        entitlements = detail.entitlements.isEmpty ? nil : detail.entitlements.joined(separator: ", ")
        purchases = detail.purchases.map { purchase in
            Purchase(
                at: time(purchase.purchaseDate), product: purchase.product, productId: purchase.productId,
                quantity: purchase.quantity > 1 ? PanelText.count(purchase.quantity) : nil,
                price: purchase.priceText ?? "–", storefront: purchase.storefront ?? "",
                status: purchase.status == .revoked ? "refunded" : purchase.status.rawValue,
                credits: purchase.credits.map(PanelText.credits) ?? "", refundedAt: purchase.refundedAt.map(time),
                refundReason: purchase.refundReasonText ?? "", familyShared: purchase.familyShared,
                transactionId: purchase.transactionId, otherEnvironment: purchase.dataEnvironment?.rawValue ?? "",
                fromOtherEnvironment: other(purchase.dataEnvironment))
        }
        verify = detail.verifyReport.map { report in
            Verify(
                at: time(report.reportedAt), summary: report.summary,
                items: report.items.prefix(100).map { item in
                    Verify.Item(
                        transactionId: item.transaction.transactionId,
                        product: catalog.product(id: item.transaction.productId)?.name ?? item.transaction.productId,
                        verdict: VerifyReportView.words(item.verdict), warn: item.verdict == .couldNotBeVerified,
                        finished: item.transaction.isFinished, verified: item.transaction.isVerified)
                })
        }
        refundRequests = detail.refundRequests.map { request in
            RefundRequest(
                at: time(request.requestedAt), transactionId: request.transactionId,
                outcome: request.sent ? "answered" : "not answered", reason: request.reason, answer: request.answer,
                sent: request.sent)
        }
        consent =
            switch detail.consent?.customerConsented {
            case true?: "The customer consented to share consumption data with Apple."
            case false?: "The customer declined to share consumption data with Apple: refund requests are not answered."
            case nil: "The customer has not been asked to share consumption data with Apple."
            }
        timeline = detail.timeline.map { item in
            TimelineRow(
                at: time(item.at), kind: item.kind.rawValue, summary: item.summary,
                credits: item.credits.map(PanelText.change) ?? "",
                balanceAfter: item.balanceAfter.map(PanelText.credits) ?? "",
                otherEnvironment: item.dataEnvironment?.rawValue ?? "",
                fromOtherEnvironment: other(item.dataEnvironment))
        }
    }
}

/// Grants as table rows, with a cancel button on the pending ones (the `grant-rows` partial).
struct GrantRows: Sendable {
    var grants: [Row]

    struct Row: Sendable {
        var id, created, supportId, credits, status, createdBy, reason: String
        var cancellable: Bool
        var back: String
        var cancelledBy: String?
        var cancelledAt: String?
    }

    init(_ grants: [GrantView], back: String, time: (Date) -> String) {
        self.grants = grants.map { grant in
            Row(
                id: grant.id.uuidString.lowercased(), created: time(grant.createdAt), supportId: grant.supportId,
                credits: PanelText.credits(grant.credits) + (grant.currency.map { " " + $0 } ?? ""),
                status: grant.status.rawValue, createdBy: grant.createdBy,
                reason: grant.reason, cancellable: grant.status == .pending, back: back,
                cancelledBy: grant.cancelledAt == nil ? nil : grant.cancelledBy ?? "?",
                cancelledAt: grant.cancelledAt.map(time))
        }
    }
}
