import CofferAppStore
import Crypto
import Foundation
import SwiftASN1
@_spi(CMS) import X509
import _CryptoExtras

/// An RSA certificate authority shaped like the one that signs Apple's legacy app receipts: a root, an
/// intermediate carrying Apple's WWDR OID 1.2.840.113635.100.6.2.1 and a leaf carrying the receipt-signing
/// OID 1.2.840.113635.100.6.11.1. It signs PKCS#7 receipts in Apple's shape, so everything the simulator
/// makes verifies by Apple's receipt policy once its root is trusted (in Sandbox only: the root carries the
/// simulator's marker).
///
/// ```swift
/// let authority = try SimulatorReceiptAuthority(validFrom: .now, validUntil: .now + 86_400 * 365)
/// let receipt = try authority.sign(AppReceipt(inAppPurchases: purchases), bundleId: "com.example.app")
/// ```
public struct SimulatorReceiptAuthority: Sendable {
    /// The root certificate (self-signed, RSA).
    public let root: Certificate
    /// The certificates between the leaf and the root the receipt carries, nearest the root first.
    public let intermediates: [Certificate]
    /// The leaf that signs receipts.
    public let leaf: Certificate
    private let leafKey: _RSA.Signing.PrivateKey

    /// How the chain is shaped: Apple's, or broken in one way for tests of the receipt policy.
    public enum Shape: Sendable, CaseIterable {
        /// root -> intermediate -> leaf, as Apple's.
        case apple
        /// root -> leaf: a chain of two.
        case leafUnderRoot
        /// root -> intermediate -> intermediate -> leaf: a chain of four.
        case twoIntermediates
        /// The intermediate is self-signed (it names itself as issuer), so nothing links it to the root.
        case selfSignedIntermediate
    }

    /// What to leave out or change, to make receipts Apple's policy refuses.
    public struct Options: Sendable {
        /// Put Apple's WWDR OID on the intermediate(s).
        public var intermediateOID = true
        /// Put Apple's receipt-signing OID on the leaf.
        public var leafOID = true
        /// The chain's shape.
        public var shape = Shape.apple
        /// The subject common name prefix.
        public var name = "Coffer App Store Simulator Receipts"

        /// The defaults: a chain Apple's receipt policy accepts.
        public init() {}
    }

    /// Creates an authority with fresh 2048-bit RSA keys.
    ///
    /// - Parameters:
    ///   - validFrom: When every certificate starts being valid.
    ///   - validUntil: When every certificate expires.
    ///   - options: Changes for broken chains in tests.
    public init(validFrom: Date, validUntil: Date, options: Options = Options()) throws {
        func name(_ role: String, marker: Bool = false) throws -> DistinguishedName {
            try DistinguishedName {
                CountryName("US")
                OrganizationName("Coffer")
                if marker { OrganizationalUnitName(AppleRoots.simulatorMarker) }
                CommonName("\(options.name) \(role)")
            }
        }
        func issue(
            _ subject: DistinguishedName, key: _RSA.Signing.PrivateKey, issuer: DistinguishedName,
            issuerKey: _RSA.Signing.PrivateKey, authority: Bool, oid: ASN1ObjectIdentifier?
        ) throws -> Certificate {
            var extensions = try Certificate.Extensions {
                if authority {
                    Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                    Critical(KeyUsage(keyCertSign: true, cRLSign: true))
                } else {
                    Critical(BasicConstraints.notCertificateAuthority)
                    Critical(KeyUsage(digitalSignature: true))
                }
                SubjectKeyIdentifier(hash: Certificate.PublicKey(key.publicKey))
            }
            if let oid { try extensions.append(Certificate.Extension(oid: oid, critical: false, value: [0x05, 0x00])) }
            return try Certificate(
                version: .v3, serialNumber: Certificate.SerialNumber(bytes: Self.serial()),
                publicKey: .init(key.publicKey), notValidBefore: validFrom, notValidAfter: validUntil,
                issuer: issuer, subject: subject, signatureAlgorithm: .sha256WithRSAEncryption,
                extensions: extensions, issuerPrivateKey: .init(issuerKey))
        }
        let rootKey = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        let leafKey = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        let rootName = try name("Root CA", marker: true)
        root = try issue(rootName, key: rootKey, issuer: rootName, issuerKey: rootKey, authority: true, oid: nil)
        let wwdr = options.intermediateOID ? ChainVerifier.intermediateOID : nil
        var issuerName = rootName
        var issuerKey = rootKey
        var intermediates: [Certificate] = []
        let count =
            switch options.shape {
            case .apple, .selfSignedIntermediate: 1
            case .leafUnderRoot: 0
            case .twoIntermediates: 2
            }
        for index in 0..<count {
            let key = try _RSA.Signing.PrivateKey(keySize: .bits2048)
            let subject = try name("Intermediate CA \(index + 1)")
            let selfSigned = options.shape == .selfSignedIntermediate
            intermediates.append(
                try issue(
                    subject, key: key, issuer: selfSigned ? subject : issuerName,
                    issuerKey: selfSigned ? key : issuerKey, authority: true, oid: wwdr))
            issuerName = subject
            issuerKey = key
        }
        self.intermediates = intermediates
        leaf = try issue(
            try name("Receipt Signing"), key: leafKey, issuer: issuerName, issuerKey: issuerKey, authority: false,
            oid: options.leafOID ? ChainVerifier.leafOID : nil)
        self.leafKey = leafKey
    }

