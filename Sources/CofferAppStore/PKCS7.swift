import Crypto
import Foundation
import SwiftASN1
import X509

/// The parts of a PKCS#7 / CMS SignedData container a receipt check needs, read with a BER parser
/// (Apple's receipts use indefinite lengths in their outer layers).
struct PKCS7SignedData {
    /// The signed content (the receipt payload).
    let content: [UInt8]
    /// The certificates carried in the container.
    let certificates: [Certificate]
    /// The one signer.
    let signer: Signer

    struct Signer {
        /// The DER of the signer's issuer name (IssuerAndSerialNumber's first half).
        var issuer: [UInt8]
        var serialNumber: [UInt8]
        var digestAlgorithm: ASN1ObjectIdentifier
        var signatureAlgorithmOID: ASN1ObjectIdentifier
        /// The DER of the signed attributes as a SET (what the signature covers), when present.
        var signedAttributes: [UInt8]?
        /// The messageDigest signed attribute, when present.
        var messageDigest: [UInt8]?
        var signature: [UInt8]

        func signatureAlgorithm() throws(ReceiptError) -> ReceiptSignatureAlgorithm {
            switch (digestAlgorithm, signatureAlgorithmOID) {
            case (OID.sha256, OID.rsaEncryption), (_, OID.sha256WithRSA): return .sha256WithRSA
            case (OID.sha1, OID.rsaEncryption), (_, OID.sha1WithRSA): return .sha1WithRSA
            default: throw .invalidSignature("unsupported algorithm \(signatureAlgorithmOID) with \(digestAlgorithm)")
            }
        }
    }

    enum OID {
        static let signedData: ASN1ObjectIdentifier = [1, 2, 840, 113_549, 1, 7, 2]
        static let data: ASN1ObjectIdentifier = [1, 2, 840, 113_549, 1, 7, 1]
        static let sha1: ASN1ObjectIdentifier = [1, 3, 14, 3, 2, 26]
        static let sha256: ASN1ObjectIdentifier = [2, 16, 840, 1, 101, 3, 4, 2, 1]
        static let rsaEncryption: ASN1ObjectIdentifier = [1, 2, 840, 113_549, 1, 1, 1]
        static let sha1WithRSA: ASN1ObjectIdentifier = [1, 2, 840, 113_549, 1, 1, 5]
        static let sha256WithRSA: ASN1ObjectIdentifier = [1, 2, 840, 113_549, 1, 1, 11]
        static let messageDigest: ASN1ObjectIdentifier = [1, 2, 840, 113_549, 1, 9, 4]
    }

    init(ber bytes: [UInt8]) throws {
        let root = try BER.parse(bytes)
        let contentInfo = try ASN1Walk.children(root, "ContentInfo")
        guard contentInfo.count == 2, try ASN1ObjectIdentifier(berEncoded: contentInfo[0]) == OID.signedData else {
            throw ReceiptError.malformed("not PKCS#7 signed data")
        }
        let signedData = try ASN1Walk.children(try ASN1Walk.single(contentInfo[1], "content"), "SignedData")
        guard signedData.count >= 4 else { throw ReceiptError.malformed("SignedData is too short") }
        let encapsulated = try ASN1Walk.children(signedData[2], "EncapsulatedContentInfo")
        guard encapsulated.count == 2, try ASN1ObjectIdentifier(berEncoded: encapsulated[0]) == OID.data else {
            throw ReceiptError.malformed("the receipt holds no data")
        }
        content = try ASN1Walk.octets(try ASN1Walk.single(encapsulated[1], "eContent"))

        var certificates: [Certificate] = []
        for node in signedData[3...]
        where node.identifier == ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific) {
            for certificate in try ASN1Walk.children(node, "certificates") {
                certificates.append(try Certificate(derEncoded: Array(certificate.encodedBytes)))
            }
        }
        self.certificates = certificates

