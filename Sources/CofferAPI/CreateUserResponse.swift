import Foundation

/// `POST /v1/users` answers with this: 201 for a new user, 200 for another device of an Apple account Coffer
/// knows (the same Support ID and appAccountToken, a token of the device's own). The token is shown once; the
/// server keeps only its hash.
public struct CreateUserResponse: Codable, Sendable, Equatable {
    /// The user's support id, `_` and 12 lowercase hex characters, shown in the app.
    public var supportId: String
    /// The bearer token for every later request. Keep it in the Keychain.
    public var token: String
    /// The token to pass to StoreKit as `appAccountToken`, so Apple's transactions name this user.
    public var appAccountToken: UUID

    /// Creates the answer.
    public init(supportId: String, token: String, appAccountToken: UUID) {
        self.supportId = supportId
        self.token = token
        self.appAccountToken = appAccountToken
    }
}
