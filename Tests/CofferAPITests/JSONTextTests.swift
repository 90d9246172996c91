import CofferAPI
import Foundation
import PropertyBased
import Testing

@Suite("JSON text")
struct JSONTextTests {
    @Test("a transaction answer written by hand is the bytes JSONEncoder writes, for any strings and numbers")
    func sameAsJSONEncoder() async {
        let characters = Array("aZ09\"\\/\u{08}\u{0C}\n\r\t\u{00}\u{1F}\u{7F} é€😀-_.".unicodeScalars).map(
            Character.init)
        let text = Gen.int(in: 0...(characters.count - 1)).array(of: 0...12).map { codes in
            String(codes.map { characters[$0] })
        }
        let number = Gen.int(in: Int(Int32.min)...Int(Int32.max)).map { Int64($0) * 4_294_967_291 }
        await propertyCheck(count: 300, input: text, text.array(of: 0...3), number, number, Gen.bool) {
            id, entitlements, credits, balance, delivered in
            let answer = TransactionResponse(
                outcome: delivered ? .delivered : .revoked, transactionId: id, credits: credits, balance: balance,
                entitlements: entitlements)
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            #expect(answer.jsonText() == (try? encoder.encode(answer)), "\(answer)")
        }
    }
}