        guard let signerInfos = signedData.last, signerInfos.identifier == .set else {
            throw ReceiptError.malformed("no SignerInfos")
        }
        let signers = try ASN1Walk.children(signerInfos, "SignerInfos")
        guard signers.count == 1 else { throw ReceiptError.malformed("\(signers.count) signers; a receipt has one") }
        signer = try Self.signer(try ASN1Walk.children(signers[0], "SignerInfo"))
    }

    private static func signer(_ fields: [ASN1Node]) throws -> Signer {
        guard fields.count >= 5 else { throw ReceiptError.malformed("SignerInfo is too short") }
        let issuerAndSerial = try ASN1Walk.children(fields[1], "IssuerAndSerialNumber")
        guard issuerAndSerial.count == 2, case .primitive(let serial) = issuerAndSerial[1].content else {
            throw ReceiptError.malformed("the signer is not named by issuer and serial number")
        }
        let digestAlgorithm = try ASN1ObjectIdentifier(
            berEncoded: try ASN1Walk.first(fields[2], "digestAlgorithm"))
        var index = 3
        var signedAttributes: [UInt8]?
        var messageDigest: [UInt8]?
        if fields[index].identifier == ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific) {
            var der = Array(fields[index].encodedBytes)
            der[0] = 0x31  // the signature covers the attributes as a SET, not as [0]
            signedAttributes = der
            for attribute in try ASN1Walk.children(fields[index], "signedAttrs") {
                let parts = try ASN1Walk.children(attribute, "Attribute")
                if parts.count == 2, try ASN1ObjectIdentifier(berEncoded: parts[0]) == OID.messageDigest,
                    let value = try ASN1Walk.children(parts[1], "values").first
                {
                    messageDigest = try ASN1Walk.octets(value)
                }
            }
            index += 1
        }
        guard fields.count > index + 1 else { throw ReceiptError.malformed("SignerInfo is too short") }
        let signatureAlgorithm = try ASN1ObjectIdentifier(
            berEncoded: try ASN1Walk.first(fields[index], "signatureAlgorithm"))
        let signature = try ASN1Walk.octets(fields[index + 1])
        return Signer(
            issuer: Array(issuerAndSerial[0].encodedBytes), serialNumber: Array(serial),
            digestAlgorithm: digestAlgorithm, signatureAlgorithmOID: signatureAlgorithm,
            signedAttributes: signedAttributes, messageDigest: messageDigest, signature: signature)
    }
}

/// The RSA signature algorithms Apple's receipts use.
enum ReceiptSignatureAlgorithm {
    case sha1WithRSA
    case sha256WithRSA

    var certificateAlgorithm: Certificate.SignatureAlgorithm {
        switch self {
        case .sha1WithRSA: .sha1WithRSAEncryption
        case .sha256WithRSA: .sha256WithRSAEncryption
        }
    }

    func digest(_ bytes: [UInt8]) -> [UInt8] {
        switch self {
        case .sha1WithRSA: Array(Insecure.SHA1.hash(data: bytes))
        case .sha256WithRSA: Array(SHA256.hash(data: bytes))
        }
    }
}

/// Small helpers over swift-asn1 nodes that name what was expected when the input is wrong.
enum ASN1Walk {
    static func children(_ node: ASN1Node, _ what: String) throws -> [ASN1Node] {
        guard case .constructed(let nodes) = node.content else {
            throw ReceiptError.malformed("\(what) is not constructed")
        }
        return Array(nodes)
    }

    static func single(_ node: ASN1Node, _ what: String) throws -> ASN1Node {
        let nodes = try children(node, what)
        guard nodes.count == 1 else { throw ReceiptError.malformed("\(what) holds \(nodes.count) values, expected 1") }
        return nodes[0]
    }

    /// The first child of a constructed node, refused when there is none (an empty SEQUENCE).
    static func first(_ node: ASN1Node, _ what: String) throws -> ASN1Node {
        guard let first = try children(node, what).first else { throw ReceiptError.malformed("\(what) is empty") }
        return first
    }

    /// The bytes of an OCTET STRING, joining the pieces of a BER constructed one.
    static func octets(_ node: ASN1Node) throws -> [UInt8] {
        guard node.identifier == .octetString else { throw ReceiptError.malformed("expected an OCTET STRING") }
        switch node.content {
        case .primitive(let bytes): return Array(bytes)
        case .constructed(let pieces): return try pieces.flatMap { try octets($0) }
        }
    }

