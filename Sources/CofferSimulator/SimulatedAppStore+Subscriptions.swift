import CofferAppStore
import CofferCore
import CofferStoreKit
import Foundation

extension SimulatedAppStore {
    /// Makes an account's card fail (or work again). While it fails, renewals fail into billing retry
    /// (and the grace period); when it works again, subscriptions in billing retry recover at once.
    @discardableResult
    public func setBillingFails(account: String, _ fails: Bool) throws(SimulatorError) -> SimulatorReport {
        var report = SimulatorReport()
        if fails {
            failingBilling.insert(account)
            report.happened.append("\(account)'s payment method now fails")
            return report
        }
        failingBilling.remove(account)
        report.happened.append("\(account)'s payment method works again")
        for key in subscriptions.keys.sorted() {
            guard let subscription = subscriptions[key], subscription.account == account,
                subscription.state == .billingRetry || subscription.state == .gracePeriod
            else { continue }
            report.append(try renew(key, at: clock.now(), recovery: true))
        }
        return report
    }

    /// Turns a subscription's auto-renewal on or off (DID_CHANGE_RENEWAL_STATUS).
    @discardableResult
    public func setAutoRenew(originalTransactionId: String, _ on: Bool) throws(SimulatorError) -> SimulatorReport {
        let key = try subscriptionKey(forOriginal: originalTransactionId)
        guard var subscription = subscriptions[key], subscription.state != .expired, subscription.state != .revoked
        else { throw SimulatorError("invalid-state", "subscription \(originalTransactionId) is not live") }
        subscription.autoRenew = on
        subscription.expirationIntent = on ? nil : 1
        subscriptions[key] = subscription
        var report = SimulatorReport()
        report.happened.append("auto-renew of \(originalTransactionId) turned \(on ? "on" : "off")")
        report.append(
            try notify(
                "DID_CHANGE_RENEWAL_STATUS", on ? "AUTO_RENEW_ENABLED" : "AUTO_RENEW_DISABLED",
                transactionId: subscription.latestTransactionId))
        return report
    }

    /// Renews a subscription now: its current period ends now and the next one is charged, whatever the
    /// clock says.
    @discardableResult
    public func renewNow(originalTransactionId: String) throws(SimulatorError) -> SimulatorReport {
        let key = try subscriptionKey(forOriginal: originalTransactionId)
        guard let subscription = subscriptions[key], subscription.state != .revoked else {
            throw SimulatorError("invalid-state", "subscription \(originalTransactionId) was revoked")
        }
        return try renew(key, at: clock.now(), recovery: subscription.state != .active)
    }

    /// Ends a subscription now, as if the customer turned auto-renew off and the period ran out
    /// (DID_CHANGE_RENEWAL_STATUS then EXPIRED/VOLUNTARY).
    @discardableResult
    public func expireNow(originalTransactionId: String) throws(SimulatorError) -> SimulatorReport {
        let key = try subscriptionKey(forOriginal: originalTransactionId)
        guard let subscription = subscriptions[key], subscription.state != .expired, subscription.state != .revoked
        else { throw SimulatorError("invalid-state", "subscription \(originalTransactionId) is not live") }
        var report = SimulatorReport()
        if subscription.autoRenew {
            report.append(try setAutoRenew(originalTransactionId: originalTransactionId, false))
        }
        let now = clock.now()
        update(subscription.latestTransactionId) {
            $0.expiresDate = now
            $0.modified = now
        }
        subscriptions[key]?.expiresDate = now
        report.append(try expire(key, subtype: "VOLUNTARY", intent: 1))
        return report
    }

    /// The most one ``advanceClock(by:)`` moves: ten years, so renewals due in between stay countable and
    /// every date stays writable in milliseconds.
    public static let longestAdvance: TimeInterval = 10 * 366 * 86_400

    /// Moves the clock forward, and lets everything due in between happen in order: renewals, failed
    /// renewals, grace periods ending, billing retry giving up, expiries.
    @discardableResult
    public func advanceClock(by seconds: TimeInterval) throws(SimulatorError) -> SimulatorReport {
        guard seconds >= 0 else { throw SimulatorError("invalid-request", "the clock only moves forward") }
        guard seconds <= Self.longestAdvance else {
            throw SimulatorError(
                "invalid-request", "the clock moves at most \(Int(Self.longestAdvance)) seconds (10 years) at a time")
        }
        let target = clock.now().addingTimeInterval(seconds)
        var report = SimulatorReport()
        while let (key, due) = nextDue(before: target) {
            clock.move(to: due)
            report.append(try handleDue(key))
        }
        clock.move(to: target)
        report.happened.append("the clock reads \(target.formatted(.iso8601))")
        return report
    }

    func nextDue(before target: Date) -> (String, Date)? {
        var best: (String, Date)?
        for (key, subscription) in subscriptions {
            let due: Date? =
                switch subscription.state {
                case .active: subscription.expiresDate
                case .gracePeriod: subscription.gracePeriodExpiresDate
                case .billingRetry: subscription.billingRetryEnds
                case .expired, .revoked: nil
                }
            guard let due, due <= target else { continue }
            if best == nil || due < best!.1 || (due == best!.1 && key < best!.0) { best = (key, due) }
        }
        return best
    }

