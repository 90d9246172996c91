import Foundation

/// A compact JWS split into its parts. The header is decoded on demand: a header already verified (the
/// same leaf and intermediate) is recognised by its bytes. Nothing is trusted yet.
struct JWS: Sendable {
    struct Header: Decodable, Sendable {
        var alg: String?
        var x5c: [String]?
        var kid: String?
        var typ: String?
    }

    /// The largest JWS accepted: Apple's notifications with both nested JWS are about 10 KB.
    static let maximumLength = 64 * 1024

    /// The header segment's bytes exactly as sent, base64url (what a header seen before is recognised by).
    let headerBytes: Data
    let payload: Data
    let signature: Data
    /// `BASE64URL(header) . BASE64URL(payload)`: the bytes the signature covers.
    let signingInput: Data

    /// Splits and decodes a compact JWS strictly: three base64url segments, a JSON header without repeated
    /// keys, and nothing else.
    init(compact text: String) throws(VerificationError) {
        let bytes = Array(text.utf8)
        guard bytes.count <= Self.maximumLength else {
            throw .verificationFailure("signed data is longer than \(Self.maximumLength) bytes")
        }
        let dots = bytes.indices.filter { bytes[$0] == UInt8(ascii: ".") }
        guard dots.count == 2 else {
            throw .verificationFailure("a JWS has 3 parts separated by '.', found \(dots.count + 1)")
        }
        signingInput = Data(bytes[..<dots[1]])
        // A slice of the signing input: the same bytes, not a copy.
        headerBytes = signingInput.prefix(dots[0])
        payload = try Base64.decode(url: bytes[(dots[0] + 1)..<dots[1]], what: "JWS payload")
        signature = try Base64.decode(url: bytes[(dots[1] + 1)...], what: "JWS signature")
    }

    /// Decodes the header strictly.
    func header() throws(VerificationError) -> Header {
        let json = try Base64.decode(url: Array(headerBytes)[...], what: "JWS header")
        do {
            return try AppleJSON.decode(Header.self, from: json)
        } catch {
            throw .verificationFailure("JWS header is not valid JSON: \(error)")
        }
    }
}

/// base64url without padding, as JWS segments are written.
public enum Base64URL {
    /// Encodes bytes as base64url without padding.
    public static func encode(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}

/// Strict base64: standard alphabet with padding for certificates, base64url without padding for JWS
/// segments. Whitespace, the other alphabet, bad padding and non-zero trailing bits are refused with a
/// clear error.
enum Base64 {
    /// Decodes base64url without padding.
    static func decode(url segment: ArraySlice<UInt8>, what: String) throws(VerificationError) -> Data {
        guard !segment.isEmpty else { throw .verificationFailure("\(what) is empty") }
        guard let data = decode(segment, alphabet: urlAlphabet) else {
            throw .verificationFailure("\(what) is not base64url without padding")
        }
        return data
    }

    /// Decodes standard base64 with padding.
    static func decode(standard text: String, what: String) throws(VerificationError) -> Data {
        var bytes = Array(text.utf8)[...]
        guard !bytes.isEmpty, bytes.count % 4 == 0 else { throw .verificationFailure("\(what) is not standard base64") }
        var padding = 0
        while bytes.last == UInt8(ascii: "="), padding < 2 {
            bytes.removeLast()
            padding += 1
        }
        guard let data = decode(bytes, alphabet: standardAlphabet) else {
            throw .verificationFailure("\(what) is not standard base64")
        }
        return data
    }

    private static let standardAlphabet = table(extra: (UInt8(ascii: "+"), UInt8(ascii: "/")))
    private static let urlAlphabet = table(extra: (UInt8(ascii: "-"), UInt8(ascii: "_")))

    private static func table(extra: (UInt8, UInt8)) -> [UInt8] {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (value, byte) in (UInt8(ascii: "A")...UInt8(ascii: "Z")).enumerated() { table[Int(byte)] = UInt8(value) }
        for (value, byte) in (UInt8(ascii: "a")...UInt8(ascii: "z")).enumerated() {
            table[Int(byte)] = UInt8(26 + value)
        }
        for (value, byte) in (UInt8(ascii: "0")...UInt8(ascii: "9")).enumerated() {
            table[Int(byte)] = UInt8(52 + value)
        }
        table[Int(extra.0)] = 62
        table[Int(extra.1)] = 63
        return table
    }

    /// Decodes unpadded base64 in the given alphabet; `nil` for any character outside it, an impossible
    /// length, or non-zero bits after the last byte.
    private static func decode(_ input: ArraySlice<UInt8>, alphabet: [UInt8]) -> Data? {
        guard input.count % 4 != 1 else { return nil }
        var output = [UInt8]()
        output.reserveCapacity(input.count * 3 / 4)
        var accumulator: UInt32 = 0
        var bits = 0
        for byte in input {
            let value = alphabet[Int(byte)]
            guard value != 0xFF else { return nil }
            accumulator = accumulator << 6 | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                output.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
                accumulator &= (1 << UInt32(bits)) - 1
            }
        }
        guard accumulator == 0 else { return nil }
        return Data(output)
    }
}
