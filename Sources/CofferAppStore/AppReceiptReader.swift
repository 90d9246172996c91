import Foundation
import SwiftASN1
import X509

/// Reads a legacy app receipt locally: parses the PKCS#7 container, verifies the RSA signature with the
/// signing certificate, and checks that certificate by Apple's receipt policy at the receipt's creation
/// date: the signer is the leaf; the chain is exactly leaf -> intermediate -> trusted root; the intermediate
/// carries OID 1.2.840.113635.100.6.2.1 (Apple's WWDR) and the leaf 1.2.840.113635.100.6.11.1 (receipt
/// signing). Any other certificate under Apple Root CA (a developer's push or Pass Type ID certificate, whose
/// private key its developer holds) is refused. Xcode's StoreKit test certificate is accepted only as the
/// direct signer, and only by a reader given it as `xcodeCertificates`.
///
/// ```swift
/// let reader = try AppReceiptReader(trustedRoots: [AppleRoots.rootCA()])
/// let receipt = try await reader.read(base64: text)
/// ```
public struct AppReceiptReader: Sendable {
    private let roots: CertificateStore
    private let xcode: [Certificate]
    private let now: @Sendable () -> Date

    /// Creates a reader.
    ///
    /// - Parameters:
    ///   - trustedRoots: DER roots: ``AppleRoots/rootCA()``, plus test roots (the simulator's).
    ///   - xcodeCertificates: Xcode's StoreKit test certificate (DER) to accept Xcode's local receipts; empty
    ///     (the default) wherever Xcode receipts are not allowed.
    ///   - now: The clock, for receipts without a creation date.
    public init(trustedRoots: [Data], xcodeCertificates: [Data] = [], now: @escaping @Sendable () -> Date = Date.init)
        throws(ReceiptError)
    {
        roots = CertificateStore(try Self.parse(trustedRoots, what: "a trusted root"))
        xcode = try Self.parse(xcodeCertificates, what: "the Xcode certificate")
        self.now = now
    }

    private static func parse(_ ders: [Data], what: String) throws(ReceiptError) -> [Certificate] {
        var certificates: [Certificate] = []
        for der in ders {
            guard let certificate = try? Certificate(derEncoded: [UInt8](der)) else {
                throw .malformed("\(what) cannot be parsed")
            }
            certificates.append(certificate)
        }
        return certificates
    }

    /// The largest receipt accepted (Apple's receipts with hundreds of purchases are about 100 KB).
    public static let maximumSize = 4 * 1024 * 1024

    /// Reads a base64 receipt (line breaks allowed, as receipts are often wrapped).
    public func read(base64 text: String) async throws(ReceiptError) -> AppReceipt {
        let compact = text.filter { !$0.isWhitespace }
        guard compact.utf8.count <= Self.maximumSize, let data = Data(base64Encoded: compact) else {
            throw .malformed("not base64")
        }
        return try await read(der: data)
    }

    /// Reads a DER/BER receipt.
    public func read(der data: Data) async throws(ReceiptError) -> AppReceipt {
        guard data.count <= Self.maximumSize else { throw .malformed("larger than \(Self.maximumSize) bytes") }
        let container: PKCS7SignedData
        do {
            container = try PKCS7SignedData(ber: [UInt8](data))
        } catch let error as ReceiptError {
            throw error
        } catch {
            throw .malformed("\(error)")
        }
        let receipt = try ReceiptPayload.decode(container.content)
        try await verify(container, at: receipt.creationDate ?? now())
        return receipt
    }

    private func verify(_ container: PKCS7SignedData, at date: Date) async throws(ReceiptError) {
        let signer = container.signer
        // The signer is named by issuer and serial number: both must match, so a certificate of another
        // issuer with the same serial cannot stand in for it.
        guard
            let certificate = container.certificates.first(where: { candidate in
                candidate.serialNumber.bytes == signer.serialNumber[...]
                    && (try? DistinguishedName(derEncoded: signer.issuer)) == candidate.issuer
            })
        else {
            throw .invalidSignature("the signing certificate is not in the receipt")
        }
        // Apple's receipts carry their three certificates; more only make the chain search work harder.
        guard container.certificates.count <= ChainVerifier.chainLength else {
            throw .untrusted("a receipt carries at most 3 certificates, this one \(container.certificates.count)")
        }
        let algorithm = try signer.signatureAlgorithm()
        let signedBytes: [UInt8]
        if let attributes = signer.signedAttributes {
            guard let digest = signer.messageDigest, digest == algorithm.digest(container.content) else {
                throw .invalidSignature("the signed message digest does not match the content")
            }
            signedBytes = attributes
        } else {
            signedBytes = container.content
        }
        guard
            certificate.publicKey.isValidSignature(
                signer.signature, for: signedBytes, signatureAlgorithm: algorithm.certificateAlgorithm)
        else { throw .invalidSignature("RSA signature check failed") }
        // Xcode signs local receipts with its StoreKit certificate itself: accepted only as the direct signer.
        if xcode.contains(certificate) {
            guard certificate.notValidBefore <= date, date <= certificate.notValidAfter else {
                throw .untrusted("\(certificate.subject) is not valid at \(date.formatted(.iso8601))")
            }
            return
        }
        var verifier = Verifier(rootCertificates: roots) {
            RFC5280Policy(validationTime: date)
            AppleSigningPolicy()
        }
        let others = container.certificates.filter { $0 != certificate }
        let result = await verifier.validate(leaf: certificate, intermediates: CertificateStore(others))
        guard case .validCertificate = result else {
            let reasons =
                if case .couldNotValidate(let failures) = result {
                    failures.map { String(describing: $0.policyFailureReason) }
                } else {
                    [String]()
                }
            if let reason = reasons.first(where: { $0.contains("Apple's chain") || $0.contains("lacks OID") }) {
                throw .untrusted("\(certificate.subject): \(reason)")
            }
            throw .untrusted("\(certificate.subject) does not chain to a trusted root at \(date.formatted(.iso8601))")
        }
    }
}
