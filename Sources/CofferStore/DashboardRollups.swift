import CofferCore
import Foundation

/// The dashboard's figures kept up to date in each change's own transaction (the SQL engines' rollup tables,
/// written by their triggers), so that reading them costs the same at a thousand receipts and at ten million: no
/// figure is counted by reading the receipts, customers or grants again.
///
/// A rollup row is one figure's count and amount in one bucket: a total (bucket 0), a UTC day (money), or an hour
/// (the ends of subscriptions' access, Apple's notifications). The engines sum their rows by key and hand them
/// here with the two counts a bucket cannot give exactly (the subscriptions that end later this hour, the
/// notifications of the window's first, partial hour), and ``DashboardFigures/init(rollups:days:now:endingThisHour:)``
/// makes the figures.
public enum DashboardRollup {
    /// What a rollup row counts.
    public enum Figure: String, Sendable, CaseIterable {
        /// Customers (not App Review's or TestFlight's sandbox accounts on a Production server).
        case users = "users"
        /// Customers whose own AppTransaction says the other environment.
        case otherUsers = "users.other"
        /// Grants waiting for the app.
        case pendingGrants = "grants.pending"
        /// Grants the app picked up.
        case claimedGrants = "grants.claimed"
        /// Purchases delivered from the server's own environment's data (not delivered before Coffer).
        case purchases = "purchases"
        /// Standing refunds of the server's own environment's data.
        case refunds = "refunds"
        /// Purchases delivered from the other environment's data.
        case otherPurchases = "purchases.other"
        /// Credits delivered by the other environment's standing purchases (the amount).
        case otherCredits = "credits.other"
        /// Customers in deficit (the count) and what they owe (the amount).
        case deficit = "deficit"
        /// Customers in deficit in another currency than the default (the count) and what they owe (the amount),
        /// labelled by the currency.
        case currencyDeficit = "deficit.currency"
        /// Loyalty lifetimes reached, labelled by milestone name.
        case loyalty = "loyalty"
        /// Purchases delivered per UTC day, labelled by product; priced ones under their currency, with the price.
        case purchaseDay = "purchase.day"
        /// Refunds recorded per UTC day, as ``purchaseDay``.
        case refundDay = "refund.day"
        /// Subscriptions of the server's own environment's data, per hour their access ends.
        case expiry = "expiry"
        /// Subscriptions of the other environment's data, per hour their access ends.
        case otherExpiry = "expiry.other"
        /// Apple's notifications received per hour, labelled by type.
        case notificationHour = "notifications.hour"

        /// The totals (bucket 0).
        public static let totals: [Figure] = [
            .users, .otherUsers, .pendingGrants, .claimedGrants, .purchases, .refunds, .otherPurchases,
            .otherCredits, .deficit, .currencyDeficit, .loyalty,
        ]
    }

    /// One figure's sum in one bucket, as an engine's query returns it.
    public struct Row: Sendable, Hashable {
        /// The figure (``Figure``'s raw value; an unknown one is passed over).
        public var figure: String
        /// 0 for a total; the day or hour since 1970 otherwise.
        public var bucket: Int64
        /// The product, milestone or notification type; empty when none.
        public var label: String
        /// The currency of a priced purchase or refund; empty when none.
        public var currency: String
        /// How many.
        public var count: Int64
        /// Their amount: price in milliunits, credits, or deficit.
        public var amount: Int64

        /// Creates a row.
        public init(figure: String, bucket: Int64, label: String, currency: String, count: Int64, amount: Int64) {
            self.figure = figure
            self.bucket = bucket
            self.label = label
            self.currency = currency
            self.count = count
            self.amount = amount
        }
    }

    /// Milliseconds in a day and in an hour: the buckets' widths.
    public static let dayMillis: Int64 = 86_400_000
    /// Milliseconds in an hour.
    public static let hourMillis: Int64 = 3_600_000

    /// The day (since 1970) of a time.
    public static func day(_ date: Date) -> Int64 { floorDivide(Milliseconds.from(date), dayMillis) }

    /// The first hour bucket wholly inside a window starting at `since`, and the time it starts: the notifications
    /// of `since ..< start` are counted exactly, the rest from the buckets.
    public static func firstWholeHour(from since: Date) -> (bucket: Int64, start: Date) {
        let millis = min(Milliseconds.from(since), Int64.max - hourMillis)
        let bucket = floorDivide(millis + hourMillis - 1, hourMillis)
        return (bucket, Date(timeIntervalSince1970: TimeInterval(bucket * hourMillis) / 1_000))
    }

    /// The hour (since 1970) of a time.
    public static func hour(_ date: Date) -> Int64 { floorDivide(Milliseconds.from(date), hourMillis) }

    /// The end of the hour of `now`: subscriptions whose access ends before it are counted exactly (a few: those of
    /// one hour), the later ones from their hours' sums.
    public static func endOfHour(_ now: Date) -> Date {
        Date(timeIntervalSince1970: TimeInterval((hour(now) + 1) * hourMillis) / 1_000)
    }

    static func floorDivide(_ value: Int64, _ divisor: Int64) -> Int64 {
        let quotient = value / divisor
        return value % divisor < 0 ? quotient - 1 : quotient
    }

    /// Saturating sum.
    static func add(_ lhs: Int64, _ rhs: Int64) -> Int64 {
        let (sum, overflow) = lhs.addingReportingOverflow(rhs)
        return overflow ? (rhs > 0 ? .max : .min) : sum
    }
}

