import CofferCore
import Foundation

/// Any JSON value, kept exactly as Apple sent it: for nested blocks Coffer does not interpret
/// (Advanced Commerce and commitment details).
public enum JSONValue: Codable, Sendable, Hashable {
    /// A string.
    case string(String)
    /// A number.
    case number(Double)
    /// `true` or `false`.
    case bool(Bool)
    /// An object.
    case object([String: JSONValue])
    /// An array.
    case array([JSONValue])
    /// `null`.
    case null

    /// Decodes whichever JSON value is there.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    /// Encodes the value as it was.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .string(let value): try container.encode(value)
        case .number(let value): try container.encode(value)
        case .bool(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .null: try container.encodeNil()
        }
    }
}

/// A payload Apple signs: it names the date an offline check takes as "now".
public protocol SignedPayload: StrictJSONReadable, Sendable {
    /// The effective date of an offline check: `signedDate`, or `receiptCreationDate` for app transactions.
    var effectiveDate: Date? { get }
    /// The environment the data says it comes from (`environment`, an app transaction's `receiptType`, a
    /// notification's data's).
    var dataEnvironment: String? { get }
}

extension JWSTransactionDecodedPayload: SignedPayload {
    /// `signedDate`.
    public var effectiveDate: Date? { signedDate }
    /// `environment`.
    public var dataEnvironment: String? { rawEnvironment }
}

extension JWSRenewalInfoDecodedPayload: SignedPayload {
    /// `signedDate`.
    public var effectiveDate: Date? { signedDate }
    /// `environment`.
    public var dataEnvironment: String? { rawEnvironment }
}

extension ResponseBodyV2DecodedPayload: SignedPayload {
    /// `signedDate`.
    public var effectiveDate: Date? { signedDate }
    /// The environment of its data, summary or app data.
    public var dataEnvironment: String? { data?.rawEnvironment ?? summary?.rawEnvironment ?? appData?.rawEnvironment }
}

extension AppTransaction: SignedPayload {
    /// `receiptCreationDate`.
    public var effectiveDate: Date? { receiptCreationDate }
    /// `receiptType`.
    public var dataEnvironment: String? { rawReceiptType }
}

/// Decoding of Apple's JSON: dates are milliseconds since 1970 and repeated keys are refused.
public enum AppleJSON {
    /// Decodes Apple's JSON strictly.
    ///
    /// - Parameters:
    ///   - type: The model.
    ///   - data: The JSON bytes.
    public static func decode<T: Decodable>(_ type: T.Type, from data: Data) throws -> T {
        try decoder.decode(type, from: data)
    }

    /// Decodes Apple's JSON strictly into a model that reads itself (Apple's models, generated so).
    ///
    /// - Parameters:
    ///   - type: The model.
    ///   - data: The JSON bytes.
    public static func decode<T: StrictJSONReadable>(_ type: T.Type, from data: Data) throws -> T {
        try decoder.read(type, from: data)
    }

    /// Apple's JSON: strict, dates in milliseconds since 1970 within ``dates``.
    private static let decoder = StrictJSONDecoder(dateDecoding: .millisecondsSince1970(dates))

    /// The dates accepted from Apple, in milliseconds: year 0 (Xcode writes 0000-12-30 for some original
    /// purchase dates) to the end of 9999. Anything else is refused when decoded, so no later conversion of a
    /// date to whole milliseconds can overflow.
    public static let dates: ClosedRange<Double> = -62_167_219_200_000...253_402_300_799_999

    /// Encodes a model the way Apple writes it (dates as whole milliseconds since 1970).
    public static func encode(_ value: some Encodable, pretty: Bool = false) throws -> Data {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(Milliseconds.from(date))
        }
        encoder.outputFormatting = pretty ? [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes] : [.sortedKeys]
        return try encoder.encode(value)
    }
}
