import CofferAppStore
import Crypto
import Foundation
import SwiftASN1
import X509

/// A certificate authority shaped like Apple's App Store signing chain: a root, an intermediate carrying
/// OID 1.2.840.113635.100.6.2.1 and a P-256 leaf carrying 1.2.840.113635.100.6.11.1. The simulator signs
/// with it; a Coffer server trusts its root in Sandbox only.
public struct SimulatorPKI: Sendable {
    /// The root certificate (self-signed, P-256).
    public let root: Certificate
    /// The intermediate certificate.
    public let intermediate: Certificate
    /// The leaf certificate that signs data.
    public let leaf: Certificate
    /// The leaf's private key.
    public let leafKey: P256.Signing.PrivateKey
    /// The root's private key (to sign OCSP answers about the intermediate in tests).
    public let rootKey: P256.Signing.PrivateKey
    /// The intermediate's private key (to sign OCSP answers about the leaf in tests).
    public let intermediateKey: P256.Signing.PrivateKey

    /// What to leave out or change, to make broken chains for tests of the verifier.
    public struct Options: Sendable {
        /// Put Apple's OID on the intermediate.
        public var intermediateOID = true
        /// Put Apple's OID on the leaf.
        public var leafOID = true
        /// The subject common name prefix.
        public var name = "Coffer App Store Simulator"
        /// Mark the root as the simulator's (Coffer then refuses it in Production). Only verifier tests that
        /// need a stand-in for Apple's Production chain turn this off.
        public var simulatorMarker = true
        /// The OCSP responder the leaf names in its Authority Information Access, as Apple's leaves do.
        public var leafOCSPResponder: String?
        /// The OCSP responder the intermediate names.
        public var intermediateOCSPResponder: String?

        /// The defaults: a chain Apple's rules accept.
        public init() {}
    }

