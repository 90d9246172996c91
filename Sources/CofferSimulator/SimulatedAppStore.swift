import CofferAppStore
import CofferCore
import CofferStoreKit
import Foundation

/// The App Store, simulated for one app: accounts with their devices, purchases, subscriptions that renew
/// on a controllable clock, refunds, family sharing, Ask to Buy, and a Notification V2 for every state
/// change, all signed by a ``SimulatorPKI`` exactly as Apple shapes them.
///
/// ```swift
/// let store = SimulatedAppStore(catalog: catalog, configuration: .init(bundleId: "com.example", appAppleId: 1),
///                               signer: try pki.signer(), clock: SimulatorClock(start: .now))
/// let report = try await store.purchase(account: "alice", productId: "com.example.credits", quantity: 3)
/// try await store.advanceClock(by: 31 * 86_400)   // renewals, grace periods and expiries happen here
/// ```
public actor SimulatedAppStore {
    /// The products on sale.
    public let catalog: Catalog
    /// The app and its settings.
    public let configuration: SimulatorConfiguration
    /// The simulated time.
    public let clock: SimulatorClock
    /// Signs app receipts in Apple's PKCS#7 shape, when set.
    public let receiptAuthority: SimulatorReceiptAuthority?
    let signer: JWSSigner

    var transactions: [SimulatedTransaction] = []
    private var index: [String: Int] = [:]
    var subscriptions: [String: SimulatedSubscription] = [:]
    var notifications: [SimulatedNotification] = []
    private var pending: [String: (account: String, productId: String, quantity: Int, token: UUID?)] = [:]
    private var families: [String: Set<String>] = [:]
    private var failingBilling: Set<String> = []
    private var appTransactionIds: [String: String] = [:]
    var consumptionRequests: [String: ConsumptionRequest] = [:]
    private var nextId: Int64
    private var updateStreams: [String: [UUID: AsyncStream<StoreTransaction>.Continuation]] = [:]
    private var notificationContinuation: AsyncStream<OutgoingNotification>.Continuation?

    /// Creates a simulated App Store.
    ///
    /// - Parameters:
    ///   - catalog: The products on sale (a Coffer catalog). Auto-renewable products renew every
    ///     `durationDays` (30 when absent); within a group, products listed first rank higher, so moving to
    ///     one listed earlier is an upgrade.
    ///   - configuration: The app and its settings.
    ///   - signer: Signs everything the simulator hands out.
    ///   - clock: The simulated time.
    ///   - receiptAuthority: Signs app receipts as PKCS#7 in Apple's shape; without one, app receipts are
    ///     tokens only this simulator's verifyReceipt reads.
    public init(
        catalog: Catalog, configuration: SimulatorConfiguration, signer: JWSSigner, clock: SimulatorClock,
        receiptAuthority: SimulatorReceiptAuthority? = nil
    ) {
        self.catalog = catalog
        self.configuration = configuration
        self.signer = signer
        self.clock = clock
        self.receiptAuthority = receiptAuthority
        self.nextId = configuration.firstTransactionId
    }

    // MARK: - Purchases

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
        account: String,
        productId: String,
        quantity: Int = 1,
        appAccountToken: UUID? = nil,
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

    private func complete(account: String, product: Product, quantity: Int, token: UUID?) throws(SimulatorError)
        -> SimulatorReport
    {
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
                return try change(existing, to: product)
            }
            return try subscribe(account: account, product: product, token: token)
        }
        let id = nextIdentifier()
        var expires: Date?
        if product.kind == .nonRenewing, let days = product.durationDays {
            expires = now.addingTimeInterval(Double(days) * 86_400)
        }
        let record = SimulatedTransaction(
            id: id, originalId: id, webOrderLineItemId: nil, orderId: orderId(), account: account, product: product,
            purchaseDate: now, originalPurchaseDate: now, expiresDate: expires, quantity: quantity,
            appAccountToken: token, familyShared: false, renewal: false, price: price(product) * Int64(quantity),
            modified: now)
        add(record)
        report.happened.append("\(account) bought \(product.id) ×\(quantity): transaction \(id)")
        report.transactionIds.append(id)
        report.append(try notify("ONE_TIME_CHARGE", nil, transactionId: id))
        if product.kind != .consumable { report.append(try shareWithFamily(id)) }
        return report
    }

    private func subscribe(account: String, product: Product, token: UUID?) throws(SimulatorError) -> SimulatorReport {
        let group = product.group ?? product.id
        let now = clock.now()
        let previous = subscriptions[subscriptionKey(account, group)]
        let id = nextIdentifier()
        let originalId = previous?.originalId ?? id
        let original = previous.flatMap { self.record($0.originalId) }
        let record = SimulatedTransaction(
            id: id, originalId: originalId, webOrderLineItemId: nextIdentifier(), orderId: orderId(),
            account: account, product: product, purchaseDate: now,
            originalPurchaseDate: original?.originalPurchaseDate ?? now, expiresDate: now + period(product),
            quantity: 1, appAccountToken: token, familyShared: false, renewal: false, price: price(product),
            modified: now)
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
        report.append(try notify("SUBSCRIBED", previous == nil ? "INITIAL_BUY" : "RESUBSCRIBE", transactionId: id))
        report.append(try shareWithFamily(id))
        return report
    }

    /// Moves a live subscription to another product of its group: a higher-ranked product takes effect at
    /// once (the current transaction is marked upgraded); a lower-ranked one at the next renewal.
    private func change(_ subscription: SimulatedSubscription, to product: Product) throws(SimulatorError)
        -> SimulatorReport
    {
        var subscription = subscription
        var report = SimulatorReport()
        guard product.id != subscription.productId else {
            if !subscription.autoRenew { return try setAutoRenew(originalTransactionId: subscription.originalId, true) }
            throw SimulatorError("invalid-state", "\(subscription.account) is already subscribed to \(product.id)")
        }
        let key = subscriptionKey(subscription.account, subscription.group)
        if rank(product.id) < rank(subscription.productId) {
            let now = clock.now()
            update(subscription.latestTransactionId) { $0.isUpgraded = true }
            let record = nextPeriod(of: subscription, product: product, from: now, renewal: false)
            let id = record.id
            subscription.productId = product.id
            subscription.autoRenewProductId = product.id
            subscription.latestTransactionId = id
            subscription.expiresDate = record.expiresDate ?? now
            subscriptions[key] = subscription
            report.happened.append("\(subscription.account) upgraded to \(product.id) at once: transaction \(id)")
            report.transactionIds.append(id)
            report.append(try notify("DID_CHANGE_RENEWAL_PREF", "UPGRADE", transactionId: id))
        } else {
            subscription.autoRenewProductId = product.id
            subscriptions[key] = subscription
            report.happened.append(
                "\(subscription.account) downgrades to \(product.id) at the next renewal (\(subscription.expiresDate.formatted(.iso8601)))"
            )
            report.append(
                try notify("DID_CHANGE_RENEWAL_PREF", "DOWNGRADE", transactionId: subscription.latestTransactionId))
        }
        return report
    }

    // MARK: - Refunds

    /// Apple asks the developer for consumption information about a refund request
    /// (CONSUMPTION_REQUEST); the request is then granted with ``refund(transactionId:percentage:)`` or
    /// turned down with ``declineRefund(transactionId:)``.
    @discardableResult
    public func requestRefund(transactionId: String) throws(SimulatorError) -> SimulatorReport {
        let record = try existing(transactionId)
        guard !record.isRevoked else {
            throw SimulatorError("invalid-state", "transaction \(transactionId) is refunded")
        }
        var report = SimulatorReport()
        report.happened.append("\(record.account) asked for a refund of \(transactionId)")
        report.append(try notify("CONSUMPTION_REQUEST", nil, transactionId: transactionId, consumptionReason: true))
        return report
    }

    /// Refunds a transaction: fully, or prorated (`percentage` in thousandths of a percent, 1-99999).
    @discardableResult
    public func refund(transactionId: String, percentage: Int32? = nil) throws(SimulatorError) -> SimulatorReport {
        let record = try existing(transactionId)
        guard !record.isRevoked else {
            throw SimulatorError("invalid-state", "transaction \(transactionId) is already refunded")
        }
        guard !record.familyShared else {
            throw SimulatorError("invalid-state", "transaction \(transactionId) is family-shared; refund the purchase")
        }
        if let percentage, !(1..<100_000).contains(percentage) {
            throw SimulatorError("invalid-request", "a prorated refund percentage is 1-99999 thousandths of a percent")
        }
        let now = clock.now()
        update(transactionId) {
            $0.revocationDate = now
            $0.revocationReason = 0
            $0.revocationPercentage = percentage
            $0.modified = now
        }
        var report = SimulatorReport()
        if let key = subscriptionKeyFor(record), subscriptions[key]?.latestTransactionId == transactionId {
            subscriptions[key]?.state = .revoked
            subscriptions[key]?.autoRenew = false
        }
        let how = percentage.map { "prorated \(Double($0) / 1000)%" } ?? "in full"
        report.happened.append("refunded \(transactionId) (\(record.product.id), \(record.account)) \(how)")
        report.transactionIds.append(transactionId)
        report.append(try notify("REFUND", nil, transactionId: transactionId))
        pushUpdate(transactionId)
        report.append(try revokeFamilyCopies(of: record.id, reason: "the purchase was refunded"))
        return report
    }

    /// Turns down a refund request (REFUND_DECLINED); nothing changes for the customer.
    @discardableResult
    public func declineRefund(transactionId: String) throws(SimulatorError) -> SimulatorReport {
        let record = try existing(transactionId)
        var report = SimulatorReport()
        report.happened.append("refund of \(transactionId) (\(record.product.id)) declined")
        report.append(try notify("REFUND_DECLINED", nil, transactionId: transactionId))
        return report
    }

    /// Reverses a refund (REFUND_REVERSED): the transaction is paid again.
    @discardableResult
    public func reverseRefund(transactionId: String) throws(SimulatorError) -> SimulatorReport {
        let record = try existing(transactionId)
        guard record.isRevoked, !record.familyShared else {
            throw SimulatorError("invalid-state", "transaction \(transactionId) has no refund to reverse")
        }
        let now = clock.now()
        update(transactionId) {
            $0.revocationDate = nil
            $0.revocationReason = nil
            $0.revocationPercentage = nil
            $0.modified = now
        }
        if let key = subscriptionKeyFor(record), subscriptions[key]?.latestTransactionId == transactionId {
            let expires = record.expiresDate ?? now
            subscriptions[key]?.state = expires > now ? .active : .expired
            subscriptions[key]?.autoRenew = expires > now
        }
        var report = SimulatorReport()
        report.happened.append("refund of \(transactionId) (\(record.product.id)) reversed")
        report.transactionIds.append(transactionId)
        report.append(try notify("REFUND_REVERSED", nil, transactionId: transactionId))
        pushUpdate(transactionId)
        return report
    }

    // MARK: - Family sharing

    /// Puts accounts in one family: their non-consumables and subscriptions bought from now on are shared.
    public func formFamily(_ accounts: [String]) {
        let members = Set(accounts)
        for account in accounts { families[account] = members }
    }

    /// Takes an account out of its family: what others shared with it is revoked (REVOKE), and what it
    /// shared with them too.
    @discardableResult
    public func leaveFamily(_ account: String) throws(SimulatorError) -> SimulatorReport {
        guard let members = families[account] else {
            throw SimulatorError("invalid-state", "\(account) is in no family")
        }
        var report = SimulatorReport()
        for member in members { families[member]?.remove(account) }
        families[account] = nil
        report.happened.append("\(account) left the family")
        let now = clock.now()
        let shared = transactions.filter { copy in
            copy.familyShared && !copy.isRevoked
                && (copy.account == account || familyOrigin[copy.id].flatMap { record($0)?.account } == account)
        }
        for copy in shared {
            update(copy.id) {
                $0.revocationDate = now
                $0.revocationReason = 0
                $0.modified = now
            }
            report.happened.append("family access to \(copy.product.id) revoked for \(copy.account): \(copy.id)")
            report.transactionIds.append(copy.id)
            report.append(try notify("REVOKE", nil, transactionId: copy.id))
            pushUpdate(copy.id)
        }
        return report
    }

    private func shareWithFamily(_ transactionId: String) throws(SimulatorError) -> SimulatorReport {
        var report = SimulatorReport()
        guard let purchase = record(transactionId) else { return report }
        for member in (families[purchase.account] ?? []).sorted() where member != purchase.account {
            let id = nextIdentifier()
            var copy = purchase
            copy.id = id
            copy.originalId = id
            copy.account = member
            copy.familyShared = true
            copy.appAccountToken = nil
            copy.price = 0
            copy.finished = false
            add(copy)
            familyOrigin[id] = purchase.id
            report.happened.append("shared \(purchase.product.id) with \(member): transaction \(id)")
            report.transactionIds.append(id)
            pushUpdate(id)
        }
        return report
    }

    private var familyOrigin: [String: String] = [:]

    private func revokeFamilyCopies(of purchaseId: String, reason: String) throws(SimulatorError) -> SimulatorReport {
        var report = SimulatorReport()
        let now = clock.now()
        for (copyId, origin) in familyOrigin.sorted(by: { $0.key < $1.key }) where origin == purchaseId {
            guard let copy = record(copyId), !copy.isRevoked else { continue }
            update(copyId) {
                $0.revocationDate = now
                $0.revocationReason = 0
                $0.modified = now
            }
            report.happened.append("family access to \(copy.product.id) revoked for \(copy.account) (\(reason))")
            report.transactionIds.append(copyId)
            report.append(try notify("REVOKE", nil, transactionId: copyId))
            pushUpdate(copyId)
        }
        return report
    }

    // MARK: - Subscriptions over time

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

    private func nextDue(before target: Date) -> (String, Date)? {
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

    private func handleDue(_ key: String) throws(SimulatorError) -> SimulatorReport {
        guard let subscription = subscriptions[key] else { return SimulatorReport() }
        let now = clock.now()
        switch subscription.state {
        case .active:
            guard subscription.autoRenew else { return try expire(key, subtype: "VOLUNTARY", intent: 1) }
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

    private func renew(_ key: String, at start: Date, recovery: Bool) throws(SimulatorError) -> SimulatorReport {
        guard var subscription = subscriptions[key] else { return SimulatorReport() }
        let product = try product(subscription.autoRenewProductId)
        let latest = record(subscription.latestTransactionId)
        if let latest, (latest.expiresDate ?? start) > start {
            update(latest.id) {
                $0.expiresDate = start
                $0.modified = start
            }
        }
        let record = nextPeriod(of: subscription, product: product, from: start, renewal: true)
        let id = record.id
        subscription.productId = product.id
        subscription.latestTransactionId = id
        subscription.expiresDate = record.expiresDate ?? start
        subscription.state = .active
        subscription.gracePeriodExpiresDate = nil
        subscription.billingRetryEnds = nil
        subscription.expirationIntent = nil
        subscription.autoRenew = true
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
    private func nextPeriod(of subscription: SimulatedSubscription, product: Product, from start: Date, renewal: Bool)
        -> SimulatedTransaction
    {
        let latest = record(subscription.latestTransactionId)
        let record = SimulatedTransaction(
            id: nextIdentifier(), originalId: subscription.originalId, webOrderLineItemId: nextIdentifier(),
            orderId: orderId(), account: subscription.account, product: product, purchaseDate: start,
            originalPurchaseDate: latest?.originalPurchaseDate ?? start, expiresDate: start + period(product),
            quantity: 1, appAccountToken: latest?.appAccountToken, familyShared: false, renewal: renewal,
            price: price(product), modified: start)
        add(record)
        return record
    }

    private func expire(_ key: String, subtype: String, intent: Int32) throws(SimulatorError) -> SimulatorReport {
        guard var subscription = subscriptions[key] else { return SimulatorReport() }
        subscription.state = .expired
        subscription.autoRenew = false
        subscription.expirationIntent = intent
        subscription.gracePeriodExpiresDate = nil
        subscription.billingRetryEnds = nil
        subscriptions[key] = subscription
        var report = SimulatorReport()
        report.happened.append("\(subscription.account)'s \(subscription.productId) expired (\(subtype.lowercased()))")
        report.append(try notify("EXPIRED", subtype, transactionId: subscription.latestTransactionId))
        return report
    }

    // MARK: - The device side

    /// Marks a transaction finished on the account's devices; it is no longer replayed.
    public func finish(transactionId: String) {
        update(transactionId) { $0.finished = true }
    }

    /// The account's transactions as its device sees them, oldest first.
    public func deviceTransactions(account: String) -> [StoreTransaction] {
        transactions.filter { $0.account == account }.map(storeTransaction)
    }

    /// The account's unfinished transactions.
    public func unfinishedTransactions(account: String) -> [StoreTransaction] {
        transactions.filter { $0.account == account && !$0.finished }.map(storeTransaction)
    }

    /// The latest transaction of each product the account is entitled to now.
    public func currentEntitlements(account: String) -> [StoreTransaction] {
        let now = clock.now()
        var latest: [String: SimulatedTransaction] = [:]
        for record in transactions where record.account == account && record.product.kind != .consumable {
            if let seen = latest[record.product.id], seen.purchaseDate > record.purchaseDate { continue }
            latest[record.product.id] = record
        }
        return latest.values.filter { record in
            guard !record.isRevoked, !record.isUpgraded else { return false }
            if let key = subscriptionKeyFor(record), let subscription = subscriptions[key],
                record.id == subscription.latestTransactionId || record.familyShared
            {
                return subscription.state == .gracePeriod || (record.expiresDate ?? now) > now
            }
            return (record.expiresDate ?? .distantFuture) > now
        }
        .sorted { $0.purchaseDate < $1.purchaseDate }
        .map(storeTransaction)
    }

    /// The account's device in one answer, for a StoreKit provider in another process.
    public func deviceState(account: String) -> SimulatedDeviceState {
        SimulatedDeviceState(
            transactions: deviceTransactions(account: account),
            unfinished: unfinishedTransactions(account: account).map(\.id),
            entitled: currentEntitlements(account: account).map(\.id))
    }

    /// A stream of the account's transaction updates that starts with every unfinished transaction.
    public func updates(account: String) -> AsyncStream<StoreTransaction> {
        let (stream, continuation) = AsyncStream<StoreTransaction>.makeStream()
        let id = UUID()
        updateStreams[account, default: [:]][id] = continuation
        for record in transactions where record.account == account && !record.finished {
            continuation.yield(storeTransaction(record))
        }
        continuation.onTermination = { [weak self] _ in
            Task { await self?.dropStream(account: account, id: id) }
        }
        return stream
    }

    private func dropStream(account: String, id: UUID) { updateStreams[account]?[id] = nil }

    /// A device of `account`, standing in for StoreKit.
    public nonisolated func device(account: String) -> SimulatedDevice {
        SimulatedDevice(store: self, account: account)
    }

    /// The account's app transaction, signed.
    public func signedAppTransaction(account: String) throws(SimulatorError) -> String {
        var app = AppTransaction()
        app.rawReceiptType = configuration.environment.rawValue
        app.appAppleId = configuration.appAppleId
        app.bundleId = configuration.bundleId
        app.applicationVersion = configuration.bundleVersion
        app.originalApplicationVersion = configuration.bundleVersion
        app.receiptCreationDate = clock.now()
        app.originalPurchaseDate = clock.now()
        app.appTransactionId = appTransactionId(account)
        app.rawOriginalPlatform = "iOS"
        return try sign(app)
    }

    // MARK: - Notifications

    /// Notifications as they are created, for the delivery service.
    public func notificationFeed() -> AsyncStream<OutgoingNotification> {
        let (stream, continuation) = AsyncStream<OutgoingNotification>.makeStream()
        notificationContinuation = continuation
        return stream
    }

    /// Every notification created so far, oldest first, as Apple posts them.
    public func sentNotifications() -> [OutgoingNotification] {
        notifications.map { OutgoingNotification(uuid: $0.uuid, signedPayload: $0.signedPayload) }
    }

    /// Sends a TEST notification and returns its UUID (Request a Test Notification).
    public func sendTestNotification() throws(SimulatorError) -> String {
        try notify("TEST", nil, transactionId: nil)
        return notifications[notifications.count - 1].uuid
    }

    /// Records one delivery attempt of a notification.
    public func recordAttempt(uuid: String, result: SendAttemptResult) {
        guard let index = notifications.firstIndex(where: { $0.uuid == uuid }) else { return }
        var attempt = SendAttemptItem()
        attempt.attemptDate = clock.now()
        attempt.rawSendAttemptResult = result.rawValue
        notifications[index].attempts.append(attempt)
        if result == .success { notifications[index].delivered = true }
    }

    @discardableResult
    private func notify(_ type: String, _ subtype: String?, transactionId: String?, consumptionReason: Bool = false)
        throws(SimulatorError) -> SimulatorReport
    {
        var payload = ResponseBodyV2DecodedPayload()
        payload.rawNotificationType = type
        payload.rawSubtype = subtype
        payload.notificationUUID = UUID().uuidString.lowercased()
        payload.version = "2.0"
        payload.signedDate = clock.now()
        var data = NotificationData()
        data.rawEnvironment = configuration.environment.rawValue
        data.appAppleId = configuration.appAppleId
        data.bundleId = configuration.bundleId
        data.bundleVersion = configuration.bundleVersion
        if let transactionId, let record = record(transactionId) {
            data.signedTransactionInfo = try signedTransaction(record)
            if let key = subscriptionKeyFor(record), let subscription = subscriptions[key] {
                data.signedRenewalInfo = try signedRenewalInfo(subscription)
                data.rawStatus = subscription.state.rawValue
            }
        }
        if consumptionReason { data.rawConsumptionRequestReason = "UNINTENDED_PURCHASE" }
        payload.data = data
        let signed = try sign(payload)
        notifications.append(
            SimulatedNotification(
                uuid: payload.notificationUUID ?? "", type: type, subtype: subtype, transactionId: transactionId,
                signedPayload: signed, created: clock.now()))
        notificationContinuation?.yield(
            OutgoingNotification(uuid: payload.notificationUUID ?? "", signedPayload: signed))
        var report = SimulatorReport()
        report.notifications.append(subtype.map { "\(type)/\($0)" } ?? type)
        return report
    }

    // MARK: - Signing

    /// A transaction signed as the device holds it (`jwsRepresentation`), signed now.
    public func signedTransaction(id: String) throws(SimulatorError) -> String {
        try signedTransaction(existing(id))
    }

    func signedTransaction(_ record: SimulatedTransaction) throws(SimulatorError) -> String {
        try sign(decoded(record))
    }

    func decoded(_ record: SimulatedTransaction) -> JWSTransactionDecodedPayload {
        var payload = JWSTransactionDecodedPayload()
        payload.transactionId = record.id
        payload.originalTransactionId = record.originalId
        payload.webOrderLineItemId = record.webOrderLineItemId
        payload.bundleId = configuration.bundleId
        payload.productId = record.product.id
        payload.subscriptionGroupIdentifier = record.product.kind == .autoRenewable ? record.product.group : nil
        payload.purchaseDate = record.purchaseDate
        payload.originalPurchaseDate = record.originalPurchaseDate
        payload.expiresDate = record.expiresDate
        payload.quantity = Int32(record.quantity)
        payload.rawType = StoreTransaction.ProductType(record.product.kind).rawValue
        payload.appAccountToken = record.appAccountToken
        payload.rawInAppOwnershipType = record.familyShared ? "FAMILY_SHARED" : "PURCHASED"
        payload.signedDate = clock.now()
        payload.revocationDate = record.revocationDate
        payload.rawRevocationReason = record.revocationReason
        if record.isRevoked, !record.familyShared {
            payload.rawRevocationType = record.revocationPercentage == nil ? "REFUND_FULL" : "REFUND_PRORATED"
            payload.revocationPercentage = record.revocationPercentage
        }
        payload.isUpgraded = record.isUpgraded ? true : nil
        payload.rawEnvironment = configuration.environment.rawValue
        payload.storefront = configuration.storefront
        payload.storefrontId = "143441"
        payload.rawTransactionReason = record.renewal ? "RENEWAL" : "PURCHASE"
        payload.currency = configuration.currency
        payload.price = record.price
        payload.appTransactionId = appTransactionId(record.account)
        return payload
    }

    func signedRenewalInfo(_ subscription: SimulatedSubscription) throws(SimulatorError) -> String {
        var info = JWSRenewalInfoDecodedPayload()
        info.originalTransactionId = subscription.originalId
        info.productId = subscription.productId
        info.autoRenewProductId = subscription.autoRenewProductId
        info.rawAutoRenewStatus = subscription.autoRenew ? 1 : 0
        info.rawExpirationIntent = subscription.expirationIntent
        info.isInBillingRetryPeriod =
            subscription.state == .billingRetry || subscription.state == .gracePeriod ? true : false
        info.gracePeriodExpiresDate = subscription.gracePeriodExpiresDate
        info.signedDate = clock.now()
        info.rawEnvironment = configuration.environment.rawValue
        info.recentSubscriptionStartDate = subscription.recentStartDate
        info.renewalDate = subscription.autoRenew ? subscription.expiresDate : nil
        info.currency = configuration.currency
        info.renewalPrice = (try? product(subscription.autoRenewProductId)).map(price)
        info.appTransactionId = appTransactionId(subscription.account)
        info.appAccountToken = record(subscription.latestTransactionId)?.appAccountToken
        return try sign(info)
    }

    private func sign(_ value: some Encodable) throws(SimulatorError) -> String {
        do {
            return try signer.sign(value)
        } catch {
            throw SimulatorError("signing-failed", "\(error)")
        }
    }

    // MARK: - Helpers

    func record(_ id: String) -> SimulatedTransaction? { index[id].map { transactions[$0] } }

    func existing(_ id: String) throws(SimulatorError) -> SimulatedTransaction {
        guard let record = record(id) else { throw SimulatorError("unknown-transaction", "no transaction \(id)") }
        return record
    }

    private func add(_ record: SimulatedTransaction) {
        index[record.id] = transactions.count
        transactions.append(record)
    }

    func extend(_ id: String, to date: Date) {
        update(id) {
            $0.expiresDate = date
            $0.modified = clock.now()
        }
    }

    private func update(_ id: String, _ change: (inout SimulatedTransaction) -> Void) {
        guard let position = index[id] else { return }
        change(&transactions[position])
    }

    private func pushUpdate(_ id: String) {
        guard let record = record(id) else { return }
        for continuation in (updateStreams[record.account] ?? [:]).values {
            continuation.yield(storeTransaction(record))
        }
    }

    private func storeTransaction(_ record: SimulatedTransaction) -> StoreTransaction {
        StoreTransaction(
            id: record.id, originalId: record.originalId, productId: record.product.id,
            productType: StoreTransaction.ProductType(record.product.kind), purchaseDate: record.purchaseDate,
            quantity: record.quantity, expirationDate: record.expiresDate, revocationDate: record.revocationDate,
            isFamilyShared: record.familyShared, isUpgraded: record.isUpgraded, appAccountToken: record.appAccountToken,
            jwsRepresentation: (try? signedTransaction(record)) ?? "")
    }

    private func product(_ id: String) throws(SimulatorError) -> Product {
        guard let product = catalog.product(id: id) else {
            throw SimulatorError("unknown-product", "\(id) is not in the catalog")
        }
        return product
    }

    private func price(_ product: Product) -> Int64 { configuration.prices[product.id] ?? 990 }

    private func period(_ product: Product) -> TimeInterval { Double(product.durationDays ?? 30) * 86_400 }

    /// A product's rank in its group: its position in the catalog (lower ranks higher).
    private func rank(_ productId: String) -> Int {
        catalog.products.firstIndex { $0.id == productId } ?? Int.max
    }

    private func subscriptionKey(_ account: String, _ group: String) -> String { "\(account)\u{1F}\(group)" }

    func subscriptionKeyFor(_ record: SimulatedTransaction) -> String? {
        guard record.product.kind == .autoRenewable else { return nil }
        let owner =
            record.familyShared ? (familyOrigin[record.id].flatMap { self.record($0)?.account }) : record.account
        return owner.map { subscriptionKey($0, record.product.group ?? record.product.id) }
    }

    private func subscriptionKey(forOriginal originalId: String) throws(SimulatorError) -> String {
        guard let key = subscriptions.first(where: { $0.value.originalId == originalId })?.key else {
            throw SimulatorError("unknown-transaction", "no subscription with original transaction \(originalId)")
        }
        return key
    }

    private func nextIdentifier() -> String {
        defer { nextId += 1 }
        return String(nextId)
    }

    private func orderId() -> String {
        let letters = Array("ABCDEFGHJKLMNPQRSTUVWXYZ23456789")
        return "M" + String((0..<9).map { _ in letters.randomElement()! })
    }

    func appTransactionId(_ account: String) -> String {
        if let id = appTransactionIds[account] { return id }
        let id = "70" + String(nextIdentifier())
        appTransactionIds[account] = id
        return id
    }
}

extension StoreTransaction.ProductType {
    init(_ kind: ProductKind) {
        switch kind {
        case .consumable: self = .consumable
        case .nonConsumable: self = .nonConsumable
        case .autoRenewable: self = .autoRenewable
        case .nonRenewing: self = .nonRenewing
        }
    }
}
