import CofferCore
import Foundation
import Testing

@Suite("Hex")
struct HexTests {
    @Test("bytes become two lowercase hex digits each, as String(format:) would write them")
    func encode() {
        #expect(Hex.encode([]) == "")
        #expect(Hex.encode([0, 1, 15, 16, 171, 255]) == "00010f10abff")
        let bytes = (0...255).map { UInt8($0) }
        #expect(Hex.encode(bytes) == bytes.map { String(format: "%02x", $0) }.joined())
    }
}
