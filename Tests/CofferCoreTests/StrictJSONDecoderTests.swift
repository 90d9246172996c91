import CofferCore
import CofferTestSupport
import Foundation
import PropertyBased
import Testing

/// ``StrictJSONDecoder`` answers as `JSONDecoder` does, checked side by side on the same bytes.
@Suite("Strict JSON decoder")
struct StrictJSONDecoderTests {
    /// Every kind of member a wire type or one of Apple's models has.
    struct Everything: Codable, Equatable {
        var text: String
        var flag: Bool
        var int: Int
        var int8: Int8?
        var int32: Int32?
        var int64: Int64?
        var uint8: UInt8?
        var uint64: UInt64?
        var double: Double?
        var float: Float?
        var optionalText: String?
        var list: [String]?
        var numbers: [Int64?]?
        var nested: Nested?
        var map: [String: Int]?
        var uuid: UUID?
        var kind: Kind?
        var date: Date?
        var data: Data?

        struct Nested: Codable, Equatable {
            var name: String
            var deeper: [Nested]?
        }

        enum Kind: String, Codable { case consumable, subscription }
    }

    /// What a decoder answered: the value, or the kind of error (the messages differ by design).
    enum Answer: Equatable {
        case value(Everything)
        case keyNotFound(String)
        case typeMismatch
        case valueNotFound
        case dataCorrupted
        case malformed

        init(_ body: () throws -> Everything) {
            do {
                self = .value(try body())
            } catch DecodingError.keyNotFound(let key, _) {
                self = .keyNotFound(key.stringValue)
            } catch DecodingError.typeMismatch {
                self = .typeMismatch
            } catch DecodingError.valueNotFound {
                self = .valueNotFound
            } catch DecodingError.dataCorrupted {
                self = .dataCorrupted
            } catch {
                self = .malformed
            }
        }
    }

    static func both(_ json: String) -> (strict: Answer, foundation: Answer) {
        let data = Data(json.utf8)
        return (
            Answer { try StrictJSONDecoder().decode(Everything.self, from: data) },
            Answer { try JSONDecoder().decode(Everything.self, from: data) }
        )
    }

    @Test(
        "answers as JSONDecoder does",
        arguments: [
            #"{"text": "a", "flag": true, "int": 1}"#,
            #"{"text": "caf\u00e9 \ud83d\ude00 \"q\" \\ \/ \n", "flag": false, "int": -9223372036854775808}"#,
            #"{"text": "", "flag": true, "int": 9223372036854775807, "int8": -128, "int32": 2147483647}"#,
            #"{"text": "x", "flag": true, "int": 9223372036854775808}"#,
            #"{"text": "x", "flag": true, "int": 1, "int8": 128}"#,
            #"{"text": "x", "flag": true, "int": 1, "uint8": -1}"#,
            #"{"text": "x", "flag": true, "int": 1, "uint64": 18446744073709551615}"#,
            #"{"text": "x", "flag": true, "int": 1.0}"#,
            #"{"text": "x", "flag": true, "int": 1.5}"#,
            #"{"text": "x", "flag": true, "int": 1e3}"#,
            #"{"text": "x", "flag": true, "int": 1e400}"#,
            #"{"text": "x", "flag": true, "int": 1, "double": 1e400}"#,
            #"{"text": "x", "flag": true, "int": 1, "double": -0.0, "float": 3.25}"#,
            #"{"text": "x", "flag": true, "int": 1, "float": 1e39}"#,
            #"{"text": "x", "flag": "true", "int": 1}"#,
            #"{"text": 1, "flag": true, "int": 1}"#,
            #"{"text": null, "flag": true, "int": 1}"#,
            #"{"flag": true, "int": 1}"#,
            #"{"text": "x", "flag": true, "int": 1, "optionalText": null, "list": ["a", "b"], "numbers": [1, null, -3]}"#,
            #"{"text": "x", "flag": true, "int": 1, "list": ["a", 2]}"#,
            #"{"text": "x", "flag": true, "int": 1, "list": {}}"#,
            #"{"text": "x", "flag": true, "int": 1, "nested": {"name": "n", "deeper": [{"name": "m"}]}}"#,
            #"{"text": "x", "flag": true, "int": 1, "nested": {"deeper": []}}"#,
            #"{"text": "x", "flag": true, "int": 1, "map": {"a": 1, "b\u0041": 2}, "unknown": [1, {"z": null}]}"#,
            #"{"text": "x", "flag": true, "int": 1, "uuid": "E621E1F8-C36C-495A-93FC-0C247A3E6E5F"}"#,
            #"{"text": "x", "flag": true, "int": 1, "uuid": "not a uuid"}"#,
            #"{"text": "x", "flag": true, "int": 1, "kind": "consumable"}"#,
            #"{"text": "x", "flag": true, "int": 1, "kind": "hologram"}"#,
            #"{"text": "x", "flag": true, "int": 1, "date": 12.5}"#,
            #"{"text": "x", "flag": true, "int": 1, "double": 3e-347}"#,
            #"{"text": "x", "flag": true, "int": 1, "double": -2e-324}"#,
            #"{"text": "x", "flag": true, "int": 1, "double": 4.9e-324}"#,
            #"{"text": "x", "flag": true, "int": 1, "double": 0.000e-999}"#,
            #"{"text": "x", "flag": true, "int": 1, "double": 2e308}"#,
            #"{"text": "x", "flag": true, "int": 1, "float": -1e-46}"#,
            #"{"text": "x", "flag": true, "int": 1, "float": 1e-45}"#,
            #"{"text": "x", "flag": true, "int": 1, "data": "AQID"}"#,
            #"{"text": "x", "flag": true, "int": 1, "data": "not base64!"}"#,
            #"{"text": "x", "flag": true, "\u0069nt": 7}"#,
            #"[]"#,
            #""text""#,
        ])
    func sameAnswers(json: String) {
        let (strict, foundation) = Self.both(json)
        #expect(strict == foundation, "\(json)")
    }

