import Foundation

/// `POST /v1/admin/grants`: credits for a user, with a reason.
public struct GrantRequest: Sendable, Hashable, Codable {
    /// The recipient's Support ID.
    public var supportId: String
    /// The credits.
    public var credits: Int64
    /// Why, e.g. "Ticket #42".
    public var reason: String
    /// The grant's id, chosen by the caller (a UUID), so that asking again after a lost answer returns the same
    /// grant instead of making a second; `nil` for one the server names.
    public var id: String?

    /// Creates a request.
    public init(supportId: String, credits: Int64, reason: String, id: String? = nil) {
        self.supportId = supportId
        self.credits = credits
        self.reason = reason
        self.id = id
    }
}

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

/// `POST /v1/admin/users/{supportId}/balance`: the balance to set, with a reason.
public struct BalanceRequest: Sendable, Hashable, Codable {
    /// The new balance.
    public var balance: Int64
    /// Why.
    public var reason: String
    /// The balance support saw (the server wallet's balance, or the device wallet's backed-up balance): when
    /// given, the edit is refused (409 `balance-changed`) unless the balance is still this inside its
    /// transaction.
    public var expected: Int64?

    /// Creates a request.
    public init(balance: Int64, reason: String, expected: Int64? = nil) {
        self.balance = balance
        self.reason = reason
        self.expected = expected
    }
}

/// `POST /v1/admin/grants/delete-all`: how many grants were deleted.
public struct DeletedGrants: Sendable, Hashable, Codable {
    /// The count.
    public var deleted: Int

    /// Creates a result.
    public init(deleted: Int) { self.deleted = deleted }
}

/// The JSON coding the admin API and the CLI share: sorted keys, ISO 8601 dates.
public enum AdminJSON {
    /// An encoder.
    public static var encoder: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        encoder.dateEncodingStrategy = .iso8601
        return encoder
    }

    /// A decoder.
    public static var decoder: JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }
}

/// Percent-encoding for the admin API's paths and queries and the panel's links: everything but RFC 3986's
/// unreserved characters, so a Support ID or a search reaches the server as typed and signs the same.
public enum URLText {
    /// `text` with every character but letters, digits and `-._~` percent-encoded.
    public static func escape(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-._~")))
            ?? ""
    }
}
