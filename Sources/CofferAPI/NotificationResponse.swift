/// `POST /v1/apple/notifications` answers with this (Apple reads only the status code).
public struct NotificationResponse: Codable, Sendable, Equatable {
    /// `applied`, `duplicate` (this `notificationUUID` was processed before), `unattributed` (kept until a
    /// user presents the transaction) or `logged` (nothing to apply).
    public var outcome: String

    /// Creates the answer.
    public init(outcome: String) { self.outcome = outcome }
}
