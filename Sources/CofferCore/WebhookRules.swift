import Foundation

/// The events Coffer posts to the developer's own backend.
public enum WebhookEventType: String, Sendable, Hashable, CaseIterable, Codable {
    /// A purchase was delivered into the ledger (the first of a subscription too).
    case purchaseDelivered = "purchase.delivered"
    /// Apple refunded or revoked a purchase: the ledger took its credits back (what was spent became a deficit).
    case purchaseRefunded = "purchase.refunded"
    /// Apple reversed a refund: the ledger gave the credits again.
    case purchaseRefundReversed = "purchase.refund_reversed"
    /// Support made a grant (the customer claims it in the app).
    case grantCreated = "grant.created"
    /// The customer claimed a grant: its credits are in the ledger.
    case grantClaimed = "grant.claimed"
    /// Support cancelled a grant before it was claimed.
    case grantCancelled = "grant.cancelled"
    /// Support (or a restored backup) changed the balance.
    case balanceAdjusted = "balance.adjusted"
    /// The customer spent credits (the server wallet).
    case balanceSpent = "balance.spent"
    /// Credits of a grant or of a subscription period's allowance ended (at their end, or the period's refund):
    /// what was left of them left the balance.
    case creditsExpired = "credits.expired"
    /// A paid subscription period's allowance was credited: credits that end with the period.
    case allowanceCredited = "allowance.credited"
    /// A subscription renewed: a new paid period was delivered.
    case subscriptionRenewed = "subscription.renewed"
    /// Apple said a subscription expired (its `EXPIRED` notification).
    case subscriptionExpired = "subscription.expired"
    /// A customer was merged into another (their Apple account's).
    case customerMerged = "customer.merged"
    /// A customer was deleted at their request.
    case customerDeleted = "customer.deleted"
}

/// What an endpoint must be: its URL, its secret and its events, each checked with an error that says what to fix.
public enum WebhookRules {
    /// The shortest secret taken.
    public static let minimumSecret = 16

    /// Why `url` cannot be an endpoint, or `nil` when it can: `https://`, or `http://` to a backend on this
    /// machine or its private network (loopback, a private address, `localhost`, a one-word name such as a container's);
    /// a host that is not link-local (no cloud metadata address); no user or password, no fragment, at most 2,048
    /// characters.
    public static func problem(url: String) -> String? {
        guard url.utf8.count <= 2_048, let parts = URLComponents(string: url), let scheme = parts.scheme?.lowercased()
        else { return "not a URL" }
        guard scheme == "https" || scheme == "http" else { return "not an https:// or http:// URL" }
        guard let host = parts.host?.lowercased(), !host.isEmpty else { return "a URL without a host" }
        guard parts.user == nil, parts.password == nil else { return "a URL with a user or password in it" }
        guard parts.fragment == nil else { return "a URL with a #fragment" }
        let address = host.trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
        let octets = address.split(separator: ".").compactMap { UInt8($0) }
        let ipv4 = octets.count == 4 && address.split(separator: ".").count == 4
        if (ipv4 && octets[0] == 169 && octets[1] == 254) || address.hasPrefix("fe80:") {
            return "a link-local address (a cloud's metadata service, not a backend)"
        }
        if scheme == "http" {
            let local =
                ipv4
                ? octets[0] == 127 || octets[0] == 10 || (octets[0] == 172 && (16...31).contains(octets[1]))
                    || (octets[0] == 192 && octets[1] == 168)
                : address.contains(":")
                    ? address == "::1" || address.hasPrefix("fc") || address.hasPrefix("fd")
                    : address == "localhost" || !address.contains(".")
            guard local else {
                return "http:// to a public host: use https:// (http:// is for this machine or network)"
            }
        }
        return nil
    }

    /// Why `secret` cannot sign, or `nil` when it can: 16 to 256 printable ASCII characters.
    public static func problem(secret: String) -> String? {
        guard (minimumSecret...256).contains(secret.utf8.count),
            secret.allSatisfy({ $0.isASCII && !$0.isWhitespace && !$0.isNewline })
        else { return "a secret must be \(minimumSecret) to 256 printable ASCII characters" }
        return nil
    }

    /// The event types named in `list` (comma-separated; empty or `*` for every type).
    ///
    /// - Throws: A message naming the unknown type.
    public static func events(_ list: String) throws(WebhookRuleError) -> [String] {
        let names = list.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        if names.isEmpty || names == ["*"] { return [] }
        for name in names where WebhookEventType(rawValue: name) == nil {
            throw WebhookRuleError(
                description: "unknown event \(name); known: "
                    + WebhookEventType.allCases.map(\.rawValue).joined(separator: ", "))
        }
        return Array(Set(names)).sorted()
    }

    /// A new secret: `whsec_` and 32 random bytes as hex.
    public static func makeSecret(using generator: inout some RandomNumberGenerator) -> String {
        "whsec_" + (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
    }

    /// A new endpoint id: `wh_` and 16 hex digits.
    public static func makeId(using generator: inout some RandomNumberGenerator) -> String {
        "wh_" + (0..<8).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
    }
}

/// An endpoint's setting that cannot be taken.
public struct WebhookRuleError: Error, Sendable, CustomStringConvertible {
    /// What is wrong.
    public var description: String
}
