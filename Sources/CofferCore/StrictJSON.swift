import Foundation

/// Why a JSON document was refused before decoding.
public enum StrictJSONError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The bytes are not well-formed JSON; `offset` is the byte where parsing stopped.
    case malformed(offset: Int, reason: String)
    /// An object repeats a key. Parsers disagree on which value wins, so Coffer refuses the document.
    case duplicateKey(String, offset: Int)
    /// Objects and arrays nest deeper than the configured limit.
    case tooDeep(limit: Int)
    /// The document is larger than the configured limit.
    case tooLarge(limit: Int)

    /// A one-line, human-readable explanation.
    public var description: String {
        switch self {
        case .malformed(let offset, let reason): "malformed JSON at byte \(offset): \(reason)"
        case .duplicateKey(let key, let offset): "duplicate key \"\(key)\" at byte \(offset)"
        case .tooDeep(let limit): "JSON nests deeper than \(limit) levels"
        case .tooLarge(let limit): "JSON document is larger than \(limit) bytes"
        }
    }
}

/// A strict JSON gate used in front of `JSONDecoder` for every input Coffer reads.
///
/// On Linux, `JSONDecoder` keeps the first value of a repeated key while `JSONSerialization` keeps the
/// last, so a document with repeated keys can mean two different things. `StrictJSON` validates the
/// syntax (RFC 8259), refuses repeated keys in any object, and bounds nesting depth and size.
///
/// ```swift
/// let catalog = try StrictJSON.decode(Catalog.Document.self, from: data)
/// ```
public enum StrictJSON {
    /// The default nesting limit: generous for Apple's payloads, small enough to stop stack exhaustion.
    public static let defaultMaximumDepth = 64

    /// Checks that `data` is one well-formed JSON value without repeated keys.
    ///
    /// - Parameters:
    ///   - data: The document.
    ///   - maximumDepth: The deepest nesting of objects and arrays accepted.
    ///   - maximumSize: The largest document accepted, in bytes.
    /// - Throws: ``StrictJSONError``.
    public static func validate(
        _ data: Data,
        maximumDepth: Int = defaultMaximumDepth,
        maximumSize: Int = 16 * 1024 * 1024
    ) throws(StrictJSONError) {
        guard data.count <= maximumSize else { throw .tooLarge(limit: maximumSize) }
        var scanner = Scanner(bytes: [UInt8](data), maximumDepth: maximumDepth)
        try scanner.skipWhitespace()
        try scanner.value(depth: 0)
        try scanner.skipWhitespace()
        guard scanner.atEnd else { throw .malformed(offset: scanner.index, reason: "trailing characters") }
    }

    /// Validates `data` with ``validate(_:maximumDepth:maximumSize:)`` and then decodes it.
    ///
    /// - Parameters:
    ///   - type: The type to decode.
    ///   - data: The document.
    ///   - decoder: The decoder to use after validation.
    /// - Returns: The decoded value.
    public static func decode<T: Decodable>(
        _ type: T.Type,
        from data: Data,
        decoder: JSONDecoder = JSONDecoder()
    ) throws -> T {
        try validate(data)
        return try decoder.decode(type, from: data)
    }

    private struct Scanner {
        let bytes: [UInt8]
        let maximumDepth: Int
        var index = 0

        init(bytes: [UInt8], maximumDepth: Int) {
            self.bytes = bytes
            self.maximumDepth = maximumDepth
        }

        var atEnd: Bool { index >= bytes.count }

        func fail(_ reason: String) -> StrictJSONError { .malformed(offset: index, reason: reason) }

        mutating func skipWhitespace() throws(StrictJSONError) {
            while index < bytes.count {
                switch bytes[index] {
                case 0x20, 0x09, 0x0A, 0x0D: index += 1
                default: return
                }
            }
        }

        mutating func expect(_ byte: UInt8) throws(StrictJSONError) {
            guard index < bytes.count, bytes[index] == byte else {
                throw fail("expected '\(Character(Unicode.Scalar(byte)))'")
            }
            index += 1
        }

        mutating func value(depth: Int) throws(StrictJSONError) {
            guard index < bytes.count else { throw fail("unexpected end of input") }
            switch bytes[index] {
            case UInt8(ascii: "{"): try object(depth: depth + 1)
            case UInt8(ascii: "["): try array(depth: depth + 1)
            case UInt8(ascii: "\""): _ = try string(returningValue: false)
            case UInt8(ascii: "t"): try literal("true")
            case UInt8(ascii: "f"): try literal("false")
            case UInt8(ascii: "n"): try literal("null")
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): try number()
            default: throw fail("unexpected character")
            }
        }

        mutating func literal(_ word: String) throws(StrictJSONError) {
            for byte in word.utf8 { try expect(byte) }
        }

