import CofferAppStore
import CofferCore
import Foundation

extension SimulatedAPIError {
    static let invalidExtendReasonCode = Self(
        status: 400, errorCode: 4_000_010, errorMessage: "Invalid extend reason code.")
    static let invalidRequestIdentifier = Self(
        status: 400, errorCode: 4_000_011, errorMessage: "Invalid request identifier.")
    static let invalidProductId = Self(status: 400, errorCode: 4_000_023, errorMessage: "Invalid product id.")
    static let emptyStorefrontList = Self(
        status: 400, errorCode: 4_000_027, errorMessage: "Invalid request. The storefront country code list is empty.")
    static let invalidStorefront = Self(
        status: 400, errorCode: 4_000_028, errorMessage: "Invalid request. A storefront country code is invalid.")
    static let maximumExtensions = Self(
        status: 403, errorCode: 4_030_005,
        errorMessage: "The subscription already received the maximum number of renewal date extensions.")
    static let familySharedExtension = Self(
        status: 403, errorCode: 4_030_007,
        errorMessage: "Family Sharing subscriptions are not eligible for a renewal date extension.")
    static let originalTransactionNotFound = Self(
        status: 404, errorCode: 4_040_005, errorMessage: "Original transaction id not found.")
    static let statusRequestNotFound = Self(
        status: 404, errorCode: 4_040_009, errorMessage: "The requested status was not found.")
}

/// One request to Extend Renewal Dates for All Active Subscribers, as the simulator ran it.
struct MassExtension: Sendable {
    var productId: String
    var storefronts: [String]?
    var completed: Date
    var succeeded: Int64
    var failed: Int64
}

extension SimulatedAppStore {
    /// Extensions a subscription may have within 365 days.
    static let extensionsPerYear = 2

    /// Extend a Subscription Renewal Date, by 1-90 days, for an active, paid subscription that had fewer than two
    /// extensions in the past 365 days; its family members' copies move with it, and RENEWAL_EXTENDED is sent. The
    /// same `requestIdentifier` again answers what it answered the first time and changes nothing.
    public func extendRenewalDate(_ originalTransactionId: String, _ request: ExtendRenewalDateRequest)
        throws(SimulatedAPIError) -> ExtendRenewalDateResponse
    {
        let (days, requestId) = try Self.checkExtension(
            days: request.extendByDays, reason: request.extendReasonCode, requestId: request.requestIdentifier)
        if let earlier = extensionAnswers[requestId] { return earlier }
        guard let original = record(originalTransactionId) else { throw .originalTransactionNotFound }
        guard original.originalId == original.id else { throw .invalidOriginalTransactionId }
        guard !original.familyShared else { throw .familySharedExtension }
        guard let key = subscriptionKeyFor(original), let subscription = subscriptions[key],
            subscription.originalId == originalTransactionId
        else { throw .originalTransactionNotFound }
        if let refusal = extensionRefusal(subscription) { throw refusal }
        let extended = try applyExtension(key, days: days)
        var response = ExtendRenewalDateResponse()
        response.originalTransactionId = originalTransactionId
        response.webOrderLineItemId = record(subscription.latestTransactionId)?.webOrderLineItemId
        response.success = true
        response.effectiveDate = extended
        extensionAnswers[requestId] = response
        return response
    }

    /// Extend Renewal Dates for All Active Subscribers of a product (in the storefronts named, when named). The
    /// simulator runs it at once: RENEWAL_EXTENDED for each subscription extended, RENEWAL_EXTENSION/FAILURE for
    /// each active one that is not eligible (in a free offer period, out of its grace period, or extended twice in
    /// 365 days), then RENEWAL_EXTENSION/SUMMARY with the counts. The same `requestIdentifier` again changes nothing.
    public func extendRenewalDates(_ request: MassExtendRenewalDateRequest) throws(SimulatedAPIError)
        -> MassExtendRenewalDateResponse
    {
        let (days, requestId) = try Self.checkExtension(
            days: request.extendByDays, reason: request.extendReasonCode, requestId: request.requestIdentifier)
        guard let productId = request.productId, catalog.product(id: productId)?.kind == .autoRenewable else {
            throw .invalidProductId
        }
        if let storefronts = request.storefrontCountryCodes {
            guard !storefronts.isEmpty else { throw .emptyStorefrontList }
            guard storefronts.allSatisfy(Self.isStorefront) else { throw .invalidStorefront }
        }
        var response = MassExtendRenewalDateResponse()
        response.requestIdentifier = requestId
        if massExtensions[requestId] != nil { return response }
        var run = MassExtension(
            productId: productId, storefronts: request.storefrontCountryCodes, completed: clock.now(), succeeded: 0,
            failed: 0)
        let inStorefront = request.storefrontCountryCodes.map { $0.contains(configuration.storefront) } ?? true
        let candidates = subscriptions.filter { _, subscription in
            inStorefront && subscription.productId == productId
                && (subscription.state == .active || subscription.state == .gracePeriod)
        }
        do {
            for (key, subscription) in candidates.sorted(by: { $0.value.originalId < $1.value.originalId }) {
                if extensionRefusal(subscription) != nil {
                    run.failed += 1
                    try notify("RENEWAL_EXTENSION", "FAILURE", transactionId: subscription.latestTransactionId)
                } else {
                    run.succeeded += 1
                    _ = try applyExtension(key, days: days)
                }
            }
            var summary = NotificationSummary()
            summary.requestIdentifier = requestId
            summary.rawEnvironment = configuration.environment.rawValue
            summary.appAppleId = configuration.appAppleId
            summary.bundleId = configuration.bundleId
            summary.productId = productId
            summary.storefrontCountryCodes = request.storefrontCountryCodes
            summary.succeededCount = run.succeeded
            summary.failedCount = run.failed
            try notify("RENEWAL_EXTENSION", "SUMMARY", summary: summary)
        } catch {
            throw .internalError
        }
        massExtensions[requestId] = run
        return response
    }

