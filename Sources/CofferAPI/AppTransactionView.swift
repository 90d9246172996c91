import Foundation

/// The customer's app transaction as Apple holds it (Get App Transaction Info): when and with which version they
/// first got the app, for support.
public struct AppTransactionView: Sendable, Hashable, Codable {
    /// Apple's id of the app transaction: the Apple account's, for this app.
    public var appTransactionId: String
    /// When the customer first bought or downloaded the app.
    public var originalPurchaseDate: Date?
    /// The app version they first had (the build number on iOS).
    public var originalApplicationVersion: String?
    /// The version of the app on the device that made the app transaction.
    public var applicationVersion: String?
    /// The platform they first got it on (`iOS`, `macOS`, ...).
    public var originalPlatform: String?
    /// The environment Apple's data comes from (`Sandbox`, `Production`).
    public var environment: String?

    /// Creates a view.
    public init(
        appTransactionId: String, originalPurchaseDate: Date?, originalApplicationVersion: String?,
        applicationVersion: String?, originalPlatform: String?, environment: String?
    ) {
        self.appTransactionId = appTransactionId
        self.originalPurchaseDate = originalPurchaseDate
        self.originalApplicationVersion = originalApplicationVersion
        self.applicationVersion = applicationVersion
        self.originalPlatform = originalPlatform
        self.environment = environment
    }
}
