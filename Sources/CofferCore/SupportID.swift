/// A user's Support ID: `_` followed by 12 lowercase hex digits, shown in the app and typed into the panel.
public struct SupportID: Sendable, Hashable, Codable, CustomStringConvertible, Comparable {
    /// The ID as shown, e.g. `_abc123def456`.
    public let rawValue: String

    /// Parses a Support ID, accepting upper-case hex and surrounding whitespace.
    ///
    /// - Parameter text: The ID as typed.
    public init?(_ text: String) {
        let trimmed = text.trimmingWhitespace().lowercased()
        guard trimmed.count == 13, trimmed.first == "_",
            trimmed.dropFirst().allSatisfy({ $0.isHexDigit && $0.isASCII })
        else { return nil }
        rawValue = trimmed
    }

    /// Makes a new random Support ID.
    ///
    /// - Parameter generator: The source of randomness (a system generator in production, seeded in tests).
    public static func random(using generator: inout some RandomNumberGenerator) -> SupportID {
        let hex = (0..<12).map { _ in String(Int.random(in: 0..<16, using: &generator), radix: 16) }.joined()
        return SupportID(rawValue: "_" + hex)
    }

    private init(rawValue: String) { self.rawValue = rawValue }

    /// A one-line, human-readable explanation.
    public var description: String { rawValue }

    /// Orders by the textual form.
    public static func < (lhs: SupportID, rhs: SupportID) -> Bool { lhs.rawValue < rhs.rawValue }

    /// Decodes a Support ID from its string form, refusing anything that is not one.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        guard let id = SupportID(text) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "not a Support ID: \(text)")
        }
        self = id
    }

    /// Encodes the Support ID as its string form.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}

extension String {
    func trimmingWhitespace() -> String {
        var slice = Substring(self)
        while slice.first?.isWhitespace == true { slice.removeFirst() }
        while slice.last?.isWhitespace == true { slice.removeLast() }
        return String(slice)
    }
}
