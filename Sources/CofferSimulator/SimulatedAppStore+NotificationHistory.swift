import CofferAppStore
import Foundation

extension SimulatedAPIError {
    static let startDateTooFarInPast = Self(
        status: 400, errorCode: 4_000_012, errorMessage: "Invalid request. The start date is too far in the past.")
    static let invalidNotificationType = Self(
        status: 400, errorCode: 4_000_018, errorMessage: "Invalid notification type or subtype.")
    static let multipleFilters = Self(
        status: 400, errorCode: 4_000_019,
        errorMessage: "Invalid request. Only one of transactionId and notificationType may be supplied.")
    static let notificationURLNotFound = Self(
        status: 404, errorCode: 4_040_007, errorMessage: "No App Store Server Notifications V2 URL is configured.")
}

extension SimulatedAppStore {
    /// Each notification type Apple sends for in-app purchases, with the subtypes it may carry (`""` for none).
    static let notificationSubtypes: [String: Set<String>] = [
        "SUBSCRIBED": ["INITIAL_BUY", "RESUBSCRIBE"],
        "DID_CHANGE_RENEWAL_PREF": ["UPGRADE", "DOWNGRADE", ""],
        "DID_CHANGE_RENEWAL_STATUS": ["AUTO_RENEW_ENABLED", "AUTO_RENEW_DISABLED"],
        "OFFER_REDEEMED": ["INITIAL_BUY", "RESUBSCRIBE", "UPGRADE", "DOWNGRADE", ""],
        "DID_RENEW": ["BILLING_RECOVERY", ""],
        "EXPIRED": ["VOLUNTARY", "BILLING_RETRY", "PRICE_INCREASE", "PRODUCT_NOT_FOR_SALE"],
        "DID_FAIL_TO_RENEW": ["GRACE_PERIOD", ""],
        "GRACE_PERIOD_EXPIRED": [""],
        "PRICE_INCREASE": ["PENDING", "ACCEPTED"],
        "REFUND": [""],
        "REFUND_DECLINED": [""],
        "REFUND_REVERSED": [""],
        "CONSUMPTION_REQUEST": [""],
        "RENEWAL_EXTENDED": [""],
        "RENEWAL_EXTENSION": ["SUMMARY", "FAILURE"],
        "REVOKE": [""],
        "TEST": [""],
        "ONE_TIME_CHARGE": [""],
        "RESCIND_CONSENT": [""],
        "EXTERNAL_PURCHASE_TOKEN": ["UNREPORTED"],
        "METADATA_UPDATE": [""],
        "MIGRATION": [""],
        "PRICE_CHANGE": [""],
    ]

    /// How far back notification history reaches: 180 days in Production, 30 in the sandbox (Apple's limits).
    var notificationHistoryDays: Double { configuration.environment == .production ? 180 : 30 }

    /// Get Notification History, with Apple's rules: both dates required, the start within the history Apple keeps
    /// (``notificationHistoryDays``) and before the end, an end in the future read as now; a type (with a subtype
    /// it may carry) or a transaction id of the customer's (any of their transactions), not both; `onlyFailures`
    /// for notifications that have not reached the server yet (retries included). 20 per page, each with its
    /// attempts.
    public func notificationHistory(_ request: NotificationHistoryRequest, paginationToken: String?)
        throws(SimulatedAPIError) -> NotificationHistoryResponse
    {
        let now = clock.now()
        guard let start = request.startDate else { throw HistoryFilter.invalidStartDate }
        guard let requestedEnd = request.endDate else { throw HistoryFilter.invalidEndDate }
        guard start < requestedEnd else { throw HistoryFilter.startAfterEnd }
        guard start >= now.addingTimeInterval(-notificationHistoryDays * 86_400) else { throw .startDateTooFarInPast }
        let end = min(requestedEnd, now.addingTimeInterval(0.001))
        if let type = request.rawNotificationType {
            guard request.transactionId == nil else { throw .multipleFilters }
            guard let subtypes = Self.notificationSubtypes[type],
                request.rawNotificationSubtype.map(subtypes.contains) ?? true
            else { throw .invalidNotificationType }
        } else if request.rawNotificationSubtype != nil {
            throw .invalidNotificationType
        }
        // The customer's: notifications about any of their transactions.
        let customer = request.transactionId.map { account(ofAnyId: $0) }
        let matching = notifications.filter { notification in
            guard notification.created >= start && notification.created < end else { return false }
            if let type = request.rawNotificationType {
                guard type == notification.type,
                    request.rawNotificationSubtype.map({ $0 == notification.subtype })
                        ?? true
                else { return false }
            }
            if let customer {
                guard let customer, let id = notification.transactionId, record(id)?.account == customer else {
                    return false
                }
            }
            return request.onlyFailures != true || !notification.delivered
        }
        let (page, next, more) = try Self.page(matching, token: paginationToken, error: .invalidPaginationToken)
        var response = NotificationHistoryResponse()
        response.paginationToken = next
        response.hasMore = more
        response.notificationHistory = page.map { notification in
            var item = NotificationHistoryResponseItem()
            item.signedPayload = notification.signedPayload
            item.sendAttempts = notification.attempts
            return item
        }
        return response
    }

    /// Whether the app has a notification URL: a delivery service reads the feed (`--notify` on the command line).
    public var hasNotificationURL: Bool { notificationContinuation != nil }

    /// Request a Test Notification: a TEST notification's token, or 4040007 when no URL is set.
    public func requestTestNotification() throws(SimulatedAPIError) -> SendTestNotificationResponse {
        guard hasNotificationURL else { throw .notificationURLNotFound }
        var response = SendTestNotificationResponse()
        do {
            response.testNotificationToken = try sendTestNotification()
        } catch {
            throw .internalError
        }
        return response
    }
}
