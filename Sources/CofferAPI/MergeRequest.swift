/// `POST /v1/admin/users/merge`: support joins an anonymous user (an install from before Apple accounts, or
/// one on a system without an AppTransaction) to the customer its Apple account is.
public struct MergeRequest: Sendable, Hashable, Codable {
    /// The anonymous user's Support ID: merged away.
    public var from: String
    /// The account user's Support ID: it keeps everything.
    public var into: String
    /// The merge code the merged customer's install shows (`POST /v1/me/merge-code`): the customer's word.
    public var code: String?
    /// Without a code, an owner's override: why (audited as `user.merge.override`).
    public var overrideReason: String?
    /// A merge code an install of the account shows: the account owner's word that the merged installs may sign in
    /// as the account's customer. Without it their tokens end and they register again.
    public var intoCode: String?

    /// Creates a request.
    public init(
        from: String, into: String, code: String? = nil, overrideReason: String? = nil, intoCode: String? = nil
    ) {
        self.from = from
        self.into = into
        self.code = code
        self.overrideReason = overrideReason
        self.intoCode = intoCode
    }
}
