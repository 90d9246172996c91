import CofferAppStore
import Foundation

/// What the simulator holds for one account: its transactions, subscriptions and the notifications
/// about them with every delivery attempt. `coffer appstore-sim history` prints it.
public struct SimulatorHistory: Sendable, Codable, Equatable {
    /// One transaction.
    public struct Transaction: Sendable, Codable, Equatable {
        /// The transaction id.
        public var transactionId: String
        /// The original transaction id.
        public var originalTransactionId: String
        /// The order id, as the customer's emailed receipt shows it (Look Up Order ID takes it).
        public var orderId: String
        /// The product.
        public var productId: String
        /// Units bought.
        public var quantity: Int
        /// When it was bought.
        public var purchaseDate: Date
        /// When its period ends (subscriptions).
        public var expiresDate: Date?
        /// When it was refunded or revoked.
        public var revocationDate: Date?
        /// `PURCHASED` or `FAMILY_SHARED`.
        public var ownership: String
        /// Whether the device finished it.
        public var finished: Bool
        /// The consumption information the app's server last sent about it (Send Consumption Information).
        public var consumption: SimulatedConsumption?
    }

    /// One subscription.
    public struct Subscription: Sendable, Codable, Equatable {
        /// The original transaction id.
        public var originalTransactionId: String
        /// The product now.
        public var productId: String
        /// The product at the next renewal.
        public var autoRenewProductId: String
        /// Apple's status: 1 active, 2 expired, 3 billing retry, 4 grace period, 5 revoked.
        public var status: Int32
        /// Whether it renews.
        public var autoRenew: Bool
        /// When the current period ends.
        public var expiresDate: Date
    }

    /// One notification.
    public struct Notification: Sendable, Codable, Equatable {
        /// The notification UUID.
        public var notificationUUID: String
        /// `TYPE` or `TYPE/SUBTYPE`.
        public var type: String
        /// The transaction it is about.
        public var transactionId: String?
        /// When it was created (simulated time).
        public var created: Date
        /// The result of each delivery attempt, e.g. `UNSUCCESSFUL_HTTP_RESPONSE_CODE`, `SUCCESS`.
        public var attempts: [String]
    }

    /// The account.
    public var account: String
    /// The simulated time.
    public var clock: Date
    /// Its transactions, oldest first.
    public var transactions: [Transaction]
    /// Its subscriptions.
    public var subscriptions: [Subscription]
    /// Notifications about its transactions (and TEST notifications), oldest first.
    public var notifications: [Notification]
}

extension SimulatedAppStore {
    /// The account's history.
    public func history(account: String) -> SimulatorHistory {
        let own = transactions.filter { $0.account == account }
        let ids = Set(own.map(\.id))
        return SimulatorHistory(
            account: account, clock: clock.now(),
            transactions: own.map {
                .init(
                    transactionId: $0.id, originalTransactionId: $0.originalId, orderId: $0.orderId,
                    productId: $0.product.id,
                    quantity: $0.quantity, purchaseDate: $0.purchaseDate, expiresDate: $0.expiresDate,
                    revocationDate: $0.revocationDate, ownership: $0.familyShared ? "FAMILY_SHARED" : "PURCHASED",
                    finished: $0.finished, consumption: consumptions[$0.id])
            },
            subscriptions: subscriptions.values.filter { $0.account == account }.sorted {
                $0.originalId < $1.originalId
            }
            .map {
                .init(
                    originalTransactionId: $0.originalId, productId: $0.productId,
                    autoRenewProductId: $0.autoRenewProductId, status: $0.state.rawValue, autoRenew: $0.autoRenew,
                    expiresDate: $0.expiresDate)
            },
            notifications: notifications.filter { $0.transactionId.map(ids.contains) ?? true }.map {
                .init(
                    notificationUUID: $0.uuid, type: $0.subtype.map { [type = $0.type] in "\(type)/\($0)" } ?? $0.type,
                    transactionId: $0.transactionId, created: $0.created,
                    attempts: $0.attempts.compactMap(\.rawSendAttemptResult))
            })
    }
}