    @Test(
        "what JSONDecoder would take but is not strict JSON is refused",
        arguments: [
            #"{"text": "x", "flag": true, "int": 1, "int": 2}"#,
            #"{"text": "x", "flag": true, "int": 1, "\u0069nt": 2}"#,
            #"{"text": "x", "flag": true, "int": 1} trailing"#,
        ])
    func strictness(json: String) {
        #expect(throws: StrictJSONError.self) { try StrictJSONDecoder().decode(Everything.self, from: Data(json.utf8)) }
    }

    @Test("Apple's dates are milliseconds since 1970, inside the range")
    func appleDates() throws {
        struct Signed: Decodable { var signedDate: Date }
        let decoder = StrictJSONDecoder(dateDecoding: .millisecondsSince1970(0...1e13))
        let signed = try decoder.decode(Signed.self, from: Data(#"{"signedDate": 1700000000123}"#.utf8))
        #expect(signed.signedDate == Date(timeIntervalSince1970: 1_700_000_000.123))
        #expect(throws: DecodingError.self) {
            try decoder.decode(Signed.self, from: Data(#"{"signedDate": 1e14}"#.utf8))
        }
        #expect(throws: DecodingError.self) {
            try decoder.decode(Signed.self, from: Data(#"{"signedDate": "1"}"#.utf8))
        }
    }

    @Test(
        "an object with many keys is checked for repeats without quadratic work, the repeat found wherever it is",
        .tags(.timing))
    func manyKeys() throws {
        let members = (0..<20_000).map { #""k\#($0)": \#($0)"# }
        let document = "{" + members.joined(separator: ", ") + "}"
        let started = ContinuousClock.now
        let map = try StrictJSONDecoder().decode([String: Int].self, from: Data(document.utf8))
        #expect(map.count == 20_000 && map["k19999"] == 19_999)
        // Quadratic comparison of 20,000 keys would take seconds; linear work takes milliseconds.
        #expect(ContinuousClock.now - started < .seconds(5))
        let repeated = "{" + (members + [#""k17": 0"#]).joined(separator: ", ") + "}"
        #expect(throws: StrictJSONError.self) {
            try StrictJSONDecoder().decode([String: Int].self, from: Data(repeated.utf8))
        }
    }

    @Test("random documents: the same answer as JSONDecoder, value or kind of error")
    func randomDocuments() async {
        let member = Gen.int(in: 0...19)
        await propertyCheck(count: 600, input: member.array(of: 0...12), Gen.int(in: Int(Int32.min)...Int(Int32.max))) {
            codes, seed in
            var fields: [String] = []
            for (position, code) in codes.enumerated() {
                let value = Self.randomValue(code, seed: seed &+ position)
                fields.append(value)
            }
            let json = "{" + fields.joined(separator: ", ") + "}"
            let (strict, foundation) = Self.both(json)
            // JSONDecoder keeps the first of repeated keys; the strict decoder refuses the document.
            if strict == .malformed, Set(codes.map { $0 % 20 }).count < codes.count { return }
            #expect(strict == foundation, "\(json)")
        }
    }

    /// A member of ``Everything`` (or an unknown one) with a value of the right type or, sometimes, not.
    static func randomValue(_ code: Int, seed: Int) -> String {
        let number = seed % 1000
        switch code {
        case 0: return #""text": "t\#(number)\u00e9""#
        case 1: return #""flag": \#(number % 2 == 0)"#
        case 2: return #""int": \#(seed)"#
        case 3: return #""int8": \#(number - 300)"#
        case 4: return #""int32": \#(Int64(seed) * 3)"#
        case 5: return #""int64": \#(seed).0"#
        case 6: return #""uint8": \#(number % 300)"#
        case 7: return #""uint64": \#(seed)"#
        case 8: return #""double": \#(seed)e\#(number % 700 - 350)"#
        case 9: return #""float": \#(number).25e\#(number % 80 - 40)"#
        case 10: return #""optionalText": \#(number % 3 == 0 ? "null" : #""o""#)"#
        case 11: return #""list": ["a", \#(number % 4 == 0 ? "1" : #""b""#)]"#
        case 12: return #""numbers": [\#(seed), null, \#(number)]"#
        case 13: return #""nested": {"name": "n", "deeper": [\#(number % 5 == 0 ? "{}" : #"{"name": "m"}"#)]}"#
        case 14: return #""map": {"a": \#(seed), "b": \#(number % 6 == 0 ? #""x""# : "2")}"#
        case 15: return #""uuid": "\#(number % 7 == 0 ? "nope" : "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")""#
        case 16: return #""kind": "\#(number % 2 == 0 ? "consumable" : "other")""#
        case 17: return #""date": \#(seed)"#
        case 18: return #""data": "\#(number % 9 == 0 ? "!" : "AQID")""#
        default: return #""unknown\#(seed)": {"z": [\#(seed), true, null]}"#
        }
    }
}
