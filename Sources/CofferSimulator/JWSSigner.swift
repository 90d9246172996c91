import CofferAppStore
import Crypto
import Foundation
import SwiftASN1
import X509

/// Signs payloads as Apple does: a compact JWS with header `{"alg": "ES256", "x5c": [...]}`, the x5c
/// holding the standard-base64 DER chain leaf first, and a raw 64-byte ES256 signature.
public struct JWSSigner: Sendable {
    private let key: P256.Signing.PrivateKey
    private let x5c: [String]
    /// Apple's header for this chain, encoded once: every signature shares it.
    private let encodedHeader: String

    /// Creates a signer.
    ///
    /// - Parameters:
    ///   - key: The leaf's private key.
    ///   - chain: The certificates to present in x5c, leaf first.
    public init(key: P256.Signing.PrivateKey, chain: [Certificate]) throws {
        self.key = key
        let x5c = try chain.map { try $0.derBytes().base64EncodedString() }
        self.x5c = x5c
        // Slashes unescaped, as Apple writes its headers.
        encodedHeader = Self.base64URL(
            try JSONSerialization.data(
                withJSONObject: ["alg": "ES256", "x5c": x5c], options: [.sortedKeys, .withoutEscapingSlashes]))
    }

    /// Signs a model, encoded the way Apple writes it (dates in milliseconds).
    public func sign(_ payload: some Encodable) throws -> String {
        try sign(payloadJSON: AppleJSON.encode(payload))
    }

    /// Signs raw payload bytes, optionally with a different header (for tests of refusals).
    ///
    /// - Parameters:
    ///   - payloadJSON: The payload bytes.
    ///   - header: The header object; Apple's `{"alg": "ES256", "x5c": ...}` when `nil`.
    public func sign(payloadJSON: Data, header: [String: any Sendable]? = nil) throws -> String {
        let encoded =
            try header.map {
                Self.base64URL(try JSONSerialization.data(withJSONObject: $0, options: [.sortedKeys]))
            } ?? encodedHeader
        let signingInput = encoded + "." + Self.base64URL(payloadJSON)
        let signature = try key.signature(for: Data(signingInput.utf8))
        return signingInput + "." + Self.base64URL(signature.rawRepresentation)
    }

    /// The chain this signer presents, as x5c strings.
    public var certificateChain: [String] { x5c }

    /// base64url without padding.
    public static func base64URL(_ data: Data) -> String { Base64URL.encode(data) }
}
