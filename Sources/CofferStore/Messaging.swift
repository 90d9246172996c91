import CofferCore
import Foundation

/// A device's Apple Push Notification service token, registered by the app (`PUT /v1/me/push-token`), so the
/// server can wake it with a background push when support grants or edits a balance, or a refund touches the
/// customer.
public struct PushToken: Sendable, Hashable, Codable {
    /// Which APNs a token belongs to: apps from Xcode and TestFlight... register with the sandbox gateway
    /// (development builds), App Store builds with production.
    public enum Gateway: String, Sendable, Hashable, Codable, CaseIterable {
        /// `api.sandbox.push.apple.com` (development builds).
        case sandbox
        /// `api.push.apple.com` (App Store and TestFlight builds).
        case production
    }

    /// How many push tokens every store keeps for one user (the most recently registered): an app registering in
    /// a loop cannot grow the database, and pushes go to at most this many devices.
    public static let keptPerUser = 20

    /// The device token, lowercase hex.
    public var token: String
    /// The user.
    public var owner: UUID
    /// The user's environment (the server's).
    public var environment: AppStoreEnvironment
    /// The APNs gateway the token belongs to.
    public var gateway: Gateway
    /// When the app last registered it.
    public var updatedAt: Date

    /// Creates a token record.
    public init(token: String, owner: UUID, environment: AppStoreEnvironment, gateway: Gateway, updatedAt: Date) {
        self.token = token
        self.owner = owner
        self.environment = environment
        self.gateway = gateway
        self.updatedAt = updatedAt
    }
}

/// One event, as instances sharing a database tell each other (``EventBroadcast``): which user it is for, its
/// kind and key, and the instance that published it (which ignores its own).
public struct BroadcastMessage: Sendable, Hashable, Codable {
    /// The publishing instance.
    public var origin: UUID
    /// The user.
    public var user: UUID
    /// The event's kind (`grant`, `adjustment`, `backup`, `entitlements`).
    public var kind: String
    /// The event's key.
    public var key: String?

    /// Creates a message.
    public init(origin: UUID, user: UUID, kind: String, key: String?) {
        self.origin = origin
        self.user = user
        self.kind = kind
        self.key = key
    }
}

/// How server instances sharing one database hear each other's events, so a customer's event stream on any
/// instance hears a grant made on another: PostgreSQL's LISTEN/NOTIFY (``EventBroadcast`` of the PostgreSQL
/// store). SQLite serves one instance and needs none.
public protocol EventBroadcast: Sendable {
    /// Tells the other instances.
    func broadcast(_ message: BroadcastMessage) async throws
    /// Hears every instance's messages (this one's too) until the task is cancelled or the connection drops
    /// (then it throws, and the caller listens again).
    func listen(_ deliver: @escaping @Sendable (BroadcastMessage) async -> Void) async throws
}
