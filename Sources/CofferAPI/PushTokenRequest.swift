/// The body of `PUT /v1/me/push-token` (and `DELETE /v1/me/push-token`): this device's APNs token, so the
/// server can wake the app with a background push when support grants or edits a balance, or a refund touches
/// the customer.
public struct PushTokenRequest: Codable, Sendable, Equatable {
    /// The device token `application(_:didRegisterForRemoteNotificationsWithDeviceToken:)` gave, as hex.
    public var token: String
    /// `sandbox` for an app built for development, `production` (the default) for App Store and TestFlight
    /// builds: the APNs the token belongs to.
    public var environment: String?

    /// Creates the body.
    public init(token: String, environment: String? = nil) {
        self.token = token
        self.environment = environment
    }
}
