import CofferAppStore
import CofferCore
import CofferStoreKit
import Foundation

extension SimulatedAppStore {
    /// Buys a product for an account, as the payment sheet would.
    ///
    /// - Parameters:
    ///   - account: The simulated Apple account, e.g. `alice`.
    ///   - productId: A product of the catalog.
    ///   - quantity: Units (consumables only; others must be 1).
    ///   - appAccountToken: The app's account token, carried in the transaction.
    ///   - outcome: What the customer does on the payment sheet.
    /// - Returns: What happened; for Ask to Buy, the pending id to approve or decline.
    @discardableResult
    public func purchase(
        account: String, productId: String, quantity: Int = 1, appAccountToken: UUID? = nil,
        outcome: PurchaseOutcome = .success
    ) throws(SimulatorError) -> SimulatorReport {
        let product = try product(productId)
        guard quantity >= 1, quantity <= 10, product.kind == .consumable || quantity == 1 else {
            throw SimulatorError("invalid-request", "quantity \(quantity) is not allowed for \(productId)")
        }
        var report = SimulatorReport()
        switch outcome {
        case .userCancelled:
            report.happened.append("\(account) cancelled the purchase of \(productId)")
            return report
        case .askToBuy:
            let id = "ask-\(nextIdentifier())"
            pending[id] = (account, productId, quantity, appAccountToken)
            report.pendingId = id
            report.happened.append("\(account) asked to buy \(productId): waiting for approval as \(id)")
            return report
        case .success:
            return try complete(account: account, product: product, quantity: quantity, token: appAccountToken)
        }
    }

    /// Approves or declines an Ask to Buy request. Approval completes the purchase and sends it through
    /// the account's updates; a decline changes nothing, as in StoreKit.
    @discardableResult
    public func answerAskToBuy(_ pendingId: String, approve: Bool) throws(SimulatorError) -> SimulatorReport {
        guard let request = pending.removeValue(forKey: pendingId) else {
            throw SimulatorError("unknown-pending", "no Ask to Buy request \(pendingId)")
        }
        guard approve else {
            var report = SimulatorReport()
            report.happened.append("Ask to Buy \(pendingId) declined: \(request.account) gets nothing")
            return report
        }
        let product = try product(request.productId)
        let report = try complete(
            account: request.account, product: product, quantity: request.quantity, token: request.token)
        // Approved purchases reach the device through its updates, not a purchase result.
        for id in report.transactionIds where record(id)?.account == request.account { pushUpdate(id) }
        return report
    }

    /// - Parameters:
    ///   - offer: The offer the purchase redeems (a promotional or win-back offer, an offer code), if any.
    ///   - introductory: The app's signed word on the introductory offer; `nil` leaves the App Store's own rule.
    func complete(
        account: String, product: CatalogProduct, quantity: Int, token: UUID?, offer: RedeemedOffer? = nil,
        introductory: Bool? = nil
    ) throws(SimulatorError) -> SimulatorReport {
        var report = SimulatorReport()
        let now = clock.now()
        if product.kind == .nonConsumable,
            transactions.contains(where: {
                $0.account == account && $0.product.id == product.id && !$0.isRevoked && !$0.familyShared
            })
        {
            throw SimulatorError("invalid-state", "\(account) already owns \(product.id)")
        }
        if product.kind == .autoRenewable, let group = product.group {
            if let existing = subscriptions[subscriptionKey(account, group)], existing.state != .expired,
                existing.state != .revoked
            {
                return try change(existing, to: product, offer: offer)
            }
            return try subscribe(
                account: account, product: product, token: token, offer: offer, introductory: introductory)
        }
        let id = nextIdentifier()
        var expires: Date?
        if product.kind == .nonRenewing, let days = product.durationDays {
            expires = now.addingTimeInterval(Double(days) * 86_400)
        }
        var record = SimulatedTransaction(
            id: id, originalId: id, webOrderLineItemId: nil, orderId: orderId(), account: account, product: product,
            purchaseDate: now, originalPurchaseDate: now, expiresDate: expires, quantity: quantity,
            appAccountToken: token, familyShared: false, renewal: false, price: price(product) * Int64(quantity),
            modified: now)
        record.offer = offer
        add(record)
        report.happened.append("\(account) bought \(product.id) ×\(quantity): transaction \(id)")
        report.transactionIds.append(id)
        report.append(try notify("ONE_TIME_CHARGE", nil, transactionId: id))
        if product.kind != .consumable { report.append(try shareWithFamily(id)) }
        return report
    }

