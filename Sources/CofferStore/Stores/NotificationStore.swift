import CofferCore
import Foundation

/// Apple's notifications as received, the renewal states they carry, and the cursors of the services that
/// read Apple's histories.
public protocol NotificationStore: Sendable {
    // MARK: Notifications

    /// Records a notification unless one with its `notificationUUID` is recorded in its environment.
    ///
    /// - Returns: `true` when recorded, `false` when it was already there (nothing changed).
    func recordNotification(_ record: NotificationRecord) async throws -> Bool
    /// The notification with this `notificationUUID`.
    func notification(uuid: String, environment: AppStoreEnvironment) async throws -> NotificationRecord?
    /// Notifications of an environment, latest received first, optionally about one transaction
    /// (matching `transactionId` or `originalTransactionId`) or with one outcome.
    func notifications(
        environment: AppStoreEnvironment, transactionId: String?, outcome: NotificationOutcome?, limit: Int
    ) async throws -> [NotificationRecord]
    /// How many notifications of each type an environment received at or after `since`.
    func notificationCounts(environment: AppStoreEnvironment, since: Date) async throws -> [String: Int]
    /// Saves a subscription chain's renewal state unless the stored one was signed later.
    ///
    /// - Returns: `true` when saved.
    func saveRenewalState(_ state: RenewalState) async throws -> Bool
    /// The renewal states of a user's subscription chains.
    func renewalStates(owner: UUID, environment: AppStoreEnvironment) async throws -> [RenewalState]
    /// A named position of a background service (the notification recovery cursor, say).
    func cursor(_ name: String, environment: AppStoreEnvironment) async throws -> String?
    /// Saves a named position.
    func saveCursor(_ name: String, value: String, environment: AppStoreEnvironment) async throws
}
