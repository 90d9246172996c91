import Crypto
import Foundation
import SwiftASN1
import X509

/// The certificate Xcode's StoreKit testing signs with: a `.storekit` file's purchases, renewal info and app
/// transaction carry it as the only certificate of their JWS's `x5c` (kid `Apple_Xcode_Key`), self-signed, and
/// the environment `Xcode`. A Sandbox server configured with it (`xcode.certificate`) accepts exactly that data:
/// the `x5c` must be this one certificate, byte for byte, the certificate valid at the data's `signedDate` (as for
/// Apple's data checked offline), and the ES256 signature must verify with its key. Nothing else it signs, and
/// nothing signed by another key, is trusted.
public struct XcodeCertificate: Sendable, Equatable {
    /// The certificate, DER.
    public let der: Data
    /// Its SHA-256 fingerprint, hex, for the start line and the docs.
    public let fingerprint: String
    private let publicKey: P256.Signing.PublicKey
    private let notBefore: Date
    private let notAfter: Date

    /// Reads the certificate from PEM (`-----BEGIN CERTIFICATE-----`) or DER, as saved from Xcode or copied out of a
    /// JWS's `x5c`.
    ///
    /// - Throws: ``VerificationError/invalidCertificate(_:)`` for anything but one P-256 certificate.
    public init(pemOrDER data: Data) throws(VerificationError) {
        var der = data
        if let text = String(data: data, encoding: .utf8), text.contains("-----BEGIN CERTIFICATE-----") {
            do {
                der = Data(try PEMDocument(pemString: text).derBytes)
            } catch {
                throw .invalidCertificate("the Xcode certificate's PEM does not read: \(error)")
            }
        }
        let certificate: Certificate
        do {
            certificate = try Certificate(derEncoded: [UInt8](der))
        } catch {
            throw .invalidCertificate("the Xcode certificate does not parse: \(error)")
        }
        guard let key = P256.Signing.PublicKey(certificate.publicKey) else {
            throw .invalidCertificate("the Xcode certificate's key is not P-256")
        }
        self.der = der
        publicKey = key
        notBefore = certificate.notValidBefore
        notAfter = certificate.notValidAfter
        fingerprint = SHA256.hash(data: der).map { String(format: "%02x", $0) }.joined()
    }

    /// Reads the certificate file at `path`.
    ///
    /// - Throws: ``VerificationError/invalidCertificate(_:)`` when the file cannot be read or is not one P-256
    ///   certificate.
    public init(path: String) throws(VerificationError) {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw .invalidCertificate("cannot read the Xcode certificate \(path): \(error.localizedDescription)")
        }
        try self.init(pemOrDER: data)
    }

    /// The certificate an Xcode-signed JWS carries (its only `x5c` entry), to save for `xcode.certificate`: nothing is
    /// trusted by reading it, and a JWS with a chain of several certificates (Apple's) has none to give.
    ///
    /// - Throws: ``VerificationError/verificationFailure(_:)`` or ``VerificationError/invalidCertificate(_:)``.
    public static func carried(in signed: String) throws(VerificationError) -> XcodeCertificate {
        let header = try JWS(compact: signed).header()
        guard let chain = header.x5c, chain.count == 1 else {
            throw .invalidCertificate(
                "the JWS carries \(header.x5c?.count ?? 0) certificates; Xcode's StoreKit testing signs with one")
        }
        return try XcodeCertificate(pemOrDER: try Base64.decode(standard: chain[0], what: "x5c certificate 0"))
    }

    /// The certificate as PEM.
    public var pem: String {
        let lines = der.base64EncodedString().chunked(64)
        return "-----BEGIN CERTIFICATE-----\n" + lines.joined(separator: "\n") + "\n-----END CERTIFICATE-----\n"
    }

    /// Whether the JWS names this certificate as its only `x5c` entry.
    func signs(_ header: JWS.Header) throws(VerificationError) -> Bool {
        guard let chain = header.x5c, chain.count == 1 else { return false }
        return try Base64.decode(standard: chain[0], what: "x5c certificate 0") == der
    }

    /// Checks the certificate is valid at `date` and the signature verifies with its key.
    func verify(_ jws: JWS, at date: Date) throws(VerificationError) {
        guard date >= notBefore, date <= notAfter else {
            throw .invalidCertificate(
                "the Xcode certificate is valid from \(notBefore) to \(notAfter), not at the data's date \(date)")
        }
        guard jws.signature.count == 64,
            let signature = try? P256.Signing.ECDSASignature(rawRepresentation: jws.signature),
            publicKey.isValidSignature(signature, for: jws.signingInputDigest)
        else { throw .verificationFailure("the ES256 signature does not verify with the Xcode certificate") }
    }

    /// The same certificate, byte for byte.
    public static func == (lhs: XcodeCertificate, rhs: XcodeCertificate) -> Bool { lhs.der == rhs.der }
}

extension String {
    /// The string in pieces of `size` characters.
    fileprivate func chunked(_ size: Int) -> [String] {
        stride(from: 0, to: count, by: size).map {
            let start = index(startIndex, offsetBy: $0)
            return String(self[start..<(index(start, offsetBy: size, limitedBy: endIndex) ?? endIndex)])
        }
    }
}