    /// A new subscription (SUBSCRIBED), or one redeemed with an offer (OFFER_REDEEMED), with the same subtypes:
    /// INITIAL_BUY for a customer new to the group, RESUBSCRIBE otherwise.
    func subscribe(
        account: String, product: CatalogProduct, token: UUID?, offer redeemed: RedeemedOffer? = nil,
        introductory: Bool? = nil
    ) throws(SimulatorError) -> SimulatorReport {
        let group = product.group ?? product.id
        let now = clock.now()
        let previous = subscriptions[subscriptionKey(account, group)]
        let id = nextIdentifier()
        let originalId = previous?.originalId ?? id
        let original = previous.flatMap { self.record($0.originalId) }
        // The introductory offer, for a customer who never subscribed in the group unless the app's signed word
        // says otherwise (another offer replaces it).
        let eligible =
            introductory ?? !transactions.contains { $0.account == account && $0.product.group == group }
        let offer = redeemed != nil || !eligible ? nil : configuration.introductoryOffers[product.id]
        var record = SimulatedTransaction(
            id: id, originalId: originalId, webOrderLineItemId: nextIdentifier(), orderId: orderId(),
            account: account, product: product, purchaseDate: now,
            originalPurchaseDate: original?.originalPurchaseDate ?? now, expiresDate: now + period(product),
            quantity: 1, appAccountToken: token, familyShared: false, renewal: false, price: price(product),
            modified: now)
        record.offer = redeemed
        if let offer {
            record.introductoryOffer = offer.paymentMode
            // In milliunits, as Apple's price fields; an offer price out of range (a test's mistake) is free.
            let milliunits = NSDecimalNumber(decimal: offer.price * 1_000).doubleValue.rounded()
            record.price = milliunits >= 0 && milliunits < 1e15 ? Int64(milliunits) : 0
            if offer.paymentMode == .freeTrial {
                record.expiresDate = now + Self.days(offer.period) * Double(max(1, offer.periodCount)) * 86_400
            }
        }
        add(record)
        subscriptions[subscriptionKey(account, group)] = SimulatedSubscription(
            originalId: originalId, account: account, group: group, productId: product.id,
            autoRenewProductId: product.id, expiresDate: record.expiresDate ?? now, latestTransactionId: id,
            recentStartDate: now)
        var report = SimulatorReport()
        report.happened.append(
            "\(account) subscribed to \(product.id): transaction \(id), renews \((record.expiresDate ?? now).formatted(.iso8601))"
        )
        report.transactionIds.append(id)
        report.append(
            try notify(
                redeemed == nil ? "SUBSCRIBED" : "OFFER_REDEEMED", previous == nil ? "INITIAL_BUY" : "RESUBSCRIBE",
                transactionId: id))
        report.append(try shareWithFamily(id))
        return report
    }

    /// Moves a live subscription to another product of its group: a higher-ranked product takes effect at
    /// once (the current transaction is marked upgraded); a lower-ranked one at the next renewal
    /// (DID_CHANGE_RENEWAL_PREF, or OFFER_REDEEMED with an offer code, UPGRADE or DOWNGRADE). Choosing the current
    /// product again reverts a pending downgrade (DID_CHANGE_RENEWAL_PREF without a subtype); an offer code for it
    /// applies from the next renewal (OFFER_REDEEMED without a subtype).
    func change(_ subscription: SimulatedSubscription, to product: CatalogProduct, offer: RedeemedOffer? = nil)
        throws(SimulatorError) -> SimulatorReport
    {
        var subscription = subscription
        var report = SimulatorReport()
        let key = subscriptionKey(subscription.account, subscription.group)
        let type = offer == nil ? "DID_CHANGE_RENEWAL_PREF" : "OFFER_REDEEMED"
        guard product.id != subscription.productId else {
            if offer != nil {
                report.happened.append(
                    "\(subscription.account) redeemed an offer for \(product.id), from the next renewal")
                report.append(try notify(type, nil, transactionId: subscription.latestTransactionId))
                return report
            }
            if subscription.autoRenewProductId != product.id {
                subscription.autoRenewProductId = product.id
                subscriptions[key] = subscription
                report.happened.append("\(subscription.account) stays on \(product.id): the downgrade is undone")
                report.append(try notify(type, nil, transactionId: subscription.latestTransactionId))
                return report
            }
            if !subscription.autoRenew { return try setAutoRenew(originalTransactionId: subscription.originalId, true) }
            throw SimulatorError("invalid-state", "\(subscription.account) is already subscribed to \(product.id)")
        }
        if rank(product.id) < rank(subscription.productId) {
            let now = clock.now()
            update(subscription.latestTransactionId) { $0.isUpgraded = true }
            let record = nextPeriod(of: subscription, product: product, from: now, renewal: false)
            let id = record.id
            update(id) { $0.offer = offer }
            subscription.productId = product.id
            subscription.autoRenewProductId = product.id
            subscription.latestTransactionId = id
            subscription.expiresDate = record.expiresDate ?? now
            subscriptions[key] = subscription
            report.happened.append("\(subscription.account) upgraded to \(product.id) at once: transaction \(id)")
            report.transactionIds.append(id)
            report.append(try notify(type, "UPGRADE", transactionId: id))
        } else {
            subscription.autoRenewProductId = product.id
            subscriptions[key] = subscription
            report.happened.append(
                "\(subscription.account) downgrades to \(product.id) at the next renewal (\(subscription.expiresDate.formatted(.iso8601)))"
            )
            report.append(try notify(type, "DOWNGRADE", transactionId: subscription.latestTransactionId))
        }
        return report
    }
}
