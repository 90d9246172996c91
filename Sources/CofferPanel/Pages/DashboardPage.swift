import CofferAdmin
import CofferCore
import CofferService
import CofferStore
import Foundation

/// `/admin`: the figures, the chart, the money and Apple's health.
struct DashboardPage: PanelPage {
    static let template = "dashboard"
    var section: PanelSection? { .dashboard }

    var figures: Figures
    var otherEnvironment: String
    var hasOtherEnvironment: Bool
    /// The chart's SVG, drawn on the server.
    var chart: String
    var money: Money
    var apple: AppleCard

    struct Figures: Sendable {
        var users, pendingGrants, claimedGrants, purchases, refunds, usersInDeficit, outstandingDeficit: String
        var otherEnvironmentPurchases, otherEnvironmentCustomers, otherEnvironmentCredits: String
        var otherEnvironmentSubscriptions: String
        /// The default currency's name, as the deficit's figure says it ("credits" for a catalog that lists none).
        var currencyName: String
        /// Each other currency some customer owes.
        var currencyDeficits: [CurrencyDeficit]

        struct CurrencyDeficit: Sendable { var currency, name, amount, users: String }
    }

    /// What Apple's price fields say was paid and refunded over the window, per currency, per product and per
    /// day, with the refund rate, the active subscriptions and the loyalty lifetimes earned.
    struct Money: Sendable {
        var currencies: [Currency]
        var products: [Product]
        var days: [Day]
        var refundRate, windowRefunds, windowPurchases, activeSubscriptions, loyaltyTotal: String
        var loyalty: [Loyalty]

        struct Currency: Sendable { var currency, revenue, purchases, refunded, refunds, net: String }
        struct Product: Sendable { var product, currency, purchases, revenue, refunds, refunded: String }
        struct Day: Sendable { var day, currency, purchases, revenue, refunded: String }
        struct Loyalty: Sendable { var group, count: String }
    }

    /// What arrived from Apple, what was refused, what recovery found.
    struct AppleCard: Sendable {
        var last: Last?
        var quiet: Quiet?
        var types: [TypeCount]
        var refusals: Refusals
        var refusalsWarn: Bool
        var recovery: Recovery
        var recoveryWarn: Bool
        var reconciliation: Reconciliation
        var reconciliationWarn: Bool

        struct Last: Sendable {
            var type: String
            var subtype: String?
            var at: String
            var ago: Elapsed
            var fromRecovery: Bool
        }

        /// Apple has been quiet for three days (`silentFor`), or never spoke (`never`).
        struct Quiet: Sendable {
            var silentFor: Elapsed?
            var never: Bool
        }

        struct TypeCount: Sendable { var type, count: String }

        struct Refusals: Sendable {
            var none: Bool
            var count: String
            var since: String
            var lastAt: String
            var lastStatus: String
        }

        /// Notification recovery: off without the API key, waiting for its first run, or its last run.
        struct Recovery: Sendable {
            var off: Bool
            var waiting: Bool
            var at: String?
            var failure: String?
            var read, new, filled: String
        }

        /// The reconciliation with Apple's history: off without the API key, waiting for its first run, under way,
        /// or its last run.
        struct Reconciliation: Sendable {
            var off: Bool
            var waiting: Bool
            var running: Bool
            /// Unfinished, its instance gone (its claim lapsed): the next run resumes it.
            var paused: Bool
            var started: String?
            var finished: String?
            var failure: String?
            var customers, found, repaired, left, failed: String
            var hasFailed: Bool
        }
    }

    /// A time since, in the largest unit that reads well: minutes under an hour, hours under two days, days.
    struct Elapsed: Sendable {
        var minutes: String?
        var hours: String?
        var days: String?

        init(hours: Double) {
            if hours < 1 {
                minutes = String(max(0, Int(hours * 60)))
            } else if hours < 48 {
                self.hours = String(Int(hours))
            } else {
                days = String(Int(hours / 24))
            }
        }
    }
}

