import CofferCore
import Crypto
import Foundation

/// Apple's root certificates, bundled with Coffer and checked against their published SHA-256
/// fingerprints when loaded.
public enum AppleRoots {
    /// SHA-256 of Apple Root CA - G3 (P-384): the root of every StoreKit 2 JWS and notification.
    public static let rootCAG3Fingerprint = "63343abfb89a6a03ebb57e9b3f5fa7be7c4f5c756f3017b3a8c488c3653e9179"
    /// SHA-256 of Apple Root CA (RSA): the root of legacy PKCS#7 app receipts.
    public static let rootCAFingerprint = "b0b1730ecbc7ff4505142c49f1295e6eda6bcaed7e2c68c5be91b5a11001f024"

    /// Apple Root CA - G3, DER.
    public static func rootCAG3() throws(VerificationError) -> Data {
        try load("AppleRootCA-G3", extension: "der", fingerprint: rootCAG3Fingerprint)
    }

    /// Apple Root CA (RSA), DER.
    public static func rootCA() throws(VerificationError) -> Data {
        try load("AppleIncRootCertificate", extension: "cer", fingerprint: rootCAFingerprint)
    }

    /// The organizational unit the App Store simulator writes into its certificates' subjects. Roots that
    /// carry it are refused in Production.
    public static let simulatorMarker = "Coffer App Store Simulator - not for Production"

    /// The lowercase hex SHA-256 of some bytes.
    public static func fingerprint(_ data: Data) -> String {
        Hex.encode(SHA256.hash(data: data))
    }

    private static func load(_ name: String, extension ext: String, fingerprint expected: String)
        throws(VerificationError)
        -> Data
    {
        guard let url = Bundle.module.url(forResource: name, withExtension: ext, subdirectory: "Roots"),
            let data = try? Data(contentsOf: url)
        else { throw .invalidCertificate("the bundled root \(name).\(ext) is missing") }
        guard fingerprint(data) == expected else {
            throw .invalidCertificate("the bundled root \(name).\(ext) does not match its published fingerprint")
        }
        return data
    }
}
