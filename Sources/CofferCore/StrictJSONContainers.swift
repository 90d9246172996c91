import Foundation

/// An object's members, found by their key's bytes (a small object's by a scan, a large one's by a table, so a
/// dictionary of many keys costs no quadratic time). Each member carries a summary of its key (its length and
/// first bytes), so a scan compares one integer per member and reads bytes only where the summaries agree.
struct KeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    /// Objects with more members than this are looked up through a table of their keys.
    static var scanLimit: Int { 64 }

    /// What the container reads, behind one reference: `KeyedDecodingContainer` copies its container on every
    /// call.
    private final class Storage {
        let decoder: TapeDecoder
        /// Each member's key summary, in document order.
        let summaries: [UInt64]
        /// Each member's key text (UTF-8) and value node, in document order.
        let names: [[UInt8]]
        let values: [Int]
        /// Each key's value node, for a large object.
        let table: [String: Int]?

        init(decoder: TapeDecoder, summaries: [UInt64], names: [[UInt8]], values: [Int], table: [String: Int]?) {
            self.decoder = decoder
            self.summaries = summaries
            self.names = names
            self.values = values
            self.table = table
        }
    }

    private let storage: Storage
    var decoder: TapeDecoder { storage.decoder }

    init(decoder: TapeDecoder) throws {
        let tape = decoder.tape.tape
        let count = tape.nodes[decoder.node].count
        var summaries: [UInt64] = []
        var names: [[UInt8]] = []
        var values: [Int] = []
        var table: [String: Int]?
        var cursor = decoder.node + 1
        if count > Self.scanLimit {
            var keys: [String: Int] = [:]
            keys.reserveCapacity(count)
            for _ in 0..<count {
                keys[try tape.string(cursor)] = cursor + 1
                cursor = tape.nodes[cursor + 1].next
            }
            table = keys
        } else {
            summaries.reserveCapacity(count)
            names.reserveCapacity(count)
            values.reserveCapacity(count)
            for _ in 0..<count {
                let node = tape.nodes[cursor]
                // Keys of six bytes or fewer are told apart by their summary alone; longer ones keep their text.
                let name =
                    node.escaped ? Array(try tape.string(cursor).utf8) : Array(tape.bytes[node.start..<node.end])
                summaries.append(name.withUnsafeBufferPointer(Self.summary))
                names.append(name.count > 6 ? name : [])
                values.append(cursor + 1)
                cursor = tape.nodes[cursor + 1].next
            }
        }
        storage = Storage(decoder: decoder, summaries: summaries, names: names, values: values, table: table)
    }

    /// A key's length and first six bytes, in one integer.
    static func summary(_ name: UnsafeBufferPointer<UInt8>) -> UInt64 {
        var summary = UInt64(truncatingIfNeeded: name.count) << 48
        for position in 0..<min(6, name.count) { summary |= UInt64(name[position]) << (UInt64(position) * 8) }
        return summary
    }

    var codingPath: [any CodingKey] { decoder.codingPath }

    var allKeys: [Key] {
        if let table = storage.table { return table.keys.compactMap { Key(stringValue: $0) } }
        let tape = decoder.tape.tape
        var keys: [Key] = []
        var cursor = decoder.node + 1
        for _ in 0..<storage.values.count {
            if let name = try? tape.string(cursor), let key = Key(stringValue: name) { keys.append(key) }
            cursor = tape.nodes[cursor + 1].next
        }
        return keys
    }

    /// The value node under `key`, if the object has it.
    func value(_ key: Key) -> Int? {
        if let table = storage.table { return table[key.stringValue] }
        var name = key.stringValue
        return name.withUTF8 { wanted in
            let summary = Self.summary(wanted)
            return storage.summaries.withUnsafeBufferPointer { summaries in
                for position in summaries.indices where summaries[position] == summary {
                    if wanted.count <= 6 || storage.names[position].elementsEqual(wanted) {
                        return storage.values[position]
                    }
                }
                return nil
            }
        }
    }

    func require(_ key: Key) throws -> TapeDecoder {
        guard let node = value(key) else {
            throw DecodingError.keyNotFound(
                key,
                DecodingError.Context(codingPath: codingPath, debugDescription: "no value for \"\(key.stringValue)\""))
        }
        return decoder.child(node, key: key)
    }

    /// The decoder of `key`'s value, `nil` when it is absent or null.
    func present(_ key: Key) -> TapeDecoder? {
        guard let node = value(key), decoder.tape.tape.nodes[node].kind != .null else { return nil }
        return decoder.child(node, key: key)
    }

    func contains(_ key: Key) -> Bool { value(key) != nil }
    func decodeNil(forKey key: Key) throws -> Bool { try require(key).decodeNil() }

    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try require(key).decode(type) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try require(key).decode(type) }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try require(key).decode(type) }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try require(key).decode(type) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try require(key).decode(type) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try require(key).decode(type) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try require(key).decode(type) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try require(key).decode(type) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try require(key).decode(type) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try require(key).decode(type) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try require(key).decode(type) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try require(key).decode(type) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try require(key).decode(type) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try require(key).decode(type) }
    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T { try require(key).decode(type) }

    // One lookup for an optional member, where the protocol's defaults look it up twice or three times.
    func decodeIfPresent(_ type: Bool.Type, forKey key: Key) throws -> Bool? { try present(key)?.decode(type) }
    func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? {
        // The commonest member, read without a decoder of its own unless it is not a string.
        guard let node = value(key) else { return nil }
        switch decoder.tape.tape.nodes[node].kind {
        case .string: return try decoder.tape.tape.string(node)
        case .null: return nil
        default: return try decoder.child(node, key: key).decode(type)
        }
    }
    func decodeIfPresent(_ type: Double.Type, forKey key: Key) throws -> Double? { try present(key)?.decode(type) }
    func decodeIfPresent(_ type: Float.Type, forKey key: Key) throws -> Float? { try present(key)?.decode(type) }
    func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? { try present(key)?.decode(type) }
    func decodeIfPresent(_ type: Int8.Type, forKey key: Key) throws -> Int8? { try present(key)?.decode(type) }
    func decodeIfPresent(_ type: Int16.Type, forKey key: Key) throws -> Int16? { try present(key)?.decode(type) }
    func decodeIfPresent(_ type: Int32.Type, forKey key: Key) throws -> Int32? { try present(key)?.decode(type) }
    func decodeIfPresent(_ type: Int64.Type, forKey key: Key) throws -> Int64? { try present(key)?.decode(type) }
    func decodeIfPresent(_ type: UInt.Type, forKey key: Key) throws -> UInt? { try present(key)?.decode(type) }
    func decodeIfPresent(_ type: UInt8.Type, forKey key: Key) throws -> UInt8? { try present(key)?.decode(type) }
    func decodeIfPresent(_ type: UInt16.Type, forKey key: Key) throws -> UInt16? { try present(key)?.decode(type) }
    func decodeIfPresent(_ type: UInt32.Type, forKey key: Key) throws -> UInt32? { try present(key)?.decode(type) }
    func decodeIfPresent(_ type: UInt64.Type, forKey key: Key) throws -> UInt64? { try present(key)?.decode(type) }
    func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
        try present(key)?.decode(type)
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws
        -> KeyedDecodingContainer<NestedKey>
    {
        try require(key).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try require(key).unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder {
        guard let key = Key(stringValue: "super") else { throw decoder.corrupted("no key \"super\"") }
        return try require(key)
    }

    func superDecoder(forKey key: Key) throws -> any Decoder { try require(key) }
}

