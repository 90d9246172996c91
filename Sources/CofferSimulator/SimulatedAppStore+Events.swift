import CofferAppStore
import CofferCore
import Foundation

/// The App Store's own events, each a control: price increases, products taken off sale, a parent rescinding
/// consent. (Purchases, renewals, refunds, extensions and family sharing have theirs beside them.)
extension SimulatedAppStore {
    /// The developer raises a subscription's price from its next renewal. With `consentRequired` (an increase
    /// Apple asks the customer to accept) it is PRICE_INCREASE/PENDING until ``acceptPriceIncrease(originalTransactionId:)``,
    /// and the subscription expires at renewal if never accepted (EXPIRED/PRICE_INCREASE); otherwise the customer
    /// is only told (PRICE_INCREASE/ACCEPTED). `price` is in milliunits, as Apple's prices.
    @discardableResult
    public func announcePriceIncrease(originalTransactionId: String, price: Int64, consentRequired: Bool)
        throws(SimulatorError) -> SimulatorReport
    {
        let key = try subscriptionKey(forOriginal: originalTransactionId)
        guard var subscription = subscriptions[key], subscription.state == .active || subscription.state == .gracePeriod
        else { throw SimulatorError("invalid-state", "subscription \(originalTransactionId) is not live") }
        guard price > 0, price < 1_000_000_000 else {
            throw SimulatorError("invalid-request", "a price is 1-999999999 milliunits")
        }
        subscription.priceIncrease = (price, !consentRequired)
        subscriptions[key] = subscription
        var report = SimulatorReport()
        report.happened.append(
            "the price of \(subscription.autoRenewProductId) rises to \(Double(price) / 1_000) for "
                + "\(subscription.account) from the next renewal\(consentRequired ? ", if they accept" : "")")
        report.append(
            try notify(
                "PRICE_INCREASE", consentRequired ? "PENDING" : "ACCEPTED",
                transactionId: subscription.latestTransactionId))
        return report
    }

    /// The customer accepts a pending price increase (PRICE_INCREASE/ACCEPTED).
    @discardableResult
    public func acceptPriceIncrease(originalTransactionId: String) throws(SimulatorError) -> SimulatorReport {
        let key = try subscriptionKey(forOriginal: originalTransactionId)
        guard var subscription = subscriptions[key], let increase = subscription.priceIncrease, !increase.accepted
        else { throw SimulatorError("invalid-state", "no price increase waits on \(originalTransactionId)") }
        subscription.priceIncrease = (increase.price, true)
        subscriptions[key] = subscription
        var report = SimulatorReport()
        report.happened.append("\(subscription.account) accepted the price increase of \(originalTransactionId)")
        report.append(try notify("PRICE_INCREASE", "ACCEPTED", transactionId: subscription.latestTransactionId))
        return report
    }

    /// The developer takes a subscription product off sale: subscriptions renewing into it expire at their next
    /// renewal (EXPIRED/PRODUCT_NOT_FOR_SALE).
    @discardableResult
    public func removeFromSale(productId: String) throws(SimulatorError) -> SimulatorReport {
        let product = try product(productId)
        guard product.kind == .autoRenewable else {
            throw SimulatorError("invalid-request", "\(productId) is not an auto-renewable subscription")
        }
        offSale.insert(productId)
        var report = SimulatorReport()
        report.happened.append("\(productId) is off sale: its subscriptions expire at their next renewal")
        return report
    }

    /// A parent or guardian withdraws consent for a child's account (Declared Age Range): RESCIND_CONSENT with the
    /// app transaction of the account in `appData`.
    @discardableResult
    public func rescindConsent(account: String) throws(SimulatorError) -> SimulatorReport {
        var appData = AppData()
        appData.appAppleId = configuration.appAppleId
        appData.bundleId = configuration.bundleId
        appData.rawEnvironment = environment(of: account).rawValue
        appData.signedAppTransactionInfo = try signedAppTransaction(account: account)
        var report = SimulatorReport()
        report.happened.append("consent for \(account) was rescinded by a parent or guardian")
        report.append(try notify("RESCIND_CONSENT", nil, appData: appData))
        return report
    }

    /// What `subscription` renews `product` at: the price an accepted increase set, or the product's.
    func renewalPrice(_ subscription: SimulatedSubscription, _ product: CatalogProduct) -> Int64 {
        if let set = subscription.renewalPrice, set.productId == product.id { return set.price }
        if let increase = subscription.priceIncrease, product.id == subscription.autoRenewProductId {
            return increase.price
        }
        return price(product)
    }
}
