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
        _ = try tape(of: data, maximumDepth: maximumDepth, maximumSize: maximumSize)
    }

    /// Checks `data` as ``validate(_:maximumDepth:maximumSize:)`` does and returns where each value lies: what
    /// ``StrictJSONDecoder`` decodes from without reading the bytes again.
    static func tape(of data: Data, maximumDepth: Int, maximumSize: Int) throws(StrictJSONError) -> Tape {
        guard data.count <= maximumSize else { throw .tooLarge(limit: maximumSize) }
        var scanner = Scanner(bytes: [UInt8](data), maximumDepth: maximumDepth)
        scanner.nodes.reserveCapacity(data.count / 8 + 4)
        try scanner.skipWhitespace()
        try scanner.value(depth: 0)
        try scanner.skipWhitespace()
        guard scanner.atEnd else { throw .malformed(offset: scanner.index, reason: "trailing characters") }
        return Tape(bytes: scanner.bytes, nodes: scanner.nodes)
    }

    /// Validates `data` with ``validate(_:maximumDepth:maximumSize:)`` and decodes it with
    /// ``StrictJSONDecoder`` (dates as `Date`'s own `Decodable` reads them, as `JSONDecoder` does by default).
    ///
    /// - Parameters:
    ///   - type: The type to decode.
    ///   - data: The document.
    /// - Returns: The decoded value.
    public static func decode<T: Decodable>(_ type: T.Type, from data: Data) throws -> T {
        try StrictJSONDecoder().decode(type, from: data)
    }

    /// Validates `data` with ``validate(_:maximumDepth:maximumSize:)`` and then decodes it with `decoder`.
    ///
    /// - Parameters:
    ///   - type: The type to decode.
    ///   - data: The document.
    ///   - decoder: The decoder to use after validation.
    /// - Returns: The decoded value.
    public static func decode<T: Decodable>(_ type: T.Type, from data: Data, decoder: JSONDecoder) throws -> T {
        try validate(data)
        return try decoder.decode(type, from: data)
    }

    /// Where each value of a checked document lies, in document order: a container is followed by its
    /// members (an object's as key, value, key, value, ...), and says where the node after it is.
    struct Tape: Sendable {
        enum Kind: UInt8, Sendable {
            case object, array, string, number, `true`, `false`, null
        }

        struct Node: Sendable {
            var kind: Kind
            /// A string's first byte after its quote, a number's first byte, a container's opening byte.
            var start: Int
            /// A string's closing quote, the byte after a number, literal or container.
            var end: Int
            /// A string holds escapes (its text is not its bytes).
            var escaped = false
            /// A container's members (an object's pairs).
            var count = 0
            /// The node after this one and everything inside it.
            var next = 0
        }

        var bytes: [UInt8]
        var nodes: [Node]

        /// A string node's text.
        func string(_ index: Int) throws(StrictJSONError) -> String {
            let node = nodes[index]
            let raw = bytes[node.start..<node.end]
            guard node.escaped else { return String(decoding: raw, as: UTF8.self) }
            return try Scanner.unescape(raw, offset: node.start)
        }

        /// A number node's text.
        func text(_ index: Int) -> Substring {
            let node = nodes[index]
            return Substring(String(decoding: bytes[node.start..<node.end], as: UTF8.self))
        }
    }

    struct Scanner {
        let bytes: [UInt8]
        let maximumDepth: Int
        var index = 0
        var nodes: [Tape.Node] = []

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
            let start = index
            switch bytes[index] {
            case UInt8(ascii: "{"): try object(depth: depth + 1)
            case UInt8(ascii: "["): try array(depth: depth + 1)
            case UInt8(ascii: "\""): try stringNode()
            case UInt8(ascii: "t"):
                try literal("true")
                nodes.append(Tape.Node(kind: .true, start: start, end: index, next: nodes.count + 1))
            case UInt8(ascii: "f"):
                try literal("false")
                nodes.append(Tape.Node(kind: .false, start: start, end: index, next: nodes.count + 1))
            case UInt8(ascii: "n"):
                try literal("null")
                nodes.append(Tape.Node(kind: .null, start: start, end: index, next: nodes.count + 1))
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                try number()
                nodes.append(Tape.Node(kind: .number, start: start, end: index, next: nodes.count + 1))
            default: throw fail("unexpected character")
            }
        }

        /// Reads a string value into a node (its text is built only when decoded).
        mutating func stringNode() throws(StrictJSONError) {
            let escaped = try string()
            nodes.append(
                Tape.Node(
                    kind: .string, start: lastStringStart, end: index - 1, escaped: escaped, next: nodes.count + 1))
        }

        mutating func literal(_ word: String) throws(StrictJSONError) {
            for byte in word.utf8 { try expect(byte) }
        }

        mutating func object(depth: Int) throws(StrictJSONError) {
            guard depth <= maximumDepth else { throw .tooDeep(limit: maximumDepth) }
            let start = index
            let position = nodes.count
            nodes.append(Tape.Node(kind: .object, start: start, end: start))
            try expect(UInt8(ascii: "{"))
            try skipWhitespace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
                index += 1
                close(position)
                return
            }
            // Repeated keys: compared by their bytes while the object is small and no key has an escape (no
            // text built), in a set of their texts after that (so a huge object costs no quadratic time).
            var keyNodes: [Int] = []
            var keys: Set<String>?
            while true {
                try skipWhitespace()
                let keyOffset = index
                guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw fail("expected a key") }
                try stringNode()
                let key = nodes.count - 1
                if keys == nil, nodes[key].escaped || keyNodes.count >= 32 {
                    keys = Set(try keyNodes.map { node throws(StrictJSONError) in try text(ofKey: node) })
                }
                if keys != nil {
                    let text = try text(ofKey: key)
                    guard keys?.insert(text).inserted == true else { throw .duplicateKey(text, offset: keyOffset) }
                } else {
                    if let twin = keyNodes.first(where: { sameBytes($0, key) }) {
                        throw .duplicateKey(try text(ofKey: twin), offset: keyOffset)
                    }
                    keyNodes.append(key)
                }
                try skipWhitespace()
                try expect(UInt8(ascii: ":"))
                try skipWhitespace()
                try value(depth: depth)
                nodes[position].count += 1
                try skipWhitespace()
                guard index < bytes.count else { throw fail("unterminated object") }
                if bytes[index] == UInt8(ascii: ",") {
                    index += 1
                    continue
                }
                try expect(UInt8(ascii: "}"))
                close(position)
                return
            }
        }

        /// Ends the container at `position`: where it ends, and the node after it.
        mutating func close(_ position: Int) {
            nodes[position].end = index
            nodes[position].next = nodes.count
        }

        /// A key node's text.
        func text(ofKey node: Int) throws(StrictJSONError) -> String {
            let raw = bytes[nodes[node].start..<nodes[node].end]
            return nodes[node].escaped
                ? try Self.unescape(raw, offset: nodes[node].start) : String(decoding: raw, as: UTF8.self)
        }

        /// Whether two string nodes hold the same bytes.
        func sameBytes(_ a: Int, _ b: Int) -> Bool {
            let (first, second) = (nodes[a], nodes[b])
            return first.end - first.start == second.end - second.start
                && bytes[first.start..<first.end].elementsEqual(bytes[second.start..<second.end])
        }

        mutating func array(depth: Int) throws(StrictJSONError) {
            guard depth <= maximumDepth else { throw .tooDeep(limit: maximumDepth) }
            let position = nodes.count
            nodes.append(Tape.Node(kind: .array, start: index, end: index))
            try expect(UInt8(ascii: "["))
            try skipWhitespace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
                index += 1
                close(position)
                return
            }
            while true {
                try skipWhitespace()
                try value(depth: depth)
                nodes[position].count += 1
                try skipWhitespace()
                guard index < bytes.count else { throw fail("unterminated array") }
                if bytes[index] == UInt8(ascii: ",") {
                    index += 1
                    continue
                }
                try expect(UInt8(ascii: "]"))
                close(position)
                return
            }
        }

        /// Where the last string read began (after its quote).
        var lastStringStart = 0

        /// Checks a string, leaving the index after its closing quote: whether it holds escapes. Its text is
        /// never built here, which keeps the check cheap for large values such as certificates.
        mutating func string() throws(StrictJSONError) -> Bool {
            try expect(UInt8(ascii: "\""))
            let start = index
            lastStringStart = start
            var hasEscape = false
            var hasNonASCII = false
            while true {
                // Plain ASCII runs first, a byte at a time without the checks below (a certificate or a JWS in a
                // string is thousands of them).
                let from = index
                index = bytes.withUnsafeBufferPointer { buffer in
                    var position = from
                    while position < buffer.count {
                        let byte = buffer[position]
                        guard byte >= 0x20, byte < 0x80, byte != UInt8(ascii: "\""), byte != UInt8(ascii: "\\") else {
                            break
                        }
                        position += 1
                    }
                    return position
                }
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
            return hasEscape
        }

        /// Unescapes a string body already checked by ``string()``: runs of plain bytes are copied as they are,
        /// each escape written as its character's UTF-8.
        static func unescape(_ raw: ArraySlice<UInt8>, offset: Int) throws(StrictJSONError) -> String {
            var output: [UInt8] = []
            output.reserveCapacity(raw.count)
            var index = raw.startIndex
            while index < raw.endIndex {
                let byte = raw[index]
                guard byte == UInt8(ascii: "\\"), index + 1 < raw.endIndex else {
                    output.append(byte)
                    index += 1
                    continue
                }
                let escape = raw[index + 1]
                index += 2
                switch escape {
                case UInt8(ascii: "b"): output.append(0x08)
                case UInt8(ascii: "f"): output.append(0x0C)
                case UInt8(ascii: "n"): output.append(0x0A)
                case UInt8(ascii: "r"): output.append(0x0D)
                case UInt8(ascii: "t"): output.append(0x09)
                case UInt8(ascii: "u"):
                    var scanner = Scanner(bytes: Array(raw[(index - 2)...].prefix(12)), maximumDepth: 0)
                    scanner.index = 2
                    let scalar = try scanner.unicodeEscape()
                    index += scanner.index - 2
                    output.append(contentsOf: String(Character(scalar)).utf8)
                default: output.append(escape)
                }
            }
            return String(decoding: output, as: UTF8.self)
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
