import Foundation

/// Decodes JSON strictly and in one pass: the document is checked by ``StrictJSON`` (syntax, repeated keys,
/// depth, size) while it is read, and the `Decodable` type is then decoded from where each value lies,
/// without parsing the bytes a second time. It answers as `JSONDecoder` does for the same input: the same
/// values, and a `DecodingError` of the same kind where that one throws (a missing key, a type mismatch, a
/// number that does not fit). Unknown keys are ignored, as there.
///
/// Numbers are parsed into their type's range and never trap: a number that does not fit its type is a
/// `DecodingError.dataCorrupted`. Dates decode as `Date`'s own `Decodable` (seconds since 2001, as
/// `JSONDecoder`'s default) or, for Apple's data, as milliseconds since 1970 within a range.
///
/// ```swift
/// let body = try StrictJSONDecoder().decode(SpendRequest.self, from: data)
/// ```
public struct StrictJSONDecoder: Sendable {
    /// How dates are read.
    public enum DateDecoding: Sendable {
        /// `Date`'s own `Decodable`: seconds since 2001 (`JSONDecoder`'s default).
        case deferredToDate
        /// A number of milliseconds since 1970 inside the range (Apple's signed data).
        case millisecondsSince1970(ClosedRange<Double>)
    }

    /// How dates are read.
    public var dateDecoding: DateDecoding
    /// The deepest nesting of objects and arrays accepted.
    public var maximumDepth: Int
    /// The largest document accepted, in bytes.
    public var maximumSize: Int

    /// A decoder.
    ///
    /// - Parameters:
    ///   - dateDecoding: How dates are read.
    ///   - maximumDepth: The deepest nesting of objects and arrays accepted.
    ///   - maximumSize: The largest document accepted, in bytes.
    public init(
        dateDecoding: DateDecoding = .deferredToDate, maximumDepth: Int = StrictJSON.defaultMaximumDepth,
        maximumSize: Int = 16 * 1024 * 1024
    ) {
        self.dateDecoding = dateDecoding
        self.maximumDepth = maximumDepth
        self.maximumSize = maximumSize
    }

    /// Checks and decodes a document.
    ///
    /// - Throws: ``StrictJSONError`` for a document that is not strict JSON, `DecodingError` for one that does
    ///   not fit `type`.
    public func decode<T: Decodable>(_ type: T.Type, from data: Data) throws -> T {
        let tape = try StrictJSON.tape(of: data, maximumDepth: maximumDepth, maximumSize: maximumSize)
        let root = TapeDecoder(tape: TapeBox(tape), node: 0, parentPath: [], key: nil, dates: dateDecoding)
        if let readable = T.self as? any StrictJSONReadable.Type {
            guard let value = try readable.init(reading: StrictJSONValue(root)) as? T else {
                throw root.corrupted("cannot read \(T.self)")
            }
            return value
        }
        return try root.decode(type)
    }

    /// Checks and reads a document as a type that reads itself: what ``decode(_:from:)`` does for it, without
    /// boxing the value in an existential and casting it back.
    ///
    /// - Throws: ``StrictJSONError`` for a document that is not strict JSON, `DecodingError` for one that does
    ///   not fit `type`.
    public func read<T: StrictJSONReadable>(_ type: T.Type, from data: Data) throws -> T {
        let tape = try StrictJSON.tape(of: data, maximumDepth: maximumDepth, maximumSize: maximumSize)
        return try T(
            reading: StrictJSONValue(
                TapeDecoder(tape: TapeBox(tape), node: 0, parentPath: [], key: nil, dates: dateDecoding)))
    }
}

/// The tape, shared by every decoder and container made from it.
final class TapeBox: Sendable {
    let tape: StrictJSON.Tape
    init(_ tape: StrictJSON.Tape) { self.tape = tape }
}

/// A key for arrays' positions and dictionaries' keys in coding paths.
struct TapeKey: CodingKey {
    var stringValue: String
    var intValue: Int?
    init(stringValue: String) { self.stringValue = stringValue }
    init(intValue: Int) {
        stringValue = "Index \(intValue)"
        self.intValue = intValue
    }
}

/// The decoder for one value of the tape; it is its own single-value container.
struct TapeDecoder: Decoder, SingleValueDecodingContainer {
    let tape: TapeBox
    let node: Int
    /// The path to the value's container, and the value's key in it: the path is built only when asked for (an
    /// error, a nested container), not for every value decoded.
    let parentPath: [any CodingKey]
    let step: Step
    var codingPath: [any CodingKey] {
        switch step {
        case .none: parentPath
        case .key(let key): parentPath + [key]
        case .member(let node): parentPath + [StrictJSONKey(tape: tape, node: node)]
        }
    }

