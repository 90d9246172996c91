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

/// The panel's dashboard: the figures, the money, and Apple's health.
extension AdminPanel {
    func dashboard(_ context: CofferRequestContext) async throws -> Response {
        let session = try context.requireSession()
        let figures = try await service.dashboard(environment: scope(session).environment)
        let health = try await service.appleHealth(environment: scope(session).environment)
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
                "otherEnvironment": scope(session).environment == .production ? "Sandbox" : "Production",
                "notice": scope(session).sandboxMarkedOnly
                    ? "This Production server keeps App Review's, TestFlight's and sandbox testers' customers among "
                        + "its own: in this Sandbox view, Users and Grants list only them, and \"Delete all test "
                        + "grants\" reaches only their grants. The figures below are the whole server's." : nil,
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
        let refusals = dependencies.metrics.notificationRefusals
        card["refusals"] =
            refusals.count == 0
            ? "None refused on this instance since \(Self.time(refusals.since, context))."
            : "\(PanelText.count(refusals.count)) refused on this instance since \(Self.time(refusals.since, context)); "
                + "the last at \(refusals.lastAt.map { Self.time($0, context) } ?? "?"): \(refusals.lastStatus ?? "?")"
        card["refusalsWarn"] = refusals.count > 0
        if dependencies.appStoreAPI == nil {
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
}
