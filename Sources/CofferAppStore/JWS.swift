import Crypto
import Foundation

/// A compact JWS split into its parts, without copying its text: the header and the signing input are read
/// where they lie, only the payload and the signature are decoded. The header is decoded on demand: a header
/// already verified (the same leaf and intermediate) is recognised by its bytes. Nothing is trusted yet.
struct JWS: Sendable {
    struct Header: Decodable, Sendable {
        var alg: String?
        var x5c: [String]?
        var kid: String?
        var typ: String?
    }

    /// The largest JWS accepted: Apple's notifications with both nested JWS are about 10 KB.
    static let maximumLength = 64 * 1024

    /// The compact serialization, its UTF-8 contiguous.
    private let text: String
    /// Where the header ends and the payload ends: the two dots.
    private let dots: (Int, Int)
    let payload: Data
    let signature: Data

    /// Splits and decodes a compact JWS strictly: three base64url segments, a JSON header without repeated
    /// keys, and nothing else.
    init(compact text: String) throws(VerificationError) {
        var text = text
        text.makeContiguousUTF8()
        guard text.utf8.count <= Self.maximumLength else {
            throw .verificationFailure("signed data is longer than \(Self.maximumLength) bytes")
        }
        let split = Self.bytes(of: text) { bytes -> Result<((Int, Int), Data, Data), VerificationError> in
            var dots: [Int] = []
            var from = 0
            while dots.count < 3, from < bytes.count,
                let found = memchr(bytes.baseAddress! + from, Int32(UInt8(ascii: ".")), bytes.count - from)
            {
                let index = bytes.baseAddress!.distance(to: found.assumingMemoryBound(to: UInt8.self))
                dots.append(index)
                from = index + 1
            }
            guard dots.count == 2 else {
                return .failure(.verificationFailure("a JWS has 3 parts separated by '.', found \(dots.count + 1)"))
            }
            return Result { () throws(VerificationError) in
                (
                    (dots[0], dots[1]),
                    try Base64.decode(url: bytes[(dots[0] + 1)..<dots[1]], what: "JWS payload"),
                    try Base64.decode(url: bytes[(dots[1] + 1)...], what: "JWS signature")
                )
            }
        }
        (dots, payload, signature) = try split.get()
        self.text = text
    }

    /// Runs `body` over the string's UTF-8 bytes (contiguous: `makeContiguousUTF8` made them so).
    private static func bytes<R>(of text: String, _ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
        if let result = text.utf8.withContiguousStorageIfAvailable(body) { return result }
        return Array(text.utf8).withUnsafeBufferPointer(body)
    }

    /// Runs `body` over the header segment's bytes exactly as sent, base64url (what a header seen before is
    /// recognised by).
    func withHeaderBytes<R>(_ body: (UnsafeRawBufferPointer) -> R) -> R {
        Self.bytes(of: text) { bytes in body(UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: bytes[..<dots.0]))) }
    }

    /// A copy of the header segment's bytes.
    var headerBytes: Data { withHeaderBytes { Data($0) } }

    /// The SHA-256 of `BASE64URL(header) . BASE64URL(payload)`: the bytes the signature covers.
    var signingInputDigest: SHA256.Digest {
        Self.bytes(of: text) { bytes in
            SHA256.hash(data: UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: bytes[..<dots.1])))
        }
    }

    /// The same digest, going on from `prefix` (SHA-256 over this JWS's header segment and the dot after it,
    /// kept from a header recognised by its bytes) over the payload segment alone; from the start without one.
    func signingInputDigest(continuing prefix: SHA256?) -> SHA256.Digest {
        guard var hasher = prefix else { return signingInputDigest }
        Self.bytes(of: text) { bytes in
            hasher.update(data: UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: bytes[(dots.0 + 1)..<dots.1])))
        }
        return hasher.finalize()
    }

    /// Decodes the header strictly.
    func header() throws(VerificationError) -> Header {
        let json = try Base64.decode(url: headerBytes, what: "JWS header")
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
        // Byte by byte over the standard encoding (Foundation's string replacement is slow on Linux: a quarter of
        // the simulator's signing time).
        var bytes = [UInt8](data.base64EncodedData())
        while bytes.last == UInt8(ascii: "=") { bytes.removeLast() }
        for index in bytes.indices {
            switch bytes[index] {
            case UInt8(ascii: "+"): bytes[index] = UInt8(ascii: "-")
            case UInt8(ascii: "/"): bytes[index] = UInt8(ascii: "_")
            default: break
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// Strict base64: standard alphabet with padding for certificates, base64url without padding for JWS
/// segments. Whitespace, the other alphabet, bad padding and non-zero trailing bits are refused with a
/// clear error.
enum Base64 {
    /// Decodes base64url without padding.
    static func decode(url segment: some Collection<UInt8>, what: String) throws(VerificationError) -> Data {
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
    private static func decode(_ input: some Collection<UInt8>, alphabet: [UInt8]) -> Data? {
        if let decoded = input.withContiguousStorageIfAvailable({ decode(buffer: $0, alphabet: alphabet) }) {
            return decoded
        }
        return Array(input).withUnsafeBufferPointer { decode(buffer: $0, alphabet: alphabet) }
    }

    /// The decoding itself, over contiguous bytes: four characters make three bytes, checked against the
    /// alphabet's table as they are read.
    private static func decode(buffer input: UnsafeBufferPointer<UInt8>, alphabet: [UInt8]) -> Data? {
        guard input.count % 4 != 1 else { return nil }
        let outputCount = input.count * 3 / 4
        var output = Data(count: outputCount)
        let valid = alphabet.withUnsafeBufferPointer { table in
            output.withUnsafeMutableBytes { (buffer: UnsafeMutableRawBufferPointer) -> Bool in
                var written = 0
                // Whole groups of four characters make three bytes at a time; the rest goes a character at a time.
                let whole = input.count / 4 * 4
                var position = 0
                while position < whole {
                    let a = table[Int(input[position])]
                    let b = table[Int(input[position + 1])]
                    let c = table[Int(input[position + 2])]
                    let d = table[Int(input[position + 3])]
                    guard a < 64, b < 64, c < 64, d < 64 else { return false }
                    let group = UInt32(a) << 18 | UInt32(b) << 12 | UInt32(c) << 6 | UInt32(d)
                    buffer[written] = UInt8(truncatingIfNeeded: group >> 16)
                    buffer[written + 1] = UInt8(truncatingIfNeeded: group >> 8)
                    buffer[written + 2] = UInt8(truncatingIfNeeded: group)
                    written += 3
                    position += 4
                }
                var accumulator: UInt32 = 0
                var bits = 0
                for byte in input[whole...] {
                    let value = table[Int(byte)]
                    guard value != 0xFF else { return false }
                    accumulator = accumulator << 6 | UInt32(value)
                    bits += 6
                    if bits >= 8 {
                        bits -= 8
                        guard written < buffer.count else { return false }
                        buffer[written] = UInt8(truncatingIfNeeded: accumulator >> UInt32(bits))
                        written += 1
                        accumulator &= (1 << UInt32(bits)) - 1
                    }
                }
                return accumulator == 0 && written == buffer.count
            }
        }
        return valid ? output : nil
    }
}