    static func integer(_ node: ASN1Node) throws -> Int64 {
        guard node.identifier == .integer, case .primitive(let bytes) = node.content, !bytes.isEmpty, bytes.count <= 8
        else {
            throw ReceiptError.malformed("expected a small INTEGER")
        }
        var value: Int64 = (bytes.first ?? 0) & 0x80 != 0 ? -1 : 0
        for byte in bytes { value = value << 8 | Int64(byte) }
        return value
    }

    static func string(_ node: ASN1Node) throws -> String {
        guard case .primitive(let bytes) = node.content,
            node.identifier == .utf8String || node.identifier == .ia5String || node.identifier == .printableString
        else { throw ReceiptError.malformed("expected a string") }
        guard let text = String(validating: bytes, as: UTF8.self) else { throw ReceiptError.malformed("invalid UTF-8") }
        return text
    }
}

/// Decodes the receipt payload: a SET of (type, version, value) attributes, the value an OCTET STRING
/// holding a DER string, integer or nested SET.
enum ReceiptPayload {
    static func decode(_ bytes: [UInt8]) throws(ReceiptError) -> AppReceipt {
        do {
            var receipt = AppReceipt()
            for (type, value) in try attributes(bytes) {
                switch type {
                case 0: receipt.receiptType = try string(value)
                case 2: receipt.bundleId = try string(value)
                case 3: receipt.applicationVersion = try string(value)
                case 12: receipt.creationDate = try date(value)
                case 17: receipt.inAppPurchases.append(try inAppPurchase(value))
                case 19: receipt.originalApplicationVersion = try string(value)
                case 21: receipt.expirationDate = try date(value)
                default: continue
                }
            }
            return receipt
        } catch let error as ReceiptError {
            throw error
        } catch {
            throw .malformed("the payload is not a receipt: \(error)")
        }
    }

    private static func attributes(_ bytes: [UInt8]) throws -> [(Int64, [UInt8])] {
        let set = try BER.parse(bytes)
        guard set.identifier == .set else { throw ReceiptError.malformed("the payload is not a SET") }
        return try ASN1Walk.children(set, "payload").map { attribute in
            let fields = try ASN1Walk.children(attribute, "receipt attribute")
            guard fields.count == 3 else {
                throw ReceiptError.malformed("a receipt attribute has \(fields.count) fields")
            }
            return (try ASN1Walk.integer(fields[0]), try ASN1Walk.octets(fields[2]))
        }
    }

    private static func inAppPurchase(_ bytes: [UInt8]) throws -> InAppPurchaseReceipt {
        var purchase = InAppPurchaseReceipt()
        for (type, value) in try attributes(bytes) {
            switch type {
            case 1701: purchase.quantity = try integer(value)
            case 1702: purchase.productId = try string(value)
            case 1703: purchase.transactionId = try string(value)
            case 1704: purchase.purchaseDate = try date(value)
            case 1705: purchase.originalTransactionId = try string(value)
            case 1706: purchase.originalPurchaseDate = try date(value)
            case 1708: purchase.expiresDate = try date(value)
            case 1711: purchase.webOrderLineItemId = try integer(value)
            case 1712: purchase.cancellationDate = try date(value)
            case 1713: purchase.isTrialPeriod = try integer(value) != 0
            case 1719: purchase.isInIntroOfferPeriod = try integer(value) != 0
            case 1721: purchase.promotionalOfferIdentifier = try string(value)
            default: continue
            }
        }
        return purchase
    }

    private static func string(_ bytes: [UInt8]) throws -> String { try ASN1Walk.string(try BER.parse(bytes)) }

    private static func integer(_ bytes: [UInt8]) throws -> Int64 { try ASN1Walk.integer(try BER.parse(bytes)) }

    /// Dates are RFC 3339 strings; an empty one means "none".
    private static func date(_ bytes: [UInt8]) throws -> Date? {
        let text = try string(bytes)
        guard !text.isEmpty else { return nil }
        if let date = try? Date(text, strategy: .iso8601) { return date }
        if let date = try? Date(text, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true)) {
            return date
        }
        throw ReceiptError.malformed("not an RFC 3339 date: \(text)")
    }
}
