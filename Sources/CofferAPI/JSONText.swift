import Foundation

/// A wire type that writes its own JSON: the bytes `JSONEncoder` with `.sortedKeys` writes for it, without
/// the encoder's machinery (for the answers the server writes thousands of times a second).
public protocol JSONTextEncodable: Encodable {
    /// The JSON, as `JSONEncoder` with `.sortedKeys` writes it.
    func jsonText() -> Data
}

/// Writes JSON text as `JSONEncoder` does: strings escaped the same way (`"`, `\`, `/` and control characters),
/// numbers in decimal.
public struct JSONText {
    /// The text so far.
    public private(set) var bytes: [UInt8] = []

    /// An empty text.
    public init(capacity: Int = 256) { bytes.reserveCapacity(capacity) }

    /// Appends raw JSON punctuation or a literal.
    public mutating func raw(_ text: StaticString) {
        text.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    /// Appends an integer.
    public mutating func number(_ value: Int64) {
        bytes.append(contentsOf: String(value).utf8)
    }

    /// Appends a string, quoted and escaped.
    public mutating func string(_ value: String) {
        bytes.append(UInt8(ascii: "\""))
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "\""): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
            case UInt8(ascii: "\\"): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
            case UInt8(ascii: "/"): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "/")])
            case 0x08: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "b")])
            case 0x0C: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "f")])
            case 0x0A: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
            case 0x0D: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
            case 0x09: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
            case 0..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                bytes.append(contentsOf: Array("\\u00".utf8) + [hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]])
            default: bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }

    /// Appends an array of strings.
    public mutating func strings(_ values: [String]) {
        raw("[")
        for (index, value) in values.enumerated() {
            if index > 0 { raw(",") }
            string(value)
        }
        raw("]")
    }
}

extension TransactionResponse: JSONTextEncodable {
    /// `{"balance":…,"credits":…,"entitlements":[…],"outcome":"…","transactionId":"…"}`.
    public func jsonText() -> Data {
        var text = JSONText()
        text.raw("{\"balance\":")
        text.number(balance)
        text.raw(",\"credits\":")
        text.number(credits)
        text.raw(",\"entitlements\":")
        text.strings(entitlements)
        text.raw(",\"outcome\":")
        text.string(outcome.rawValue)
        text.raw(",\"transactionId\":")
        text.string(transactionId)
        text.raw("}")
        return Data(text.bytes)
    }
}