extension DashboardPage.Money {
    init(_ figures: DashboardFigures, catalog: Catalog) {
        typealias Rows = [(key: String, currency: String, count: Int, amount: Int64)]
        func amount(_ rows: Rows, _ key: String, _ currency: String) -> (count: Int, amount: Int64) {
            rows.first { $0.key == key && $0.currency == currency }.map { ($0.count, $0.amount) } ?? (0, 0)
        }
        func keys(_ first: Rows, _ second: Rows) -> Set<[String]> {
            Set(first.map { [$0.key, $0.currency] } + second.map { [$0.key, $0.currency] })
        }
        let revenue = DashboardFigures.totals(figures.revenue) { _ in "" }
        let refunded = DashboardFigures.totals(figures.refunded) { _ in "" }
        let byProduct = DashboardFigures.totals(figures.revenue, by: \.productId)
        let refundedByProduct = DashboardFigures.totals(figures.refunded, by: \.productId)
        let dayKey: (MoneyFigures) -> String = {
            $0.day.formatted(Date.ISO8601FormatStyle(timeZone: .gmt).year().month().day())
        }
        let byDay = DashboardFigures.totals(figures.revenue, by: dayKey)
        let refundedByDay = DashboardFigures.totals(figures.refunded, by: dayKey)
        currencies = Set(revenue.map(\.currency) + refunded.map(\.currency)).sorted().map { currency in
            let paid = amount(revenue, "", currency)
            let back = amount(refunded, "", currency)
            return Currency(
                currency: currency, revenue: PanelText.money(paid.amount, currency: currency),
                purchases: PanelText.count(paid.count), refunded: PanelText.money(back.amount, currency: currency),
                refunds: PanelText.count(back.count),
                net: PanelText.money(paid.amount &- back.amount, currency: currency))
        }
        products = keys(byProduct, refundedByProduct).sorted { ($0[1], $0[0]) < ($1[1], $1[0]) }.map { key in
            let paid = amount(byProduct, key[0], key[1])
            let back = amount(refundedByProduct, key[0], key[1])
            return Product(
                product: catalog.product(id: key[0])?.name.map { "\($0) (\(key[0]))" } ?? key[0], currency: key[1],
                purchases: PanelText.count(paid.count), revenue: PanelText.money(paid.amount, currency: key[1]),
                refunds: PanelText.count(back.count), refunded: PanelText.money(back.amount, currency: key[1]))
        }
        days = keys(byDay, refundedByDay).sorted { ($0[0], $0[1]) > ($1[0], $1[1]) }.map { key in
            let paid = amount(byDay, key[0], key[1])
            let back = amount(refundedByDay, key[0], key[1])
            return Day(
                day: key[0], currency: key[1], purchases: PanelText.count(paid.count),
                revenue: PanelText.money(paid.amount, currency: key[1]),
                refunded: PanelText.money(back.amount, currency: key[1]))
        }
        refundRate = String(format: "%.1f%%", figures.refundRate * 100)
        windowRefunds = PanelText.count(figures.windowRefunds)
        windowPurchases = PanelText.count(figures.windowPurchases)
        activeSubscriptions = PanelText.count(figures.activeSubscriptions)
        loyaltyTotal = PanelText.count(figures.loyaltyLifetimes.reduce(0) { $0 + $1.count })
        loyalty = figures.loyaltyLifetimes.map { Loyalty(group: $0.group, count: PanelText.count($0.count)) }
    }
}

extension DashboardPage.AppleCard {
    init(
        _ health: AppleHealth, refusals tally: ServerMetrics.RefusalTally, recoveryOn: Bool, now: Date,
        time: (Date) -> String
    ) {
        if let last = health.lastNotification {
            let hours = now.timeIntervalSince(last.receivedAt) / 3_600
            let ago = DashboardPage.Elapsed(hours: hours)
            self.last = Last(
                type: last.type, subtype: last.subtype, at: time(last.receivedAt), ago: ago,
                fromRecovery: last.source == "recovery")
            // A live app with customers hears from Apple every day or two; three quiet days want a look.
            quiet = hours > 72 ? Quiet(silentFor: ago, never: false) : nil
        } else {
            quiet = Quiet(silentFor: nil, never: true)
        }
        types = health.lastWeek.map { TypeCount(type: $0.type, count: PanelText.count($0.count)) }
        refusals = Refusals(
            none: tally.count == 0, count: PanelText.count(tally.count), since: time(tally.since),
            lastAt: tally.lastAt.map(time) ?? "?", lastStatus: tally.lastStatus ?? "?")
        refusalsWarn = tally.count > 0
        let run = recoveryOn ? health.recovery : nil
        recovery = Recovery(
            off: !recoveryOn, waiting: recoveryOn && run == nil, at: run.map { time($0.at) }, failure: run?.error,
            read: PanelText.count(run?.read ?? 0), new: PanelText.count(run?.new ?? 0),
            filled: PanelText.count(run?.filled ?? 0))
        recoveryWarn = !recoveryOn || run?.error != nil
        let books = recoveryOn ? health.reconciliation : nil
        reconciliation = Reconciliation(
            off: !recoveryOn, waiting: recoveryOn && books == nil,
            running: books.map { $0.finishedAt == nil && $0.error == nil && ($0.leaseUntil ?? .distantPast) > now }
                ?? false,
            paused: books.map { $0.finishedAt == nil && $0.error == nil && ($0.leaseUntil ?? .distantPast) <= now }
                ?? false,
            started: books.map { time($0.startedAt) },
            finished: books?.finishedAt.map(time), failure: books?.error,
            customers: PanelText.count(books?.customers ?? 0), found: PanelText.count(books?.found ?? 0),
            repaired: PanelText.count(books?.repaired ?? 0), left: PanelText.count(books?.left ?? 0),
            failed: PanelText.count(books?.failedCustomers ?? 0), hasFailed: (books?.failedCustomers ?? 0) > 0)
        reconciliationWarn = !recoveryOn || books?.error != nil || (books?.left ?? 0) > 0
    }
}
