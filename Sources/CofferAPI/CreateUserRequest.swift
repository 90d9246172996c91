/// The body of `POST /v1/users`: empty (or `{}`) for an anonymous user, or the app's signed AppTransaction to
/// register this device to the customer its Apple account is.
public struct CreateUserRequest: Codable, Sendable, Equatable {
    /// StoreKit's `AppTransaction.shared` as signed data (`jwsRepresentation`).
    public var signedAppTransaction: String?

    /// Creates the body.
    public init(signedAppTransaction: String? = nil) { self.signedAppTransaction = signedAppTransaction }
}