    /// The last step of the path to the value: none at the top, a key, or an object's member by its key's node.
    enum Step {
        case none
        case key(any CodingKey)
        case member(Int)
    }

    init(
        tape: TapeBox, node: Int, parentPath: [any CodingKey], key: (any CodingKey)?,
        dates: StrictJSONDecoder.DateDecoding
    ) {
        self.init(tape: tape, node: node, parentPath: parentPath, step: key.map { .key($0) } ?? .none, dates: dates)
    }

    init(tape: TapeBox, node: Int, parentPath: [any CodingKey], step: Step, dates: StrictJSONDecoder.DateDecoding) {
        self.tape = tape
        self.node = node
        self.parentPath = parentPath
        self.step = step
        self.dates = dates
    }
    let dates: StrictJSONDecoder.DateDecoding
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    private var kind: StrictJSON.Tape.Kind { tape.tape.nodes[node].kind }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard kind == .object else { throw mismatch([String: Any].self, "an object") }
        return KeyedDecodingContainer(try KeyedContainer<Key>(decoder: self))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard kind == .array else { throw mismatch([Any].self, "an array") }
        return UnkeyedContainer(decoder: self)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer { self }

    /// A decoder for another node, one level down.
    func child(_ node: Int, key: any CodingKey) -> TapeDecoder {
        TapeDecoder(tape: tape, node: node, parentPath: codingPath, key: key, dates: dates)
    }

    func mismatch(_ type: Any.Type, _ expected: String) -> DecodingError {
        let found: String =
            switch kind {
            case .object: "an object"
            case .array: "an array"
            case .string: "a string"
            case .number: "a number"
            case .true, .false: "a boolean"
            case .null: "null"
            }
        let context = DecodingError.Context(
            codingPath: codingPath, debugDescription: "expected \(expected), found \(found)")
        return kind == .null ? .valueNotFound(type, context) : .typeMismatch(type, context)
    }

    func corrupted(_ description: String) -> DecodingError {
        .dataCorrupted(DecodingError.Context(codingPath: codingPath, debugDescription: description))
    }

    // MARK: Single values

    func decodeNil() -> Bool { kind == .null }

    func decode(_ type: Bool.Type) throws -> Bool {
        switch kind {
        case .true: true
        case .false: false
        default: throw mismatch(type, "a boolean")
        }
    }

    func decode(_ type: String.Type) throws -> String {
        guard kind == .string else { throw mismatch(type, "a string") }
        return try tape.tape.string(node)
    }

    func decode(_ type: Double.Type) throws -> Double {
        guard kind == .number else { throw mismatch(type, "a number") }
        // An integer of at most 15 digits (Apple's dates in milliseconds) is exactly a Double: read as one.
        let span = tape.tape.nodes[node]
        if span.end - span.start <= 15, tape.tape.bytes[span.start] != UInt8(ascii: "-"),
            tape.tape.bytes[span.start..<span.end].allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") })
        {
            return Double(try integer(Int64.self))
        }
        let text = tape.tape.text(node)
        // As JSONDecoder: a number too large for Double, or one too small that would read as 0, is refused.
        guard let value = Double(text), value.isFinite,
            value != 0 || !text.prefix { $0 != "e" && $0 != "E" }.contains(where: { ("1"..."9").contains($0) })
        else {
            throw corrupted("the number \(text) is not representable as Double")
        }
        return value
    }

    func decode(_ type: Float.Type) throws -> Float {
        let value = try decode(Double.self)
        // As JSONDecoder: too large for Float, or so small it would read as 0, is refused.
        guard abs(value) <= Double(Float.greatestFiniteMagnitude), Float(value) != 0 || value == 0 else {
            throw corrupted("the number \(value) does not fit in Float")
        }
        return Float(value)
    }

    func decode(_ type: Int.Type) throws -> Int { try integer(type) }
    func decode(_ type: Int8.Type) throws -> Int8 { try integer(type) }
    func decode(_ type: Int16.Type) throws -> Int16 { try integer(type) }
    func decode(_ type: Int32.Type) throws -> Int32 { try integer(type) }
    func decode(_ type: Int64.Type) throws -> Int64 { try integer(type) }
    func decode(_ type: UInt.Type) throws -> UInt { try integer(type) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try integer(type) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try integer(type) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try integer(type) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try integer(type) }

