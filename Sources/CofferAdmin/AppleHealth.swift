import CofferStore

/// Whether Apple's side is healthy, for the dashboard: what arrived, and what the recovery service found.
public struct AppleHealth: Sendable, Hashable {
    /// How many notifications of one type.
    public struct TypeCount: Sendable, Hashable {
        /// Apple's `notificationType`.
        public var type: String
        /// How many.
        public var count: Int

        /// Creates a count.
        public init(type: String, count: Int) {
            self.type = type
            self.count = count
        }
    }

    /// The newest notification received, if any.
    public var lastNotification: NotificationRecord?
    /// Notifications received over the last 7 days, by type, most first.
    public var lastWeek: [TypeCount]
    /// The recovery service's last run, if it ever ran.
    public var recovery: RecoveryRun?
    /// The reconciliation with Apple's history: the last run, or the one under way.
    public var reconciliation: ReconciliationRun?

    /// Creates the figures.
    public init(
        lastNotification: NotificationRecord?, lastWeek: [TypeCount], recovery: RecoveryRun?,
        reconciliation: ReconciliationRun? = nil
    ) {
        self.lastNotification = lastNotification
        self.lastWeek = lastWeek
        self.recovery = recovery
        self.reconciliation = reconciliation
    }
}