/// An array's elements, in order.
struct UnkeyedContainer: UnkeyedDecodingContainer {
    let decoder: TapeDecoder
    let count: Int?
    private(set) var currentIndex = 0
    /// The next element's node.
    private var cursor: Int

    init(decoder: TapeDecoder) {
        self.decoder = decoder
        count = decoder.tape.tape.nodes[decoder.node].count
        cursor = decoder.node + 1
    }

    var codingPath: [any CodingKey] { decoder.codingPath }
    var isAtEnd: Bool { currentIndex >= (count ?? 0) }

    /// The next element's decoder, moving past it.
    private mutating func next(_ type: Any.Type) throws -> TapeDecoder {
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(
                type,
                DecodingError.Context(
                    codingPath: codingPath + [TapeKey(intValue: currentIndex)], debugDescription: "the array ends here")
            )
        }
        let element = decoder.child(cursor, key: TapeKey(intValue: currentIndex))
        cursor = decoder.tape.tape.nodes[cursor].next
        currentIndex += 1
        return element
    }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd, decoder.tape.tape.nodes[cursor].kind == .null else { return false }
        _ = try next(Never.self)
        return true
    }

    mutating func decode(_ type: Bool.Type) throws -> Bool { try next(type).decode(type) }
    mutating func decode(_ type: String.Type) throws -> String { try next(type).decode(type) }
    mutating func decode(_ type: Double.Type) throws -> Double { try next(type).decode(type) }
    mutating func decode(_ type: Float.Type) throws -> Float { try next(type).decode(type) }
    mutating func decode(_ type: Int.Type) throws -> Int { try next(type).decode(type) }
    mutating func decode(_ type: Int8.Type) throws -> Int8 { try next(type).decode(type) }
    mutating func decode(_ type: Int16.Type) throws -> Int16 { try next(type).decode(type) }
    mutating func decode(_ type: Int32.Type) throws -> Int32 { try next(type).decode(type) }
    mutating func decode(_ type: Int64.Type) throws -> Int64 { try next(type).decode(type) }
    mutating func decode(_ type: UInt.Type) throws -> UInt { try next(type).decode(type) }
    mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try next(type).decode(type) }
    mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try next(type).decode(type) }
    mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try next(type).decode(type) }
    mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try next(type).decode(type) }
    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { try next(type).decode(type) }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws
        -> KeyedDecodingContainer<NestedKey>
    {
        try next([String: Any].self).container(keyedBy: type)
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        try next([Any].self).unkeyedContainer()
    }

    mutating func superDecoder() throws -> any Decoder { try next(Any.self) }
}
