import Crypto
import Foundation

/// An ES256 JWT in compact form, as Apple's services take them: the App Store Server API's bearer token, APNs'
/// provider token, and the signatures StoreKit takes for offers. One way to make them, so each caller names
/// only its claims.
public enum CompactJWT {
    /// Signs `claims` under `header` (with `alg` ES256 added) with `key`: the base64url header, payload and raw
    /// 64-byte signature joined by dots. Keys are written sorted, so equal claims give equal signing input.
    ///
    /// - Parameters:
    ///   - header: The header's fields besides `alg` (`kid`, `typ`).
    ///   - claims: The payload's claims: strings, numbers and booleans.
    ///   - key: The P-256 private key.
    /// - Throws: An error of Foundation's encoder or of the signer (neither happens for such values).
    public static func sign(header: [String: String], claims: [String: any Sendable], key: P256.Signing.PrivateKey)
        throws -> String
    {
        var fields = header
        fields["alg"] = "ES256"
        let input =
            Base64URL.encode(try JSONSerialization.data(withJSONObject: fields, options: [.sortedKeys])) + "."
            + Base64URL.encode(try JSONSerialization.data(withJSONObject: claims, options: [.sortedKeys]))
        let signature = try key.signature(for: Data(input.utf8))
        return input + "." + Base64URL.encode(signature.rawRepresentation)
    }
}