    /// The root as DER, for a reader's trusted roots (`coffer receipt --root`, `apple.roots` in Sandbox).
    public func rootDER() throws -> Data { try root.derBytes() }

    /// The files of an authority in the simulator's folder.
    enum File {
        static let rootDER = "receipt-root.der"
        static let root = "receipt-root.pem"
        static let intermediates = "receipt-intermediates.pem"
        static let leaf = "receipt-leaf.pem"
        static let leafKey = "receipt-leaf-key.pem"
    }

    /// Writes the authority into `folder`: `receipt-root.der` (the root to trust, in Sandbox only), the
    /// certificates as PEM, and the leaf's key, owner-only.
    public func write(to folder: URL) throws {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try rootDER().write(to: folder.appendingPathComponent(File.rootDER))
        try root.serializeAsPEM().pemString.write(
            to: folder.appendingPathComponent(File.root), atomically: true, encoding: .utf8)
        try intermediates.map { try $0.serializeAsPEM().pemString }.joined(separator: "\n").write(
            to: folder.appendingPathComponent(File.intermediates), atomically: true, encoding: .utf8)
        try leaf.serializeAsPEM().pemString.write(
            to: folder.appendingPathComponent(File.leaf), atomically: true, encoding: .utf8)
        try OwnerOnlyFile.write(
            Data(leafKey.pemRepresentation.utf8), to: folder.appendingPathComponent(File.leafKey).path,
            exclusive: false)
    }

    /// Loads an authority written by ``write(to:)``; `nil` when the folder holds none (made by an older
    /// `coffer appstore-sim init`).
    public init?(folder: URL) throws {
        func text(_ name: String) throws -> String {
            try String(contentsOf: folder.appendingPathComponent(name), encoding: .utf8)
        }
        guard FileManager.default.fileExists(atPath: folder.appendingPathComponent(File.leafKey).path) else {
            return nil
        }
        root = try Certificate(pemEncoded: text(File.root))
        let pem = try text(File.intermediates)
        intermediates =
            pem.isEmpty ? [] : try PEMDocument.parseMultiple(pemString: pem).map { try Certificate(pemDocument: $0) }
        leaf = try Certificate(pemEncoded: text(File.leaf))
        leafKey = try _RSA.Signing.PrivateKey(pemRepresentation: text(File.leafKey))
        guard Certificate.PublicKey(leafKey.publicKey) == leaf.publicKey else {
            throw SimulatorError("invalid-request", "\(File.leafKey) is not the key of \(File.leaf)")
        }
    }

