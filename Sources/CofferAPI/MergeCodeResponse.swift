import Foundation

/// The answer of `POST /v1/me/merge-code`: a one-time code the install shows, which the customer reads to support
/// so support can merge this customer into their Apple account's.
public struct MergeCodeResponse: Codable, Sendable, Equatable {
    /// Eight characters shown as `K7QM-2XHP`.
    public var code: String
    /// When it stops working (15 minutes on).
    public var expiresAt: Date
    /// Whether the customer is an Apple account's: then the code lets support move another install of theirs into
    /// this account (it signs in as them from then on), and the app says so; otherwise it moves this install's
    /// purchases to their Apple account.
    public var appleAccount: Bool

    /// Creates the answer.
    public init(code: String, expiresAt: Date, appleAccount: Bool = false) {
        self.code = code
        self.expiresAt = expiresAt
        self.appleAccount = appleAccount
    }

    private enum CodingKeys: String, CodingKey { case code, expiresAt, appleAccount }

    /// Reads an answer; one from a server before `appleAccount` reads as an anonymous customer's.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            code: try container.decode(String.self, forKey: .code),
            expiresAt: try container.decode(Date.self, forKey: .expiresAt),
            appleAccount: try container.decodeIfPresent(Bool.self, forKey: .appleAccount) ?? false)
    }
}
