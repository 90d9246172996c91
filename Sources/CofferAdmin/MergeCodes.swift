import CofferCore
import Foundation

/// The one-time codes a customer's install shows so support can merge that customer into another: eight
/// characters of an alphabet without look-alikes (2^40 codes), shown as `K7QM-2XHP`, valid 15 minutes, kept only
/// as a hash.
public enum MergeCodes {
    /// How long a code works.
    public static let lifetime: TimeInterval = 15 * 60
    /// The characters a code is made of: no 0/O, 1/I/L.
    static let alphabet = Array("ABCDEFGHJKMNPQRSTUVWXYZ23456789")
    /// Characters in a code.
    static let length = 8

    /// A new code, as the app shows it (`K7QM-2XHP`).
    public static func make() -> String {
        var generator = SystemRandomNumberGenerator()
        let characters = (0..<length).map { _ in alphabet[Int.random(in: 0..<alphabet.count, using: &generator)] }
        return String(characters.prefix(4)) + "-" + String(characters.suffix(4))
    }

    /// A code as typed (any case, with or without the dash and spaces) in its one form, or `nil` when it cannot be
    /// one.
    public static func normalized(_ typed: String) -> String? {
        guard typed.utf8.count <= 64 else { return nil }
        let text = typed.uppercased().filter { $0 != "-" && !$0.isWhitespace }
        guard text.count == length, text.allSatisfy(alphabet.contains) else { return nil }
        return text
    }

    /// The hash kept of a code (as typed or as shown).
    public static func hash(_ code: String) -> String? {
        normalized(code).map(Secrets.hash)
    }
}

/// The customer's word for a merge: the code their install shows, or an owner's override with a reason (audited
/// as an override).
public enum MergeConsent: Sendable, Hashable {
    /// The merge code the merged customer's install shows (`POST /v1/me/merge-code`).
    case code(String)
    /// An owner merges without the customer's code, saying why.
    case override(reason: String)
}

extension MergeConsent {
    /// The consent a form or a request gives: the code, or else the override's reason; one of the two is needed.
    ///
    /// - Throws: ``AdminError/invalid(_:)`` when both or neither are given.
    public init(code: String?, overrideReason: String?) throws(AdminError) {
        let code = code?.trimmingCharacters(in: .whitespaces) ?? ""
        let reason = overrideReason?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
        switch (code.isEmpty, reason.isEmpty) {
        case (false, true): self = .code(code)
        case (true, false): self = .override(reason: reason)
        case (false, false):
            throw .invalid("give the customer's merge code or an override's reason, not both")
        case (true, true):
            throw .invalid(
                "a merge needs the customer's word: the merge code their app shows (Purchase History, Move to my "
                    + "Apple account), or an owner's override with a reason")
        }
    }
}
