import CofferStore
import Crypto
import Foundation

/// Two-factor sign-in for the panel: time-based one-time codes (TOTP, RFC 6238: six digits, 30-second steps,
/// HMAC-SHA1, what authenticator apps use), computed on swift-crypto's HMAC, and single-use recovery codes.
public enum TwoFactor {
    /// The issuer authenticator apps show beside the admin's name.
    public static let issuer = "Coffer"
    /// Seconds per code.
    public static let step: TimeInterval = 30
    /// How many recovery codes turning two-factor on gives.
    public static let recoveryCodeCount = 10

    /// A new shared secret: 20 random letters and digits (about 119 bits).
    public static func newSecret() -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
        var generator = SystemRandomNumberGenerator()
        return String((0..<20).map { _ in alphabet.randomElement(using: &generator)! })
    }

    /// The secret as an authenticator app takes it typed in: base32 (RFC 4648) of its bytes, in groups of four.
    public static func typedKey(_ secret: String) -> String {
        let encoded = base32(Array(secret.utf8))
        return stride(from: 0, to: encoded.count, by: 4).map { start in
            let from = encoded.index(encoded.startIndex, offsetBy: start)
            return String(
                encoded[from..<(encoded.index(from, offsetBy: 4, limitedBy: encoded.endIndex) ?? encoded.endIndex)])
        }.joined(separator: " ")
    }

    /// The `otpauth://` URL an authenticator app takes (as a link or a QR code).
    /// Key Uri Format: `otpauth://totp/ISSUER:ADMIN?secret=BASE32&issuer=ISSUER`, the label and the issuer
    /// percent-encoded, the secret's base32 without padding; SHA-1, six digits and 30 seconds are the defaults, so
    /// they are left out.
    public static func authenticatorURL(secret: String, admin: String) -> String {
        var unreserved = CharacterSet(
            charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~")
        let query = unreserved
        unreserved.insert(charactersIn: ":@")
        let label = "\(issuer):\(admin)".addingPercentEncoding(withAllowedCharacters: unreserved) ?? issuer
        let secret = base32(Array(secret.utf8)).filter { $0 != "=" }
        return "otpauth://totp/\(label)?secret=\(secret)&issuer="
            + (issuer.addingPercentEncoding(withAllowedCharacters: query) ?? issuer)
    }

    /// The 30-second step of a time.
    public static func step(at date: Date) -> Int64 {
        Int64((date.timeIntervalSince1970 / step).rounded(.down))
    }

    /// The code of a step.
    ///
    /// RFC 4226's HOTP of the step: HMAC-SHA1 of the step as 8 bytes, big-endian, keyed by the secret's bytes;
    /// four bytes at the offset the last byte's low nibble names, their top bit cleared, modulo 10^6.
    public static func code(secret: String, step: Int64) -> String {
        let counter = withUnsafeBytes(of: UInt64(bitPattern: step).bigEndian) { Array($0) }
        let mac = Array(
            HMAC<Insecure.SHA1>.authenticationCode(for: counter, using: SymmetricKey(data: Array(secret.utf8))))
        let offset = Int(mac[mac.count - 1] & 0x0f)
        let truncated = mac[offset..<offset + 4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) } & 0x7fff_ffff
        let digits = String(truncated % 1_000_000)
        return String(repeating: "0", count: max(0, 6 - digits.count)) + digits
    }

    /// The step whose code `text` is, within one step either side of `now` (a phone's clock drifts, a code is
    /// typed while it changes), and later than `lastStep` (no code works twice); `nil` otherwise.
    public static func matchingStep(_ text: String, secret: String, now: Date, lastStep: Int64?) -> Int64? {
        let typed = text.filter { !$0.isWhitespace }
        guard typed.count == 6, typed.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) })
        else { return nil }
        let current = step(at: now)
        for candidate in [current, current - 1, current + 1] where candidate > (lastStep ?? .min) {
            if Secrets.same(code(secret: secret, step: candidate), typed) { return candidate }
        }
        return nil
    }

    /// New recovery codes, `xxxx-xxxx-xxxx` of lower-case base32 (60 random bits each), shown once.
    public static func newRecoveryCodes() -> [String] {
        var generator = SystemRandomNumberGenerator()
        return (0..<recoveryCodeCount).map { _ in
            let bytes = (0..<8).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
            let text = base32(bytes).lowercased().prefix(12)
            return [0, 4, 8].map { start in
                let from = text.index(text.startIndex, offsetBy: start)
                return String(text[from..<text.index(from, offsetBy: 4)])
            }.joined(separator: "-")
        }
    }

    /// The hash a recovery code is kept under: of its letters alone, lower-cased, so spacing and dashes typed
    /// differently still match.
    public static func recoveryHash(_ code: String) -> String {
        Secrets.hash(String(code.lowercased().filter { $0.isLetter || $0.isNumber }))
    }

    /// Whether `text` looks like a recovery code rather than a six-digit code.
    public static func isRecoveryCode(_ text: String) -> Bool {
        text.filter { $0.isLetter || $0.isNumber }.count == 12
    }

    private static func base32(_ bytes: [UInt8]) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")
        var result = ""
        var buffer: UInt32 = 0
        var bits = 0
        for byte in bytes {
            buffer = (buffer << 8) | UInt32(byte)
            bits += 8
            while bits >= 5 {
                result.append(alphabet[Int((buffer >> UInt32(bits - 5)) & 31)])
                bits -= 5
            }
        }
        if bits > 0 { result.append(alphabet[Int((buffer << UInt32(5 - bits)) & 31)]) }
        return result
    }
}
