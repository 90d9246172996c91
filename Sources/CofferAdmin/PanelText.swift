import CofferAPI
import CofferCore
import CofferStore
import Foundation

/// How the panel writes and reads numbers and times: amounts with thousands separators (a grant of 120,000 and
/// one of 1,200,000 never look alike), times in UTC with the admin's own time zone beside them.
public enum PanelText {
    /// `1,200,000`; `-5,000` for a negative amount.
    public static func credits(_ amount: Int64) -> String { SupportRules.grouped(amount) }

    /// What a merge does with the merged customer's device tokens, for its confirmation: those of installs that
    /// registered themselves sign in as `into` from now on when the account's owner gives a merge code of their own,
    /// and end otherwise; those a CloudKit claim issued end.
    public static func mergedTokens(_ tokens: TokenCounts, into: String) -> String {
        var text = "It holds \(devices(tokens.devices + tokens.claims))"
        if tokens.claims == 0 {
            text += tokens.devices == 0 ? "." : ", none issued by a CloudKit claim."
        } else {
            text +=
                ", \(tokens.claims) issued by a CloudKit claim: "
                + (tokens.claims == 1 ? "it ends" : "they end") + " with the merge (that device registers again)."
        }
        guard tokens.devices > 0 else { return text }
        let installs = tokens.devices == 1 ? "the install that registered itself" : "the \(tokens.devices) installs"
        return text
            + " With a merge code from an install on \(into)'s Apple account, \(installs) sign in as \(into) from now "
            + "on; without one they are signed out and register again."
    }

    /// What a merge did with the merged customer's device tokens, after it.
    public static func mergedDevices(_ done: MergeResponse) -> String {
        var parts: [String] = []
        if done.tokensMoved > 0 { parts.append("\(devices(done.tokensMoved)) now sign in as \(done.into)") }
        if done.tokensEnded > 0 { parts.append("\(devices(done.tokensEnded)) signed out (they register again)") }
        if done.claimTokensEnded > 0 {
            parts.append("\(devices(done.claimTokensEnded)) issued by a CloudKit claim ended")
        }
        return parts.isEmpty ? "no device tokens moved." : parts.joined(separator: ", ") + "."
    }

    private static func devices(_ count: Int) -> String {
        count == 1 ? "1 device token" : "\(count) device tokens"
    }

    /// Currencies without minor units (ISO 4217 exponent 0), shown without decimals.
    static let wholeCurrencies: Set<String> = [
        "BIF", "CLP", "DJF", "GNF", "ISK", "JPY", "KMF", "KRW", "PYG", "RWF", "UGX", "UYI", "VND", "VUV", "XAF", "XOF",
        "XPF",
    ]

    /// An amount of Apple's milliunits in its currency: `4.99 USD`, `1,200.00 EUR`, `120 JPY`; a thousandth shown
    /// only where there is one (`0.995 USD`).
    public static func money(_ milliunits: Int64, currency: String) -> String {
        let units = credits(milliunits / 1_000)
        let thousandths = Int(milliunits.magnitude % 1_000)
        let sign = milliunits < 0 && units == "0" ? "-" : ""
        let fraction: String
        if thousandths % 10 != 0 {
            fraction = "." + String(String(thousandths + 1_000).dropFirst())
        } else if thousandths == 0, wholeCurrencies.contains(currency) {
            fraction = ""
        } else {
            fraction = "." + String(String(thousandths / 10 + 100).dropFirst())
        }
        return "\(sign)\(units)\(fraction) \(currency)"
    }

    /// A count: `12,345`.
    public static func count(_ value: Int) -> String { credits(Int64(value)) }

    /// A change: `+400,000`, `-5,000`, `0`.
    public static func change(_ amount: Int64) -> String {
        amount > 0 ? "+" + credits(amount) : credits(amount)
    }

    /// Reads an amount support typed: digits, optionally grouped in threes by commas, spaces or underscores
    /// (`1,200,000`, `1 200 000`, `1200000`); `nil` for anything else, a sign included, or a number past
    /// `Int64`'s range.
    public static func amount(_ text: String) -> Int64? {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        let separators: Set<Character> = [",", " ", "_", "\u{00A0}", "\u{202F}"]
        let groups = trimmed.split(omittingEmptySubsequences: false) { separators.contains($0) }
        guard let first = groups.first, !first.isEmpty, first.count <= 19 else { return nil }
        if groups.count > 1 {
            // Grouped: a head of one to three digits, then groups of exactly three.
            guard first.count <= 3, groups.dropFirst().allSatisfy({ $0.count == 3 }) else { return nil }
        }
        let digits = groups.joined()
        guard digits.count <= 19, digits.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) })
        else { return nil }
        return Int64(digits)
    }

    /// A time in UTC: `2026-11-25 22:40:01 UTC`.
    public static func utc(_ date: Date) -> String {
        format(date, in: utcZone) + " UTC"
    }

    /// A time in `zone` when it is not UTC: `2026-11-25 23:40 Europe/Paris`; `nil` for UTC or no zone.
    public static func local(_ date: Date, in zone: TimeZone?) -> String? {
        guard let zone, zone.identifier != "UTC", zone.identifier != "GMT" else { return nil }
        return format(date, in: zone, seconds: false) + " " + zone.identifier
    }

    /// A time as the panel shows it: UTC, then the admin's zone when it has one (`2026-11-25 22:40:01 UTC ·
    /// 23:40 Europe/Paris`, the date left out when it is the same day there).
    public static func time(_ date: Date, in zone: TimeZone?) -> String {
        let utcText = utc(date)
        guard let zone, let localText = local(date, in: zone) else { return utcText }
        let sameDay = format(date, in: zone).prefix(10) == format(date, in: utcZone).prefix(10)
        return utcText + " · " + (sameDay ? String(localText.dropFirst(11)) : localText)
    }

    /// The time zone an admin chose, checked: an IANA identifier this machine knows (`Europe/Paris`), or UTC.
    public static func timeZone(_ identifier: String) -> TimeZone? {
        let trimmed = identifier.trimmingCharacters(in: .whitespaces)
        guard !trimmed.isEmpty, trimmed.utf8.count <= 64, let zone = TimeZone(identifier: trimmed) else { return nil }
        return zone
    }

    /// The time zones an admin may choose from, UTC first.
    public static var timeZones: [String] {
        ["UTC"] + TimeZone.knownTimeZoneIdentifiers.filter { $0.contains("/") }.sorted()
    }

    private static let utcZone = TimeZone(identifier: "UTC")!

    private static func format(_ date: Date, in zone: TimeZone, seconds: Bool = true) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        let parts = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
        func two(_ value: Int?) -> String {
            let value = value ?? 0
            return value < 10 ? "0\(value)" : String(value)
        }
        let day = "\(parts.year ?? 0)-\(two(parts.month))-\(two(parts.day))"
        let clock = "\(two(parts.hour)):\(two(parts.minute))" + (seconds ? ":\(two(parts.second))" : "")
        return day + " " + clock
    }
}