        mutating func object(depth: Int) throws(StrictJSONError) {
            guard depth <= maximumDepth else { throw .tooDeep(limit: maximumDepth) }
            try expect(UInt8(ascii: "{"))
            try skipWhitespace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
                index += 1
                return
            }
            var keys = Set<String>()
            while true {
                try skipWhitespace()
                let keyOffset = index
                guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw fail("expected a key") }
                let key = try string()
                guard keys.insert(key).inserted else { throw .duplicateKey(key, offset: keyOffset) }
                try skipWhitespace()
                try expect(UInt8(ascii: ":"))
                try skipWhitespace()
                try value(depth: depth)
                try skipWhitespace()
                guard index < bytes.count else { throw fail("unterminated object") }
                if bytes[index] == UInt8(ascii: ",") {
                    index += 1
                    continue
                }
                try expect(UInt8(ascii: "}"))
                return
            }
        }

        mutating func array(depth: Int) throws(StrictJSONError) {
            guard depth <= maximumDepth else { throw .tooDeep(limit: maximumDepth) }
            try expect(UInt8(ascii: "["))
            try skipWhitespace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
                index += 1
                return
            }
            while true {
                try skipWhitespace()
                try value(depth: depth)
                try skipWhitespace()
                guard index < bytes.count else { throw fail("unterminated array") }
                if bytes[index] == UInt8(ascii: ",") {
                    index += 1
                    continue
                }
                try expect(UInt8(ascii: "]"))
                return
            }
        }

        /// Reads a string. Keys are returned unescaped (so `"a"` and `"\u0061"` are the same key); values are
        /// only checked, never built, which keeps validation cheap for large values such as certificates.
        mutating func string(returningValue: Bool = true) throws(StrictJSONError) -> String {
            try expect(UInt8(ascii: "\""))
            let start = index
            var hasEscape = false
            var hasNonASCII = false
            while true {
                guard index < bytes.count else { throw fail("unterminated string") }
                let byte = bytes[index]
                if byte == UInt8(ascii: "\"") { break }
                if byte == UInt8(ascii: "\\") {
                    hasEscape = true
                    index += 1
                    guard index < bytes.count else { throw fail("unterminated escape") }
                    switch bytes[index] {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"),
                        UInt8(ascii: "f"),
                        UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                        index += 1
                    case UInt8(ascii: "u"):
                        index += 1
                        _ = try unicodeEscape()
                    default:
                        throw fail("invalid escape")
                    }
                    continue
                }
                if byte < 0x20 { throw fail("control character in string") }
                if byte >= 0x80 { hasNonASCII = true }
                index += 1
            }
            let raw = bytes[start..<index]
            index += 1
            if hasNonASCII, String(validating: raw, as: UTF8.self) == nil {
                throw .malformed(offset: start, reason: "invalid UTF-8 in string")
            }
            guard returningValue else { return "" }
            guard hasEscape else { return String(decoding: raw, as: UTF8.self) }
            return try Self.unescape(raw, offset: start)
        }

        /// Unescapes a string body already checked by ``string(returningValue:)``.
        static func unescape(_ raw: ArraySlice<UInt8>, offset: Int) throws(StrictJSONError) -> String {
            var scanner = Scanner(bytes: Array(raw), maximumDepth: 0)
            var scalars = String.UnicodeScalarView()
            var run: [UInt8] = []
            func flush() {
                scalars.append(contentsOf: String(decoding: run, as: UTF8.self).unicodeScalars)
                run.removeAll(keepingCapacity: true)
            }
            while !scanner.atEnd {
                let byte = scanner.bytes[scanner.index]
                scanner.index += 1
                guard byte == UInt8(ascii: "\\") else {
                    run.append(byte)
                    continue
                }
                flush()
                let escape = scanner.bytes[scanner.index]
                scanner.index += 1
                switch escape {
                case UInt8(ascii: "b"): scalars.append("\u{08}")
                case UInt8(ascii: "f"): scalars.append("\u{0C}")
                case UInt8(ascii: "n"): scalars.append("\n")
                case UInt8(ascii: "r"): scalars.append("\r")
                case UInt8(ascii: "t"): scalars.append("\t")
                case UInt8(ascii: "u"): scalars.append(try scanner.unicodeEscape())
                default: scalars.append(Unicode.Scalar(escape))
                }
            }
            flush()
            return String(scalars)
        }

        mutating func hexQuad() throws(StrictJSONError) -> UInt32 {
            guard index + 4 <= bytes.count else { throw fail("short \\u escape") }
            var value: UInt32 = 0
            for _ in 0..<4 {
                let byte = bytes[index]
                let digit: UInt32
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
                case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a") + 10)
                case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A") + 10)
                default: throw fail("invalid hex digit")
                }
                value = value << 4 | digit
                index += 1
            }
            return value
        }

        mutating func unicodeEscape() throws(StrictJSONError) -> Unicode.Scalar {
            let first = try hexQuad()
            if (0xD800...0xDBFF).contains(first) {
                guard index + 2 <= bytes.count, bytes[index] == UInt8(ascii: "\\"),
                    bytes[index + 1] == UInt8(ascii: "u")
                else { throw fail("lone high surrogate") }
                index += 2
                let second = try hexQuad()
                guard (0xDC00...0xDFFF).contains(second) else { throw fail("invalid low surrogate") }
                let combined = 0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00)
                guard let scalar = Unicode.Scalar(combined) else { throw fail("invalid code point") }
                return scalar
            }
            guard let scalar = Unicode.Scalar(first) else { throw fail("lone low surrogate") }
            return scalar
        }

        mutating func digits() throws(StrictJSONError) {
            let start = index
            while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) { index += 1 }
            guard index > start else { throw fail("expected a digit") }
        }

        mutating func number() throws(StrictJSONError) {
            if bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard index < bytes.count else { throw fail("expected a digit") }
            if bytes[index] == UInt8(ascii: "0") {
                index += 1
            } else {
                try digits()
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
                index += 1
                try digits()
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
                index += 1
                if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
                    index += 1
                }
                try digits()
            }
        }
    }
}