    /// An integer in `T`'s range: digits are accumulated with overflow checks; a number with a fraction or an
    /// exponent is taken only when it is exactly a `T`.
    func integer<T: FixedWidthInteger>(_ type: T.Type) throws -> T {
        guard kind == .number else { throw mismatch(type, "a number") }
        let node = tape.tape.nodes[node]
        let bytes = tape.tape.bytes
        var index = node.start
        let negative = bytes[index] == UInt8(ascii: "-")
        if negative { index += 1 }
        var value: T = 0
        var plain = true
        while index < node.end {
            let byte = bytes[index]
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else {
                plain = false
                break
            }
            let (times, overflowed) = value.multipliedReportingOverflow(by: 10)
            let digit = T(byte - UInt8(ascii: "0"))
            let (next, overflowedAgain) =
                negative ? times.subtractingReportingOverflow(digit) : times.addingReportingOverflow(digit)
            guard !overflowed, !overflowedAgain else {
                throw corrupted("the number \(tape.tape.text(self.node)) does not fit in \(T.self)")
            }
            value = next
            index += 1
        }
        if plain { return value }
        let text = tape.tape.text(self.node)
        guard let double = Double(text), let exact = T(exactly: double) else {
            throw corrupted("the number \(text) does not fit in \(T.self)")
        }
        return exact
    }

    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        // The types JSONDecoder reads its own way, read here the same way. Each is returned as `T` only when `T`
        // is its very type, which makes the cast an identity.
        if T.self == Date.self, case .millisecondsSince1970(let range) = dates {
            let milliseconds = try decode(Double.self)
            guard range.contains(milliseconds) else {
                throw corrupted("a date must be milliseconds between the years 0 and 9999, not \(milliseconds)")
            }
            return unsafeBitCast(Date(timeIntervalSince1970: milliseconds / 1_000), to: T.self)
        }
        if T.self == Data.self {
            guard let data = Data(base64Encoded: try decode(String.self)) else {
                throw corrupted("the string is not valid base64")
            }
            return unsafeBitCast(data, to: T.self)
        }
        if T.self == URL.self {
            guard let url = URL(string: try decode(String.self)) else { throw corrupted("the string is not a URL") }
            return unsafeBitCast(url, to: T.self)
        }
        if T.self == Decimal.self {
            guard kind == .number, let decimal = Decimal(string: String(tape.tape.text(node))) else {
                throw mismatch(type, "a number")
            }
            return unsafeBitCast(decimal, to: T.self)
        }
        return try T(from: self)
    }
}

/// A type that reads itself from a strict JSON object member by member, without `Decodable`'s containers:
/// ``StrictJSONDecoder`` uses it when the type offers it (Apple's models, generated with it), with the same
/// answers for the same input, in a fraction of the time.
public protocol StrictJSONReadable: Decodable {
    /// Reads the value from an object.
    ///
    /// - Throws: `DecodingError` for an object that does not fit the type.
    init(reading object: StrictJSONValue) throws
}

/// A value in a document ``StrictJSONDecoder`` checked: read as the type a member has, `nil` for `null`.
public struct StrictJSONValue {
    let decoder: TapeDecoder

    init(_ decoder: TapeDecoder) { self.decoder = decoder }

    private var kind: StrictJSON.Tape.Kind { decoder.tape.tape.nodes[decoder.node].kind }

    /// Calls `body` with each member of an object, in document order.
    ///
    /// - Throws: `DecodingError.typeMismatch` when the value is not an object, or what `body` throws.
    public func members(_ body: (StrictJSONKey, StrictJSONValue) throws -> Void) throws {
        guard kind == .object else { throw decoder.mismatch([String: Any].self, "an object") }
        let tape = decoder.tape.tape
        let path = decoder.codingPath
        var cursor = decoder.node + 1
        for _ in 0..<tape.nodes[decoder.node].count {
            let value = TapeDecoder(
                tape: decoder.tape, node: cursor + 1, parentPath: path, step: .member(cursor), dates: decoder.dates)
            try body(StrictJSONKey(tape: decoder.tape, node: cursor), StrictJSONValue(value))
            cursor = tape.nodes[cursor + 1].next
        }
    }

    /// A string, `nil` for `null`.
    public func string() throws -> String? {
        switch kind {
        case .string: return try decoder.tape.tape.string(decoder.node)
        case .null: return nil
        default: throw decoder.mismatch(String.self, "a string")
        }
    }

    /// A boolean, `nil` for `null`.
    public func bool() throws -> Bool? { kind == .null ? nil : try decoder.decode(Bool.self) }
    /// A 32-bit integer, `nil` for `null`.
    public func int32() throws -> Int32? { kind == .null ? nil : try decoder.decode(Int32.self) }
    /// A 64-bit integer, `nil` for `null`.
    public func int64() throws -> Int64? { kind == .null ? nil : try decoder.decode(Int64.self) }
    /// A double, `nil` for `null`.
    public func double() throws -> Double? { kind == .null ? nil : try decoder.decode(Double.self) }
    /// A date, read as the decoder reads dates, `nil` for `null`.
    public func date() throws -> Date? { kind == .null ? nil : try decoder.decode(Date.self) }

