import CofferAppStore
import CofferCore
import CofferStoreKit
import Foundation

extension SimulatedAppStore {
    /// The products among `ids` as the account's device shows them (`Product.products(for:)`): name, price in
    /// the storefront's currency, and for a subscription its group, period and introductory offer, with the
    /// account's eligibility (it never subscribed in the group). Ids not in the catalog are left out.
    public func products(ids: [String], account: String) -> [StoreProduct] {
        ids.compactMap { catalog.product(id: $0) }.map { product in
            let price = Decimal(price(product)) / 1_000
            var subscription: StoreSubscriptionInfo?
            if product.kind == .autoRenewable, let group = product.group {
                let subscribed = transactions.contains { $0.account == account && $0.product.group == group }
                subscription = StoreSubscriptionInfo(
                    groupId: Self.groupId(group), period: Self.storePeriod(days: product.durationDays ?? 30),
                    introductoryOffer: configuration.introductoryOffers[product.id],
                    isEligibleForIntroOffer: !subscribed)
            }
            return StoreProduct(
                id: product.id, type: StoreTransaction.ProductType(product.kind),
                displayName: configuration.productNames[product.id] ?? product.id, description: "",
                price: price, displayPrice: displayPrice(price), currencyCode: configuration.currency,
                subscription: subscription)
        }
    }

    /// A price as the device shows it, e.g. `USD 4.99`.
    func displayPrice(_ price: Decimal) -> String {
        "\(configuration.currency) \(price.formatted(.number.precision(.fractionLength(2)).grouping(.never)))"
    }

    static func storePeriod(days: Int) -> StorePeriod {
        switch days {
        case 365, 366: StorePeriod(value: 1, unit: .year)
        case let days where days % 30 == 0: StorePeriod(value: days / 30, unit: .month)
        case let days where days % 7 == 0: StorePeriod(value: days / 7, unit: .week)
        default: StorePeriod(value: days, unit: .day)
        }
    }

    /// A period's length in days, as the simulator counts them (a month is 30 days, a year 365).
    static func days(_ period: StorePeriod) -> Double {
        let unit: Double =
            switch period.unit {
            case .day: 1
            case .week: 7
            case .month: 30
            case .year: 365
            }
        return unit * Double(max(1, period.value))
    }

    /// Grace periods' ends by original transaction id, for the account's subscriptions in one now (what the
    /// device's `Product.SubscriptionInfo.status(for:)` renewal info says).
    public func gracePeriods(account: String, groups: [String]) -> [String: Date] {
        var ends: [String: Date] = [:]
        for subscription in subscriptions.values
        where subscription.account == account && groups.contains(Self.groupId(subscription.group))
            && subscription.state == .gracePeriod
        {
            if let end = subscription.gracePeriodExpiresDate { ends[subscription.originalId] = end }
        }
        return ends
    }

    /// The customer redeems an offer code on the device's sheet: the code's product is bought for the account
    /// (no app account token: the sheet does not carry one) and reaches the device through its updates. A
    /// subscription's code sends OFFER_REDEEMED (INITIAL_BUY, RESUBSCRIBE, UPGRADE, DOWNGRADE, or none for the
    /// product already subscribed to); the transaction names the code (offer type 3). Each code buys once per
    /// account.
    @discardableResult
    public func redeemOfferCode(_ code: String, account: String) throws(SimulatorError) -> SimulatorReport {
        guard let productId = configuration.offerCodes[code] else {
            throw SimulatorError("unknown-offer-code", "no offer code \(code)")
        }
        guard !redeemedCodes.contains("\(account)\u{1F}\(code)") else {
            throw SimulatorError("invalid-state", "\(account) already redeemed \(code)")
        }
        var report = try complete(
            account: account, product: product(productId), quantity: 1, token: nil,
            offer: RedeemedOffer(type: .subscriptionOfferCode, identifier: code))
        redeemedCodes.insert("\(account)\u{1F}\(code)")
        report.happened.insert("\(account) redeemed offer code \(code)", at: 0)
        for id in report.transactionIds where record(id)?.account == account { pushUpdate(id) }
        return report
    }

    /// The customer asks for a refund on the device's sheet: Apple asks the app's server for consumption
    /// information (CONSUMPTION_REQUEST) and decides later (``refund(transactionId:percentage:)`` or
    /// ``declineRefund(transactionId:)``). Only the account's own transactions can be asked about.
    @discardableResult
    public func requestRefund(transactionId: String, account: String) throws(SimulatorError) -> SimulatorReport {
        guard let record = record(transactionId), record.account == account else {
            throw SimulatorError("unknown-transaction", "\(account) has no transaction \(transactionId)")
        }
        return try requestRefund(transactionId: transactionId)
    }

    /// The customer turns auto-renew off for every subscription of the account on the subscription management
    /// sheet.
    @discardableResult
    public func cancelSubscriptions(account: String) throws(SimulatorError) -> SimulatorReport {
        var report = SimulatorReport()
        for subscription in subscriptions.values.sorted(by: { $0.originalId < $1.originalId })
        where subscription.account == account && subscription.autoRenew {
            report.append(try setAutoRenew(originalTransactionId: subscription.originalId, false))
        }
        return report
    }
}
