import CofferAppStore
import CofferCore
import CofferStoreKit
import Foundation

extension SimulatedAppStore {
    /// Notifications as they are created, for the delivery service.
    public func notificationFeed() -> AsyncStream<OutgoingNotification> {
        let (stream, continuation) = AsyncStream<OutgoingNotification>.makeStream()
        notificationContinuation = continuation
        return stream
    }

    /// Every notification created so far, oldest first, as Apple posts them.
    public func sentNotifications() -> [OutgoingNotification] {
        notifications.map {
            OutgoingNotification(
                uuid: $0.uuid, signedPayload: $0.signedPayload, type: $0.type, transactionId: $0.transactionId)
        }
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
    func notify(
        _ type: String, _ subtype: String?, transactionId: String? = nil, consumptionReason: Bool = false,
        summary: NotificationSummary? = nil, appData: AppData? = nil
    ) throws(SimulatorError) -> SimulatorReport {
        var payload = ResponseBodyV2DecodedPayload()
        payload.rawNotificationType = type
        payload.rawSubtype = subtype
        payload.notificationUUID = UUID().uuidString.lowercased()
        payload.version = "2.0"
        payload.signedDate = clock.now()
        var data = NotificationData()
        data.rawEnvironment =
            (transactionId.flatMap(record).map { environment(of: $0.account) } ?? configuration.environment).rawValue
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
        // A summary or an app-level notification carries no transaction data.
        if let summary {
            payload.summary = summary
        } else if let appData {
            payload.appData = appData
        } else {
            payload.data = data
        }
        let signed = try sign(payload)
        notifications.append(
            SimulatedNotification(
                uuid: payload.notificationUUID ?? "", type: type, subtype: subtype, transactionId: transactionId,
                signedPayload: signed, created: clock.now()))
        notificationContinuation?.yield(
            OutgoingNotification(
                uuid: payload.notificationUUID ?? "", signedPayload: signed, type: type, transactionId: transactionId))
        var report = SimulatorReport()
        report.notifications.append(subtype.map { "\(type)/\($0)" } ?? type)
        return report
    }
}
