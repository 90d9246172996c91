import Foundation

/// The rules support's actions are held to, decided once here for the panel, the admin API and the CLI alike: how
/// many credits a grant, a balance and a grant limit may be, that every change names a reason, and that a balance edit
/// meets the balance support saw.
public enum SupportRules {
    /// The largest amount of credits anywhere in Coffer: an event, a balance, a deficit, a grant, a grant limit.
    /// The ledger's own bound, so every sum stays exact in a `Double` (an app's JSON numbers).
    public static let maximumAmount: Int64 = Ledger.maximumAmount

    /// The longest reason, in characters.
    public static let maximumReasonLength = 500

    /// A reason support gave for a change, trimmed.
    ///
    /// - Throws: ``SupportRuleError`` when it is empty or longer than ``maximumReasonLength``.
    public static func reason(_ text: String) throws(SupportRuleError) -> String {
        let reason = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !reason.isEmpty else { throw SupportRuleError("a reason is required, e.g. \"Ticket #42\"") }
        guard reason.count <= maximumReasonLength else {
            throw SupportRuleError("a reason has at most \(maximumReasonLength) characters")
        }
        return reason
    }

    /// The credits of one grant: from 1 to ``maximumAmount``.
    public static func grantCredits(_ credits: Int64) throws(SupportRuleError) -> Int64 {
        guard credits > 0, credits <= maximumAmount else {
            throw SupportRuleError("credits must be between 1 and \(grouped(maximumAmount))")
        }
        return credits
    }

    /// A balance support sets: from 0 to ``maximumAmount``.
    public static func balance(_ balance: Int64) throws(SupportRuleError) -> Int64 {
        guard balance >= 0, balance <= maximumAmount else {
            throw SupportRuleError("a balance must be between 0 and \(grouped(maximumAmount))")
        }
        return balance
    }

    /// A support admin's or a support key's grant limit (the credits their grants may carry over a rolling day):
    /// required, from 0 to ``maximumAmount``.
    public static func grantLimit(_ limit: Int64?) throws(SupportRuleError) -> Int64 {
        guard let limit, limit >= 0, limit <= maximumAmount else {
            throw SupportRuleError("a support admin needs a grant limit from 0 to \(grouped(maximumAmount)) credits")
        }
        return limit
    }

    /// Whether a grant of `credits` fits a grant limit with `used` credits granted already in its window.
    public static func fitsGrantLimit(_ credits: Int64, used: Int64, limit: Int64?) -> Bool {
        guard let limit else { return true }
        return used <= limit && credits <= limit - used
    }

    /// A balance edit against the balance support saw: `nil` (no check) or the same as `current`.
    ///
    /// - Throws: ``BalanceChanged`` when the balance moved since support saw it.
    public static func check(expected: Int64?, current: Int64) throws(BalanceChanged) {
        if let expected, expected != current { throw BalanceChanged(expected: expected, current: current) }
    }

    /// An amount in groups of three digits (`1,200,000`), as support reads it.
    public static func grouped(_ amount: Int64) -> String {
        let digits = String(amount.magnitude)
        var grouped = ""
        grouped.reserveCapacity(digits.count + digits.count / 3 + 1)
        for (index, digit) in digits.enumerated() {
            if index > 0, (digits.count - index) % 3 == 0 { grouped.append(",") }
            grouped.append(digit)
        }
        return amount < 0 ? "-" + grouped : grouped
    }
}

/// A support action broke one of ``SupportRules``; nothing was changed.
public struct SupportRuleError: Error, Equatable, Sendable, CustomStringConvertible {
    /// What is wrong, for people.
    public var description: String

    /// Creates the error.
    public init(_ description: String) { self.description = description }
}

/// A balance edit was refused because the balance is no longer the one support saw (a purchase, a spend or another
/// edit landed meanwhile); nothing was changed.
public struct BalanceChanged: Error, Equatable, Sendable, CustomStringConvertible {
    /// The balance support saw.
    public var expected: Int64
    /// The balance now.
    public var current: Int64

    /// Creates the error.
    public init(expected: Int64, current: Int64) {
        self.expected = expected
        self.current = current
    }

    /// The reason, for people.
    public var description: String {
        "the balance changed since you saw it: it is \(SupportRules.grouped(current)) now, not "
            + "\(SupportRules.grouped(expected)); nothing was changed: check it and set it again"
    }
}
