import CofferCore
import Foundation
import Testing

@Suite("Strict JSON")
struct StrictJSONTests {
    @Test(
        "well-formed documents pass",
        arguments: [
            #"{}"#, #"[]"#, #"{"a": [1, -2.5e10, true, false, null, "x\n\u00e9\ud83d\ude00"]}"#, #" "text" "#, "0",
            #"{"a": {"a": 1}}"#,
        ])
    func accepts(json: String) throws {
        try StrictJSON.validate(Data(json.utf8))
    }

    @Test(
        "malformed documents are refused",
        arguments: [
            #"{"#, #"{"a" 1}"#, #"{"a": 1,}"#, #"[1 2]"#, #"01"#, #"1."#, #"{"a": tru}"#, #""\x""#, "\"a\u{01}\"",
            #"{} {}"#, #"{'a': 1}"#, #""\ud800""#, "",
        ])
    func refuses(json: String) {
        #expect(throws: StrictJSONError.self) { try StrictJSON.validate(Data(json.utf8)) }
    }

    @Test("a repeated key is refused, even when spelled with an escape")
    func duplicateKeys() {
        #expect(throws: StrictJSONError.duplicateKey("a", offset: 9)) {
            try StrictJSON.validate(Data(#"{"a": 1, "a": 2}"#.utf8))
        }
        #expect(throws: StrictJSONError.self) { try StrictJSON.validate(Data(#"{"a": 1, "\u0061": 2}"#.utf8)) }
        #expect(throws: StrictJSONError.self) { try StrictJSON.validate(Data(#"[{"x": {"b": 1, "b": 1}}]"#.utf8)) }
    }

    @Test("invalid UTF-8 is refused in keys and in values, escaped or not")
    func invalidUTF8() {
        let documents: [[UInt8]] = [
            Array(#"{"a": ""#.utf8) + [0xC3, 0x28] + Array(#""}"#.utf8),
            Array(#"{""#.utf8) + [0xFF] + Array(#"": 1}"#.utf8),
            Array(#"["x\n"#.utf8) + [0xE2, 0x82] + Array(#""]"#.utf8),
        ]
        for bytes in documents {
            #expect(throws: StrictJSONError.self) { try StrictJSON.validate(Data(bytes)) }
        }
        #expect(throws: Never.self) { try StrictJSON.validate(Data(#"{"é": "€ €"}"#.utf8)) }
    }

    @Test("nesting and size are bounded")
    func limits() {
        let deep = String(repeating: "[", count: 65) + String(repeating: "]", count: 65)
        #expect(throws: StrictJSONError.tooDeep(limit: 64)) { try StrictJSON.validate(Data(deep.utf8)) }
        let fine = String(repeating: "[", count: 64) + String(repeating: "]", count: 64)
        #expect(throws: Never.self) { try StrictJSON.validate(Data(fine.utf8)) }
        #expect(throws: StrictJSONError.tooLarge(limit: 4)) {
            try StrictJSON.validate(Data("12345".utf8), maximumSize: 4)
        }
    }

    @Test("decode validates first, then decodes")
    func decode() throws {
        struct Body: Decodable, Equatable { var amount: Int }
        #expect(try StrictJSON.decode(Body.self, from: Data(#"{"amount": 5}"#.utf8)) == Body(amount: 5))
        #expect(throws: StrictJSONError.self) {
            try StrictJSON.decode(Body.self, from: Data(#"{"amount": 5, "amount": 9}"#.utf8))
        }
    }
}
