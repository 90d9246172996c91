import Foundation

/// A compact JWS split into its parts, with the header decoded. Nothing is trusted yet.
struct JWS: Sendable {
    struct Header: Decodable, Sendable {
        var alg: String?
        var x5c: [String]?
        var kid: String?
        var typ: String?
    }

    /// The largest JWS accepted: Apple's notifications with both nested JWS are about 10 KB.
    static let maximumLength = 64 * 1024

    let header: Header
    let payload: Data
    let signature: Data
    /// `BASE64URL(header) . BASE64URL(payload)`: the bytes the signature covers.
    let signingInput: Data

    /// Splits and decodes a compact JWS strictly: three base64url segments, a JSON header without repeated
    /// keys, and nothing else.
    init(compact text: String) throws(VerificationError) {
        guard text.utf8.count <= Self.maximumLength else {
            throw .verificationFailure("signed data is longer than \(Self.maximumLength) bytes")
        }
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else {
            throw .verificationFailure("a JWS has 3 parts separated by '.', found \(parts.count)")
        }
        let headerBytes = try Base64.decode(url: parts[0], what: "JWS header")
        payload = try Base64.decode(url: parts[1], what: "JWS payload")
        signature = try Base64.decode(url: parts[2], what: "JWS signature")
        do {
            header = try AppleJSON.decode(Header.self, from: headerBytes)
        } catch {
            throw .verificationFailure("JWS header is not valid JSON: \(error)")
        }
        signingInput = Data(text.utf8.prefix(parts[0].utf8.count + 1 + parts[1].utf8.count))
    }
}

/// Strict base64: standard alphabet with padding for certificates, base64url without padding for JWS
/// segments. Whitespace, the other alphabet and bad padding are refused with a clear error.
enum Base64 {
    static func decode(url segment: Substring, what: String) throws(VerificationError) -> Data {
        guard !segment.isEmpty else { throw .verificationFailure("\(what) is empty") }
        var standard = ""
        standard.reserveCapacity(segment.utf8.count + 3)
        for scalar in segment.unicodeScalars {
            switch scalar {
            case "A"..."Z", "a"..."z", "0"..."9": standard.unicodeScalars.append(scalar)
            case "-": standard.append("+")
            case "_": standard.append("/")
            default: throw .verificationFailure("\(what) is not base64url (found '\(scalar.escaped(asASCII: true))')")
            }
        }
        if standard.utf8.count % 4 == 1 { throw .verificationFailure("\(what) has an impossible base64url length") }
        standard += String(repeating: "=", count: (4 - standard.utf8.count % 4) % 4)
        guard let data = Data(base64Encoded: standard) else { throw .verificationFailure("\(what) is not base64url") }
        return data
    }

    static func decode(standard text: String, what: String) throws(VerificationError) -> Data {
        guard text.utf8.count % 4 == 0,
            text.unicodeScalars.allSatisfy({
                ("A"..."Z").contains($0) || ("a"..."z").contains($0) || ("0"..."9").contains($0) || $0 == "+"
                    || $0 == "/"
                    || $0 == "="
            }),
            let data = Data(base64Encoded: text)
        else { throw .verificationFailure("\(what) is not standard base64") }
        return data
    }
}
