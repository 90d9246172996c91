import Foundation
import SwiftASN1
import X509

/// Reads a legacy app receipt locally: parses the PKCS#7 container, verifies the RSA signature with the
/// signing certificate, checks that certificate chains to a trusted root (Apple Root CA, or Xcode's
/// StoreKit test certificate for local receipts) at the receipt's creation date, and decodes the fields.
///
/// ```swift
/// let reader = try AppReceiptReader(trustedRoots: [AppleRoots.rootCA()])
/// let receipt = try await reader.read(base64: text)
/// ```
public struct AppReceiptReader: Sendable {
    private let roots: CertificateStore
    private let anchors: [Certificate]
    private let now: @Sendable () -> Date

    /// Creates a reader.
    ///
    /// - Parameters:
    ///   - trustedRoots: DER roots: ``AppleRoots/rootCA()``, plus the StoreKit test certificate to accept Xcode
    ///     receipts.
    ///   - now: The clock, for receipts without a creation date.
    public init(trustedRoots: [Data], now: @escaping @Sendable () -> Date = Date.init) throws(ReceiptError) {
        var certificates: [Certificate] = []
        for der in trustedRoots {
            guard let certificate = try? Certificate(derEncoded: [UInt8](der)) else {
                throw .malformed("a trusted root cannot be parsed")
            }
            certificates.append(certificate)
        }
        roots = CertificateStore(certificates)
        anchors = certificates
        self.now = now
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
        guard
            let certificate = container.certificates.first(where: { $0.serialNumber.bytes == signer.serialNumber[...] })
        else {
            throw .invalidSignature("the signing certificate is not in the receipt")
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
        // Xcode signs local receipts with its StoreKit certificate itself: a trust anchor needs no chain.
        if anchors.contains(certificate) {
            guard certificate.notValidBefore <= date, date <= certificate.notValidAfter else {
                throw .untrusted("\(certificate.subject) is not valid at \(date.formatted(.iso8601))")
            }
            return
        }
        var verifier = Verifier(rootCertificates: roots) { RFC5280Policy(validationTime: date) }
        let others = container.certificates.filter { $0 != certificate }
        let result = await verifier.validate(leaf: certificate, intermediates: CertificateStore(others))
        guard case .validCertificate = result else {
            throw .untrusted("\(certificate.subject) does not chain to a trusted root at \(date.formatted(.iso8601))")
        }
    }
}