    /// A UUID from its string, `nil` for `null`.
    public func uuid() throws -> UUID? {
        guard let text = try string() else { return nil }
        guard let uuid = Self.uuid(text) ?? UUID(uuidString: text) else {
            throw decoder.corrupted("Attempted to decode UUID from invalid UUID string.")
        }
        return uuid
    }

    /// The UUID in its usual spelling (8-4-4-4-12 hexadecimal digits, either case) read directly; `nil` for any
    /// other text, which `UUID(uuidString:)` then reads or refuses.
    static func uuid(_ text: String) -> UUID? {
        var text = text
        return text.withUTF8 { bytes -> UUID? in
            guard bytes.count == 36 else { return nil }
            var value = [UInt8](repeating: 0, count: 16)
            var nibble = 0
            for (index, byte) in bytes.enumerated() {
                if index == 8 || index == 13 || index == 18 || index == 23 {
                    guard byte == UInt8(ascii: "-") else { return nil }
                    continue
                }
                let digit: UInt8
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
                case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
                case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
                default: return nil
                }
                value[nibble / 2] |= nibble % 2 == 0 ? digit << 4 : digit
                nibble += 1
            }
            return UUID(
                uuid: (
                    value[0], value[1], value[2], value[3], value[4], value[5], value[6], value[7], value[8], value[9],
                    value[10], value[11], value[12], value[13], value[14], value[15]
                ))
        }
    }

    /// An array of strings, `nil` for `null`.
    public func strings() throws -> [String]? { kind == .null ? nil : try decoder.decode([String].self) }

    /// A value that reads itself, `nil` for `null`.
    public func read<T: StrictJSONReadable>(_ type: T.Type) throws -> T? {
        kind == .null ? nil : try T(reading: self)
    }

    /// An array of values that read themselves, `nil` for `null`.
    public func array<T: StrictJSONReadable>(of type: T.Type) throws -> [T]? {
        guard kind != .null else { return nil }
        guard kind == .array else { throw decoder.mismatch([T].self, "an array") }
        let tape = decoder.tape.tape
        var values: [T] = []
        var cursor = decoder.node + 1
        for index in 0..<tape.nodes[decoder.node].count {
            let element = TapeDecoder(
                tape: decoder.tape, node: cursor, parentPath: decoder.codingPath, key: TapeKey(intValue: index),
                dates: decoder.dates)
            guard let value = try StrictJSONValue(element).read(type) else {
                throw DecodingError.valueNotFound(
                    type, DecodingError.Context(codingPath: element.codingPath, debugDescription: "null in an array"))
            }
            values.append(value)
            cursor = tape.nodes[cursor].next
        }
        return values
    }

    /// Any other `Decodable` value, through `Decodable`; `nil` for `null`.
    public func decode<T: Decodable>(_ type: T.Type) throws -> T? { kind == .null ? nil : try decoder.decode(type) }
}

/// An object's key, compared with the names a type knows without building a `String`.
public struct StrictJSONKey: CodingKey {
    fileprivate let tape: TapeBox
    fileprivate let node: Int

    fileprivate init(tape: TapeBox, node: Int) {
        self.tape = tape
        self.node = node
    }

    /// The key's length in UTF-8 bytes (as written, escapes undone).
    public var count: Int {
        let node = tape.tape.nodes[node]
        return node.escaped ? stringValue.utf8.count : node.end - node.start
    }

    /// Whether the key is `name`.
    public static func == (key: StrictJSONKey, name: StaticString) -> Bool {
        let node = key.tape.tape.nodes[key.node]
        return name.withUTF8Buffer { wanted in
            if node.escaped { return key.stringValue.utf8.elementsEqual(wanted) }
            guard node.end - node.start == wanted.count else { return false }
            guard let wantedStart = wanted.baseAddress, !wanted.isEmpty else { return true }
            return key.tape.tape.bytes.withUnsafeBufferPointer { bytes in
                memcmp(bytes.baseAddress! + node.start, wantedStart, wanted.count) == 0
            }
        }
    }

    /// The key's text.
    public var stringValue: String { (try? tape.tape.string(node)) ?? "" }
    /// Keys are not integers.
    public var intValue: Int? { nil }

    /// Not made from text: keys come from documents.
    public init?(stringValue: String) { nil }
    /// Not made from integers.
    public init?(intValue: Int) { nil }
}