    func handleDue(_ key: String) throws(SimulatorError) -> SimulatorReport {
        guard let subscription = subscriptions[key] else { return SimulatorReport() }
        let now = clock.now()
        switch subscription.state {
        case .active:
            guard subscription.autoRenew else { return try expire(key, subtype: "VOLUNTARY", intent: 1) }
            if offSale.contains(subscription.autoRenewProductId) {
                return try expire(key, subtype: "PRODUCT_NOT_FOR_SALE", intent: 4)
            }
            if let increase = subscription.priceIncrease, !increase.accepted {
                return try expire(key, subtype: "PRICE_INCREASE", intent: 3)
            }
            guard failingBilling.contains(subscription.account) else {
                return try renew(key, at: subscription.expiresDate, recovery: false)
            }
            var failed = subscription
            let grace = configuration.gracePeriodDays > 0
            failed.state = grace ? .gracePeriod : .billingRetry
            failed.gracePeriodExpiresDate =
                grace ? now.addingTimeInterval(Double(configuration.gracePeriodDays) * 86_400) : nil
            failed.billingRetryEnds = now.addingTimeInterval(Double(configuration.billingRetryDays) * 86_400)
            failed.expirationIntent = 2
            subscriptions[key] = failed
            var report = SimulatorReport()
            report.happened.append(
                "renewal of \(subscription.originalId) failed: billing retry\(grace ? " with a grace period" : "")")
            report.append(
                try notify(
                    "DID_FAIL_TO_RENEW", grace ? "GRACE_PERIOD" : nil, transactionId: subscription.latestTransactionId))
            return report
        case .gracePeriod:
            subscriptions[key]?.state = .billingRetry
            var report = SimulatorReport()
            report.happened.append("grace period of \(subscription.originalId) ended; billing retry goes on")
            report.append(try notify("GRACE_PERIOD_EXPIRED", nil, transactionId: subscription.latestTransactionId))
            return report
        case .billingRetry:
            return try expire(key, subtype: "BILLING_RETRY", intent: 2)
        case .expired, .revoked:
            return SimulatorReport()
        }
    }

    func renew(_ key: String, at start: Date, recovery: Bool) throws(SimulatorError) -> SimulatorReport {
        guard var subscription = subscriptions[key] else { return SimulatorReport() }
        let product = try product(subscription.autoRenewProductId)
        let latest = record(subscription.latestTransactionId)
        if let latest, (latest.expiresDate ?? start) > start {
            update(latest.id) {
                $0.expiresDate = start
                $0.modified = start
            }
        }
        if let increase = subscription.priceIncrease, increase.accepted {
            subscription.renewalPrice = (product.id, increase.price)
            subscription.priceIncrease = nil
        }
        let record = nextPeriod(of: subscription, product: product, from: start, renewal: true)
        let id = record.id
        subscription.productId = product.id
        subscription.latestTransactionId = id
        subscription.expiresDate = record.expiresDate ?? start
        subscription.settle(.active)
        subscriptions[key] = subscription
        var report = SimulatorReport()
        report.happened.append(
            "\(subscription.account)'s \(product.id) renewed\(recovery ? " after billing recovered" : ""): transaction \(id), until \(subscription.expiresDate.formatted(.iso8601))"
        )
        report.transactionIds.append(id)
        report.append(try notify("DID_RENEW", recovery ? "BILLING_RECOVERY" : nil, transactionId: id))
        pushUpdate(id)
        report.append(try shareWithFamily(id))
        return report
    }

    /// Records the next period of a subscription (a renewal, or the first period of an upgrade).
    func nextPeriod(of subscription: SimulatedSubscription, product: CatalogProduct, from start: Date, renewal: Bool)
        -> SimulatedTransaction
    {
        let latest = record(subscription.latestTransactionId)
        let record = SimulatedTransaction(
            id: nextIdentifier(), originalId: subscription.originalId, webOrderLineItemId: nextIdentifier(),
            orderId: orderId(), account: subscription.account, product: product, purchaseDate: start,
            originalPurchaseDate: latest?.originalPurchaseDate ?? start, expiresDate: start + period(product),
            quantity: 1, appAccountToken: latest?.appAccountToken, familyShared: false, renewal: renewal,
            price: renewalPrice(subscription, product), modified: start)
        add(record)
        return record
    }

    func expire(_ key: String, subtype: String, intent: Int32) throws(SimulatorError) -> SimulatorReport {
        guard var subscription = subscriptions[key] else { return SimulatorReport() }
        subscription.settle(.expired, intent: intent)
        subscriptions[key] = subscription
        var report = SimulatorReport()
        report.happened.append("\(subscription.account)'s \(subscription.productId) expired (\(subtype.lowercased()))")
        report.append(try notify("EXPIRED", subtype, transactionId: subscription.latestTransactionId))
        return report
    }
}