extension DashboardFigures {
    /// The figures from an engine's rollup rows: the totals, the window's days from `days` days ending with the day
    /// of `now`, and the subscriptions whose access ends after `now`.
    ///
    /// - Parameters:
    ///   - rollups: The totals, the window's day buckets, and the expiry buckets after the hour of `now`.
    ///   - endingThisHour: The subscriptions, own and other, whose access ends after `now` but within its hour.
    public init(rollups: [DashboardRollup.Row], days: Int, now: Date, endingThisHour: (own: Int, other: Int)) {
        typealias Figure = DashboardRollup.Figure
        let start = DashboardFigures.windowStart(days: days, endingAt: now)
        let (firstDay, thisHour) = (DashboardRollup.day(start), DashboardRollup.hour(now))
        var totals: [Figure: (count: Int64, amount: Int64)] = [:]
        var purchases: [Int64: Int] = [:]
        var refunds: [Int64: Int] = [:]
        var money: [Bool: [MoneyKey: (count: Int64, amount: Int64)]] = [:]
        var loyalty: [String: Int64] = [:]
        var currencyDeficits: [String: (count: Int64, amount: Int64)] = [:]
        var later = (own: Int64(0), other: Int64(0))
        for row in rollups {
            guard let figure = Figure(rawValue: row.figure) else { continue }
            switch figure {
            case .loyalty:
                loyalty[row.label, default: 0] += row.count
            case .currencyDeficit:
                let sum = currencyDeficits[row.label] ?? (0, 0)
                currencyDeficits[row.label] = (sum.count + row.count, DashboardRollup.add(sum.amount, row.amount))
            case .purchaseDay, .refundDay:
                guard row.bucket >= firstDay else { continue }
                let refund = figure == .refundDay
                if refund {
                    refunds[row.bucket, default: 0] += Int(row.count)
                } else {
                    purchases[row.bucket, default: 0] += Int(row.count)
                }
                guard !row.currency.isEmpty else { continue }
                let key = MoneyKey(day: row.bucket, productId: row.label, currency: row.currency)
                let sum = money[refund, default: [:]][key] ?? (0, 0)
                money[refund, default: [:]][key] = (
                    sum.count + row.count, DashboardRollup.add(sum.amount, row.amount)
                )
            case .expiry, .otherExpiry:
                guard row.bucket > thisHour else { continue }
                if figure == .expiry { later.own += row.count } else { later.other += row.count }
            case .notificationHour:
                continue
            default:
                let sum = totals[figure] ?? (0, 0)
                totals[figure] = (sum.count + row.count, DashboardRollup.add(sum.amount, row.amount))
            }
        }
        func count(_ figure: Figure) -> Int { Int(totals[figure]?.count ?? 0) }
        self.init(
            users: count(.users), pendingGrants: count(.pendingGrants), claimedGrants: count(.claimedGrants),
            purchases: count(.purchases), refunds: count(.refunds), usersInDeficit: count(.deficit),
            outstandingDeficit: totals[.deficit]?.amount ?? 0,
            days: DashboardFigures.fill(days: days, from: start, purchases: purchases, refunds: refunds),
            otherEnvironmentPurchases: count(.otherPurchases))
        func figures(_ refund: Bool) -> [MoneyFigures] {
            (money[refund] ?? [:]).filter { $0.value.count != 0 }.sorted { $0.key < $1.key }.map {
                MoneyFigures(
                    dayNumber: $0.key.day, productId: $0.key.productId, currency: $0.key.currency,
                    count: $0.value.count, amount: $0.value.amount)
            }
        }
        revenue = figures(false)
        refunded = figures(true)
        activeSubscriptions = Int(later.own) + endingThisHour.own
        otherEnvironmentSubscriptions = Int(later.other) + endingThisHour.other
        otherEnvironmentCustomers = count(.otherUsers)
        otherEnvironmentCredits = totals[.otherCredits]?.amount ?? 0
        self.currencyDeficits = currencyDeficits.filter { $0.value.count > 0 }.sorted { $0.key < $1.key }.map {
            CurrencyDeficit(currency: $0.key, usersInDeficit: Int($0.value.count), outstandingDeficit: $0.value.amount)
        }
        let prefix = DashboardFigures.loyaltyMilestonePrefix
        loyaltyLifetimes = loyalty.filter { $0.key.hasPrefix(prefix) && $0.value > 0 }.sorted { $0.key < $1.key }.map {
            GroupCount(group: String($0.key.dropFirst(prefix.count)), count: Int($0.value))
        }
    }

    private struct MoneyKey: Hashable, Comparable {
        var day: Int64
        var productId: String
        var currency: String

        static func < (lhs: MoneyKey, rhs: MoneyKey) -> Bool {
            (lhs.day, lhs.productId, lhs.currency) < (rhs.day, rhs.productId, rhs.currency)
        }
    }
}

extension DashboardRollup {
    /// Apple's notifications by type since a time: the buckets' whole hours and the exact count of the first,
    /// partial hour.
    public static func notificationCounts(hours: [Row], firstHour: Int64, edge: [String: Int]) -> [String: Int] {
        var counts = edge
        for row in hours where row.figure == Figure.notificationHour.rawValue && row.bucket >= firstHour {
            counts[row.label, default: 0] += Int(row.count)
        }
        return counts.filter { $0.value > 0 }
    }
}