    /// Get Status of Subscription Renewal Date Extensions.
    public func renewalExtensionStatus(productId: String, requestIdentifier: String) throws(SimulatedAPIError)
        -> MassExtendRenewalDateStatusResponse
    {
        guard !requestIdentifier.isEmpty, requestIdentifier.utf8.count <= 128 else { throw .invalidRequestIdentifier }
        guard catalog.product(id: productId)?.kind == .autoRenewable else { throw .invalidProductId }
        guard let run = massExtensions[requestIdentifier], run.productId == productId else {
            throw .statusRequestNotFound
        }
        var response = MassExtendRenewalDateStatusResponse()
        response.requestIdentifier = requestIdentifier
        response.complete = true
        response.completeDate = run.completed
        response.succeededCount = run.succeeded
        response.failedCount = run.failed
        return response
    }

    /// Why `subscription` may not be extended now, if it may not.
    func extensionRefusal(_ subscription: SimulatedSubscription) -> SimulatedAPIError? {
        let now = clock.now()
        switch subscription.state {
        case .active: break
        case .gracePeriod where subscription.expiresDate > now: break
        default: return .subscriptionNotActive
        }
        if record(subscription.latestTransactionId)?.introductoryOffer == .freeTrial { return .subscriptionNotActive }
        let recent = (extensionDates[subscription.originalId] ?? []).filter { now.timeIntervalSince($0) < 365 * 86_400 }
        return recent.count >= Self.extensionsPerYear ? .maximumExtensions : nil
    }

    /// Moves the subscription's renewal, and its latest transaction's (and family copies') expiry, `days` later,
    /// and sends RENEWAL_EXTENDED.
    private func applyExtension(_ key: String, days: Int32) throws(SimulatedAPIError) -> Date {
        guard var subscription = subscriptions[key] else { throw .originalTransactionNotFound }
        let extended = subscription.expiresDate.addingTimeInterval(Double(days) * 86_400)
        subscription.expiresDate = extended
        subscriptions[key] = subscription
        extend(subscription.latestTransactionId, to: extended)
        for (copy, origin) in familyOrigin where origin == subscription.latestTransactionId {
            extend(copy, to: extended)
        }
        extensionDates[subscription.originalId, default: []].append(clock.now())
        do {
            try notify("RENEWAL_EXTENDED", nil, transactionId: subscription.latestTransactionId)
        } catch {
            throw .internalError
        }
        pushUpdate(subscription.latestTransactionId)
        return extended
    }

    /// The checks both extension endpoints make: 1-90 days (4000009), a reason code 0-3 (4000010), a request
    /// identifier of 1-128 characters (4000011).
    private static func checkExtension(days: Int32?, reason: Int32?, requestId: String?) throws(SimulatedAPIError)
        -> (Int32, String)
    {
        guard let days, (1...90).contains(days) else { throw .invalidExtendByDays }
        guard let reason, (0...3).contains(reason) else { throw .invalidExtendReasonCode }
        guard let requestId, !requestId.isEmpty, requestId.utf8.count <= 128 else { throw .invalidRequestIdentifier }
        return (days, requestId)
    }

    /// An ISO 3166-1 alpha-3 code's shape: three capital letters.
    private static func isStorefront(_ code: String) -> Bool {
        code.utf8.count == 3 && code.utf8.allSatisfy { (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) }
    }
}
