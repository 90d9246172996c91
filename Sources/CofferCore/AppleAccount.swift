import Foundation

/// One Apple account's copy of the app, as Apple's signed AppTransaction names it: `appTransactionId` is the
/// same on every device and reinstall of the app for one Apple account, per environment.
public struct AppleAccount: Sendable, Hashable, Codable {
    /// Apple's `appTransactionId`.
    public var appTransactionId: String
    /// The environment the AppTransaction says (`receiptType`): Sandbox for App Review, TestFlight and sandbox
    /// testers, even on a Production server.
    public var environment: AppStoreEnvironment

    /// Creates an account key.
    public init(appTransactionId: String, environment: AppStoreEnvironment) {
        self.appTransactionId = appTransactionId
        self.environment = environment
    }
}
