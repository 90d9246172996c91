/// The body Apple posts to `POST /v1/apple/notifications` (App Store Server Notifications V2).
public struct NotificationRequest: Codable, Sendable, Equatable {
    /// The signed notification.
    public var signedPayload: String

    /// Creates the body.
    public init(signedPayload: String) { self.signedPayload = signedPayload }
}
