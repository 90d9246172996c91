import Foundation

/// A currency the ledger keeps a balance and a deficit of, per customer: coins, gems. Its id is what the catalog,
/// the API and the ledger's records name it by: 1 to 32 lowercase letters, digits or `_`, starting with a letter.
public struct Currency: RawRepresentable, Hashable, Comparable, Sendable, Codable, CustomStringConvertible {
    /// The currency of a catalog that names none: every balance Coffer kept before it had several currencies.
    public static let credits = Currency(checked: "credits")

    /// The longest id.
    public static let maximumLength = 32

    /// The id.
    public let rawValue: String

    /// A currency with a well-formed id, or `nil`.
    public init?(rawValue: String) {
        guard Self.isWellFormed(rawValue) else { return nil }
        self.rawValue = rawValue
    }

    private init(checked rawValue: String) { self.rawValue = rawValue }

    /// Whether `id` can name a currency.
    public static func isWellFormed(_ id: String) -> Bool {
        let bytes = Array(id.utf8)
        guard let first = bytes.first, (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(first),
            bytes.count <= maximumLength
        else { return false }
        return bytes.allSatisfy {
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0)
                || $0 == UInt8(ascii: "_")
        }
    }

    /// A currency decoded from its id, refusing a malformed one.
    public init(from decoder: any Decoder) throws {
        let id = try decoder.singleValueContainer().decode(String.self)
        guard let currency = Currency(rawValue: id) else {
            throw DecodingError.dataCorrupted(
                DecodingError.Context(codingPath: decoder.codingPath, debugDescription: Self.rule(id)))
        }
        self = currency
    }

    /// Encodes the id.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }

    /// Orders by id.
    public static func < (lhs: Currency, rhs: Currency) -> Bool { lhs.rawValue < rhs.rawValue }

    /// The id.
    public var description: String { rawValue }

    /// What a well-formed id is, said of `id`.
    static func rule(_ id: String) -> String {
        "\"\(id.prefix(40))\" is not a currency id (1 to \(maximumLength) lowercase letters, digits or _, starting "
            + "with a letter)"
    }
}

/// A currency as the catalog lists it: its id and the name support and the app show.
public struct CurrencyDefinition: Sendable, Hashable, Codable {
    /// The id.
    public var id: Currency
    /// The display name, e.g. "Gems".
    public var name: String

    /// Creates a definition.
    public init(id: Currency, name: String) {
        self.id = id
        self.name = name
    }
}