    /// Signs `receipt` as Apple does: a PKCS#7 SignedData with the payload attached, signed attributes
    /// (content type, message digest, signing time), SHA-256 with RSA, and the leaf and intermediates
    /// attached (Apple's receipts carry the chain).
    ///
    /// - Returns: The receipt's DER bytes; `base64EncodedString()` is what an app sends.
    public func sign(_ receipt: AppReceipt) throws -> Data {
        let payload = try ReceiptPayloadEncoder.encode(receipt)
        let bytes = try CMS.sign(
            payload, signatureAlgorithm: .sha256WithRSAEncryption,
            additionalIntermediateCertificates: intermediates, certificate: leaf, privateKey: .init(leafKey),
            signingTime: receipt.creationDate ?? Date(), detached: false)
        return Data(bytes)
    }

    private static func serial() -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<16).map { index in
            index == 0 ? UInt8.random(in: 1...0x7F, using: &generator) : UInt8.random(in: 0...255, using: &generator)
        }
    }
}

/// Writes a receipt payload in Apple's ASN.1 shape: a SET of SEQUENCE { type INTEGER, version INTEGER,
/// value OCTET STRING }, each value the DER of a UTF8String, an IA5String (RFC 3339 dates) or an INTEGER.
enum ReceiptPayloadEncoder {
    private enum Value {
        case text(String)
        case date(Date)
        case integer(Int64)
    }

    static func encode(_ receipt: AppReceipt) throws -> [UInt8] {
        var fields: [(Int, Value)] = []
        if let value = receipt.receiptType { fields.append((0, .text(value))) }
        if let value = receipt.bundleId { fields.append((2, .text(value))) }
        if let value = receipt.applicationVersion { fields.append((3, .text(value))) }
        if let value = receipt.creationDate { fields.append((12, .date(value))) }
        if let value = receipt.originalApplicationVersion { fields.append((19, .text(value))) }
        if let value = receipt.expirationDate { fields.append((21, .date(value))) }
        var serializer = DER.Serializer()
        try serializer.appendConstructedNode(identifier: .set) { set in
            for (type, value) in fields { try attribute(type, value, into: &set) }
            for purchase in receipt.inAppPurchases {
                var inner = DER.Serializer()
                try inner.appendConstructedNode(identifier: .set) { set in
                    for (type, value) in purchaseFields(purchase) { try attribute(type, value, into: &set) }
                }
                try set.appendConstructedNode(identifier: .sequence) { sequence in
                    try sequence.serialize(17)
                    try sequence.serialize(1)
                    try sequence.serialize(ASN1OctetString(contentBytes: inner.serializedBytes[...]))
                }
            }
        }
        return serializer.serializedBytes
    }

    private static func purchaseFields(_ purchase: InAppPurchaseReceipt) -> [(Int, Value)] {
        var fields: [(Int, Value)] = []
        if let value = purchase.quantity { fields.append((1701, .integer(value))) }
        if let value = purchase.productId { fields.append((1702, .text(value))) }
        if let value = purchase.transactionId { fields.append((1703, .text(value))) }
        if let value = purchase.purchaseDate { fields.append((1704, .date(value))) }
        if let value = purchase.originalTransactionId { fields.append((1705, .text(value))) }
        if let value = purchase.originalPurchaseDate { fields.append((1706, .date(value))) }
        if let value = purchase.expiresDate { fields.append((1708, .date(value))) }
        if let value = purchase.webOrderLineItemId { fields.append((1711, .integer(value))) }
        if let value = purchase.cancellationDate { fields.append((1712, .date(value))) }
        return fields
    }

    private static func attribute(_ type: Int, _ value: Value, into serializer: inout DER.Serializer) throws {
        var inner = DER.Serializer()
        switch value {
        case .text(let text): try inner.serialize(ASN1UTF8String(text))
        case .date(let date): try inner.serialize(ASN1IA5String(date.formatted(.iso8601)))
        case .integer(let number): try inner.serialize(number)
        }
        try serializer.appendConstructedNode(identifier: .sequence) { sequence in
            try sequence.serialize(type)
            try sequence.serialize(1)
            try sequence.serialize(ASN1OctetString(contentBytes: inner.serializedBytes[...]))
        }
    }
}
