/// The body of `POST /v1/users/cloudkit`: an app claiming the customer `coffer import cloudkit` brought in from
/// the app's CloudKit records, by the CloudKit user record name the device reads (`CKContainer.userRecordID()`).
public struct CloudKitClaimRequest: Codable, Sendable, Equatable {
    /// The customer's CloudKit user record name, e.g. `_0123456789abcdef0123456789abcdef`.
    public var userRecordName: String
    /// A random secret the install chose and kept before asking (16 to 128 characters): the first claim's key
    /// keeps the customer, and the same key claims again after a lost answer.
    public var claimKey: String
    /// StoreKit's AppTransaction, signed, when the app registers by Apple account: the imported customer becomes
    /// that account's (unless the account has a customer already), so its other devices find them.
    public var signedAppTransaction: String?
    /// A CloudKit web auth token the app fetched for this claim (`CKFetchWebAuthTokenOperation` with the
    /// container's API token): the proof that the claim comes from the iCloud user it names. Single-use; required
    /// when the server's `cloudkit.claim.proof` is `web-auth-token`.
    public var ckWebAuthToken: String?

    /// Creates the body.
    public init(
        userRecordName: String, claimKey: String, signedAppTransaction: String? = nil, ckWebAuthToken: String? = nil
    ) {
        self.userRecordName = userRecordName
        self.claimKey = claimKey
        self.signedAppTransaction = signedAppTransaction
        self.ckWebAuthToken = ckWebAuthToken
    }
}