    /// Creates a new authority with fresh keys.
    ///
    /// - Parameters:
    ///   - validFrom: When every certificate starts being valid.
    ///   - leafValidUntil: When the leaf expires (the root and intermediate last 10 years more).
    ///   - options: Changes for broken chains in tests.
    public init(validFrom: Date, leafValidUntil: Date, options: Options = Options()) throws {
        let rootKey = P256.Signing.PrivateKey()
        let intermediateKey = P256.Signing.PrivateKey()
        let leafKey = P256.Signing.PrivateKey()
        let caUntil = leafValidUntil.addingTimeInterval(10 * 365 * 86_400)
        let rootName = try DistinguishedName {
            CountryName("US")
            OrganizationName("Coffer")
            if options.simulatorMarker { OrganizationalUnitName(AppleRoots.simulatorMarker) }
            CommonName("\(options.name) Root CA")
        }
        let intermediateName = try DistinguishedName {
            CountryName("US")
            OrganizationName("Coffer")
            CommonName("\(options.name) Intermediate CA")
        }
        let leafName = try DistinguishedName {
            CountryName("US")
            OrganizationName("Coffer")
            CommonName("\(options.name) Signing")
        }
        root = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: .init(rootKey.publicKey),
            notValidBefore: validFrom, notValidAfter: caUntil, issuer: rootName, subject: rootName,
            extensions: try Self.authorityExtensions(for: rootKey.publicKey, issuer: nil, oid: nil),
            issuerPrivateKey: .init(rootKey))
        intermediate = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: .init(intermediateKey.publicKey),
            notValidBefore: validFrom, notValidAfter: caUntil, issuer: rootName, subject: intermediateName,
            extensions: try Self.authorityExtensions(
                for: intermediateKey.publicKey, issuer: rootKey.publicKey,
                oid: options.intermediateOID ? ChainVerifier.intermediateOID : nil,
                ocspResponder: options.intermediateOCSPResponder),
            issuerPrivateKey: .init(rootKey))
        var leafExtensions = try Self.leafExtensions(for: leafKey.publicKey, issuer: intermediateKey.publicKey)
        if options.leafOID { try leafExtensions.append(Self.appleMarker(ChainVerifier.leafOID)) }
        if let responder = options.leafOCSPResponder { try leafExtensions.append(Self.responder(responder)) }
        leaf = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: .init(leafKey.publicKey),
            notValidBefore: validFrom, notValidAfter: leafValidUntil, issuer: intermediateName, subject: leafName,
            extensions: leafExtensions, issuerPrivateKey: .init(intermediateKey))
        self.leafKey = leafKey
        self.rootKey = rootKey
        self.intermediateKey = intermediateKey
    }

    private init(
        root: Certificate, intermediate: Certificate, leaf: Certificate, leafKey: P256.Signing.PrivateKey,
        rootKey: P256.Signing.PrivateKey, intermediateKey: P256.Signing.PrivateKey
    ) {
        self.root = root
        self.intermediate = intermediate
        self.leaf = leaf
        self.leafKey = leafKey
        self.rootKey = rootKey
        self.intermediateKey = intermediateKey
    }

    /// The same root and intermediate with a new leaf: a new key, valid from `validFrom` to `validUntil`, with the
    /// extensions of the leaf it replaces. Apple signs with new leaves under one intermediate in the same way.
    public func withNewLeaf(validFrom: Date, validUntil: Date) throws -> SimulatorPKI {
        let key = P256.Signing.PrivateKey()
        var extensions = try Self.leafExtensions(for: key.publicKey, issuer: intermediateKey.publicKey)
        for oid in [ChainVerifier.leafOID, .X509ExtensionID.authorityInformationAccess] {
            if let kept = leaf.extensions[oid: oid] { try extensions.append(kept) }
        }
        let renewed = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: .init(key.publicKey),
            notValidBefore: validFrom, notValidAfter: validUntil, issuer: intermediate.subject, subject: leaf.subject,
            extensions: extensions, issuerPrivateKey: .init(intermediateKey))
        return SimulatorPKI(
            root: root, intermediate: intermediate, leaf: renewed, leafKey: key, rootKey: rootKey,
            intermediateKey: intermediateKey)
    }

    private static func leafExtensions(for key: P256.Signing.PublicKey, issuer: P256.Signing.PublicKey) throws
        -> Certificate.Extensions
    {
        try Certificate.Extensions {
            Critical(BasicConstraints.notCertificateAuthority)
            Critical(KeyUsage(digitalSignature: true))
            SubjectKeyIdentifier(hash: Certificate.PublicKey(key))
            Self.authorityKeyIdentifier(issuer)
        }
    }

    /// The files of an authority in its folder.
    enum File {
        static let rootDER = "root.der"
        static let root = "root.pem"
        static let intermediate = "intermediate.pem"
        static let leaf = "leaf.pem"
        static let rootKey = "root-key.pem"
        static let intermediateKey = "intermediate-key.pem"
        static let leafKey = "leaf-key.pem"
    }

    /// Writes the authority into `folder` (created if missing): `root.der` and `root.pem` (the root a Coffer
    /// server trusts, in Sandbox only), `intermediate.pem`, `leaf.pem`, and the three keys, readable by the
    /// owner only.
    public func write(to folder: URL) throws {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try rootDER().write(to: folder.appendingPathComponent(File.rootDER))
        for (name, certificate) in [(File.root, root), (File.intermediate, intermediate), (File.leaf, leaf)] {
            try certificate.serializeAsPEM().pemString.write(
                to: folder.appendingPathComponent(name), atomically: true, encoding: .utf8)
        }
        for (name, key) in [(File.rootKey, rootKey), (File.intermediateKey, intermediateKey), (File.leafKey, leafKey)] {
            // Owner-only from the first byte.
            try OwnerOnlyFile.write(
                Data(key.pemRepresentation.utf8), to: folder.appendingPathComponent(name).path, exclusive: false)
        }
    }

    /// Loads an authority written by ``write(to:)``.
    public init(folder: URL) throws {
        func text(_ name: String) throws -> String {
            try String(contentsOf: folder.appendingPathComponent(name), encoding: .utf8)
        }
        root = try Certificate(pemEncoded: text(File.root))
        intermediate = try Certificate(pemEncoded: text(File.intermediate))
        leaf = try Certificate(pemEncoded: text(File.leaf))
        rootKey = try P256.Signing.PrivateKey(pemRepresentation: text(File.rootKey))
        intermediateKey = try P256.Signing.PrivateKey(pemRepresentation: text(File.intermediateKey))
        leafKey = try P256.Signing.PrivateKey(pemRepresentation: text(File.leafKey))
        guard Certificate.PublicKey(leafKey.publicKey) == leaf.publicKey else {
            throw SimulatorError("invalid-request", "\(File.leafKey) is not the key of \(File.leaf)")
        }
    }

    /// The root as DER, to pass to a verifier or write to a file.
    public func rootDER() throws -> Data { try root.derBytes() }

    /// A signer that signs with the leaf and presents `[leaf, intermediate, root]` in x5c.
    public func signer() throws -> JWSSigner {
        try JWSSigner(key: leafKey, chain: [leaf, intermediate, root])
    }

    /// Every certificate but the root names its issuer's key, as OpenSSL's strict checks (and so Apple's
    /// Python library) require.
    private static func authorityKeyIdentifier(_ issuer: P256.Signing.PublicKey) -> AuthorityKeyIdentifier {
        AuthorityKeyIdentifier(keyIdentifier: SubjectKeyIdentifier(hash: Certificate.PublicKey(issuer)).keyIdentifier)
    }

    private static func authorityExtensions(
        for key: P256.Signing.PublicKey,
        issuer: P256.Signing.PublicKey?,
        oid: ASN1ObjectIdentifier?,
        ocspResponder: String? = nil
    ) throws -> Certificate.Extensions {
        var extensions = try Certificate.Extensions {
            Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
            Critical(KeyUsage(keyCertSign: true, cRLSign: true))
            SubjectKeyIdentifier(hash: Certificate.PublicKey(key))
        }
        if let issuer {
            try extensions.append(Certificate.Extension(Self.authorityKeyIdentifier(issuer), critical: false))
        }
        if let oid { try extensions.append(appleMarker(oid)) }
        if let ocspResponder { try extensions.append(Self.responder(ocspResponder)) }
        return extensions
    }

    /// An Authority Information Access extension naming an OCSP responder.
    private static func responder(_ url: String) throws -> Certificate.Extension {
        try Certificate.Extension(
            AuthorityInformationAccess([.init(method: .ocspServer, location: .uniformResourceIdentifier(url))]),
            critical: false)
    }

    /// Apple's marker extensions carry an ASN.1 NULL.
    private static func appleMarker(_ oid: ASN1ObjectIdentifier) -> Certificate.Extension {
        Certificate.Extension(oid: oid, critical: false, value: [0x05, 0x00])
    }
}

extension Certificate.SerialNumber {
    fileprivate init() {
        var generator = SystemRandomNumberGenerator()
        self.init(
            bytes: (0..<16).map { index in
                index == 0
                    ? UInt8.random(in: 1...0x7F, using: &generator) : UInt8.random(in: 0...255, using: &generator)
            })
    }
}

extension Certificate {
    /// The certificate's DER encoding.
    public func derBytes() throws -> Data {
        var serializer = DER.Serializer()
        try serializer.serialize(self)
        return Data(serializer.serializedBytes)
    }
}
