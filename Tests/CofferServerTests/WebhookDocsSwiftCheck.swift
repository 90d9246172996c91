// docs/webhooks.md's Swift check, verbatim: WebhookDocsTests compares the two and runs this one.
import Crypto
import Foundation

func verifyCofferSignature(header: String, body: Data, secret: String, now: Date = Date()) -> Bool {
    var timestamp: Int?
    var signatures: [String] = []
    for part in header.split(separator: ",") {
        let pair = part.split(separator: "=", maxSplits: 1).map(String.init)
        guard pair.count == 2 else { continue }
        if pair[0] == "t" { timestamp = Int(pair[1]) }
        if pair[0] == "v1" { signatures.append(pair[1]) }
    }
    guard let timestamp, abs(now.timeIntervalSince1970 - Double(timestamp)) <= 300 else { return false }
    let key = SymmetricKey(data: Data(secret.utf8))
    let signed = Data("\(timestamp).".utf8) + body
    return signatures.contains { hex in
        guard let mac = Data(hexString: hex) else { return false }
        return HMAC<SHA256>.isValidAuthenticationCode(mac, authenticating: signed, using: key)
    }
}

extension Data {
    init?(hexString: String) {
        guard hexString.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        var index = hexString.startIndex
        while index < hexString.endIndex {
            let next = hexString.index(index, offsetBy: 2)
            guard let byte = UInt8(hexString[index..<next], radix: 16) else { return nil }
            bytes.append(byte)
            index = next
        }
        self.init(bytes)
    }
}
