import Crypto
import Foundation
import SwiftASN1
import Synchronization
import X509

/// Verifies the x5c certificate chain of Apple's signed data against pinned roots, the way Apple's own
/// verifier does: exactly three certificates, the leaf and intermediate parsed, a chain built from the leaf
/// through the presented intermediate to a trusted root, the intermediate carrying OID
/// 1.2.840.113635.100.6.2.1 and the leaf 1.2.840.113635.100.6.11.1, every certificate valid at the
/// effective date, and a P-256 leaf key.
///
/// Verified chains are cached by the SHA-256 of the leaf and intermediate (see ``ChainCache``), so a steady
/// stream of data signed by one leaf costs one ES256 verification each. Signed data enters the cache only
/// once its signature verified too (``SignedDataVerifier`` remembers it then), so junk signed with nothing
/// under a real chain can neither evict good entries nor make one.
public struct ChainVerifier: Sendable {
    /// The number of certificates in Apple's chains.
    public static let chainLength = 3
    /// Apple's OID for the WWDR intermediate of App Store signing.
    public static let intermediateOID: ASN1ObjectIdentifier = [1, 2, 840, 113_635, 100, 6, 2, 1]
    /// Apple's OID for the App Store receipt-signing leaf.
    public static let leafOID: ASN1ObjectIdentifier = [1, 2, 840, 113_635, 100, 6, 11, 1]

    private let roots: CertificateStore
    private let cache: ChainCache?
    private let revocation: RevocationChecker?
    /// How many of the trusted roots are the App Store simulator's.
    let simulatorRoots: Int
    /// Identifies the set of trusted roots, so a cache shared between verifiers never lends one verifier's
    /// trust to another.
    private let trustIdentity: String

    /// Creates a verifier trusting `rootCertificates`.
    ///
    /// - Parameters:
    ///   - rootCertificates: DER-encoded roots (Apple Root CA - G3 from ``AppleRoots``, plus test roots).
    ///   - cache: Where verified chains are remembered, `nil` to verify every chain in full.
    ///   - revocation: Online OCSP checks of the leaf and intermediate, `nil` for none.
    /// - Throws: ``VerificationError/invalidCertificate(_:)`` when a root cannot be parsed.
    public init(
        rootCertificates: [Data],
        cache: ChainCache? = ChainCache(),
        revocation: RevocationChecker? = nil
    ) throws(VerificationError) {
        var parsed: [Certificate] = []
        for der in rootCertificates {
            do {
                parsed.append(try Certificate(derEncoded: [UInt8](der)))
            } catch {
                throw .invalidCertificate("a trusted root cannot be parsed: \(error)")
            }
        }
        roots = CertificateStore(parsed)
        simulatorRoots =
            parsed.filter { root in
                root.subject.contains { $0.contains { String(describing: $0.value) == AppleRoots.simulatorMarker } }
            }.count
        // A chain checked online is a stronger verdict than one checked offline: the two never share entries.
        let identity = rootCertificates.map(AppleRoots.fingerprint).sorted() + [revocation == nil ? "offline" : "ocsp"]
        trustIdentity = AppleRoots.fingerprint(Data(identity.joined(separator: ",").utf8))
        self.cache = cache
        self.revocation = revocation
    }

    /// Verifies an x5c header (standard base64 DER, leaf first) at `date` and returns the leaf's key.
    ///
    /// - Parameters:
    ///   - x5c: The header's certificates.
    ///   - date: The effective date: the data's `signedDate` offline, now for online checks.
    /// - Returns: The leaf's P-256 public key, to check the signature with.
    public func verify(x5c: [String], at date: Date) async throws(VerificationError) -> P256.Signing.PublicKey {
        guard x5c.count == Self.chainLength else { throw .invalidChainLength(x5c.count) }
        let leaf = try await leafKey(x5c: x5c, at: date)
        if let pending = leaf.pending { cache?.remember(pending.chain, for: pending.key) }
        return leaf.publicKey
    }

    /// A chain's leaf key, and what to remember once a signature made with it verifies.
    struct LeafKey {
        var publicKey: P256.Signing.PublicKey
        /// Set when the chain was verified now rather than found in the cache.
        var pending: (key: ChainCache.Key, chain: VerifiedChain)?
    }

    /// Verifies the chain in a JWS header. The caller remembers the chain (``remember(_:)``) once the
    /// JWS's signature verified with the key.
    func verify(_ jws: JWS, at date: Date) async throws(VerificationError) -> LeafKey {
        let header = try jws.header()
        guard header.alg == "ES256" else {
            throw .verificationFailure("algorithm \(header.alg ?? "none") is not ES256")
        }
        guard let x5c = header.x5c, !x5c.isEmpty else { throw .verificationFailure("the x5c header is missing") }
        guard x5c.count == Self.chainLength else { throw .invalidChainLength(x5c.count) }
        return try await leafKey(x5c: x5c, at: date)
    }

    /// Remembers a chain verified by ``verify(_:at:)`` whose signature then verified.
    func remember(_ leaf: LeafKey) {
        if let pending = leaf.pending { cache?.remember(pending.chain, for: pending.key) }
    }

    private func leafKey(x5c: [String], at date: Date) async throws(VerificationError) -> LeafKey {
        var ders: [Data] = []
        for (index, text) in x5c.prefix(2).enumerated() {
            ders.append(try Base64.decode(standard: text, what: "x5c certificate \(index)"))
        }
        let key = ChainCache.Key(
            trust: trustIdentity, leaf: Data(SHA256.hash(data: ders[0])), intermediate: Data(SHA256.hash(data: ders[1]))
        )
        if let cached = cache?.publicKey(for: key, at: date) { return LeafKey(publicKey: cached, pending: nil) }
        var certificates: [Certificate] = []
        for (index, der) in ders.enumerated() {
            do {
                certificates.append(try Certificate(derEncoded: [UInt8](der)))
            } catch {
                throw .invalidCertificate("x5c certificate \(index) cannot be parsed: \(error)")
            }
        }
        let verified = try await verify(leaf: certificates[0], intermediate: certificates[1], at: date)
        return LeafKey(publicKey: verified.publicKey, pending: (key, verified))
    }

    /// Verifies a leaf and intermediate at `date`.
    ///
    /// - Returns: The leaf's key and the window in which the whole chain is valid.
    public func verify(leaf: Certificate, intermediate: Certificate, at date: Date) async throws(VerificationError)
        -> VerifiedChain
    {
        let online = revocation?.policies()
        var verifier = Verifier(rootCertificates: roots) {
            RFC5280Policy(validationTime: date)
            AppleSigningPolicy()
            if let online {
                online.responders
                online.ocsp
            }
        }
        let result = await verifier.validate(leaf: leaf, intermediates: CertificateStore([intermediate]))
        guard case .validCertificate(let chain) = result else {
            let reasons =
                if case .couldNotValidate(let failures) = result {
                    failures.map { String(describing: $0.policyFailureReason) }
                } else {
                    [String]()
                }
            let when = date.formatted(.iso8601)
            if reasons.contains(where: { $0.contains("expired") || $0.contains("not yet valid") }) {
                throw .invalidChain("a certificate in the chain is not valid at \(when)")
            }
            if let reason = reasons.first(where: { $0.contains("Apple's chain") || $0.contains("lacks OID") }) {
                throw .invalidChain(reason)
            }
            if let unreachable = online?.requester.unreachable {
                throw .retryableVerificationFailure(unreachable)
            }
            if let reason = reasons.first(where: { $0.contains("revoked") }) {
                throw .invalidCertificate(reason)
            }
            if let reason = reasons.first(where: { $0.contains("OCSP") }) {
                throw .invalidChain("the online check failed: \(reason)")
            }
            throw .invalidChain(
                "no chain from the leaf through the presented intermediate to a trusted root at \(when)")
        }
        guard let publicKey = P256.Signing.PublicKey(leaf.publicKey) else {
            throw .invalidCertificate("the leaf key is not P-256")
        }
        let certificates = Array(chain)
        let notBefore = certificates.map(\.notValidBefore).max() ?? date
        let notAfter = certificates.map(\.notValidAfter).min() ?? date
        return VerifiedChain(publicKey: publicKey, validFrom: notBefore, validUntil: notAfter)
    }
}

/// A chain that verified: the leaf's key and the dates between which every certificate in it is valid.
public struct VerifiedChain: Sendable {
    /// The leaf's public key.
    public var publicKey: P256.Signing.PublicKey
    /// The latest `notBefore` in the chain.
    public var validFrom: Date
    /// The earliest `notAfter` in the chain.
    public var validUntil: Date
}

/// Apple's extra rules for the App Store signing chain: three certificates with Apple's OIDs.
struct AppleSigningPolicy: VerifierPolicy {
    let verifyingCriticalExtensions: [ASN1ObjectIdentifier] = []

    func chainMeetsPolicyRequirements(chain: UnverifiedCertificateChain) async -> PolicyEvaluationResult {
        guard chain.count == ChainVerifier.chainLength else {
            return .failsToMeetPolicy(reason: "Apple's chain has 3 certificates, this one \(chain.count)")
        }
        guard chain[0].extensions[oid: ChainVerifier.leafOID] != nil else {
            return .failsToMeetPolicy(reason: "the leaf lacks OID 1.2.840.113635.100.6.11.1")
        }
        guard chain[1].extensions[oid: ChainVerifier.intermediateOID] != nil else {
            return .failsToMeetPolicy(reason: "the intermediate lacks OID 1.2.840.113635.100.6.2.1")
        }
        return .meetsPolicy
    }
}

/// Remembers verified chains by trusted roots, leaf and intermediate for a time to live, so the steady-state cost of a
/// verification is one ES256 check. A cached chain is used only for effective dates inside its validity.
public final class ChainCache: Sendable {
    /// What a cached chain is found by: the trusted roots, and the SHA-256 of the leaf's and the
    /// intermediate's DER.
    struct Key: Hashable {
        var trust: String
        var leaf: Data
        var intermediate: Data
    }

    private struct Entry {
        var chain: VerifiedChain
        var insertedAt: Date
    }

    /// How long a verified chain is trusted without verifying it again.
    public let timeToLive: TimeInterval
    /// How many chains are kept (Apple signs with a handful of leaves at a time).
    public let capacity: Int
    private let now: @Sendable () -> Date
    private let entries = Mutex<[Key: Entry]>([:])
    private let counters = Mutex((hits: 0, misses: 0))

    /// Creates a cache.
    ///
    /// - Parameters:
    ///   - timeToLive: Seconds a verified chain is remembered (default 15 minutes).
    ///   - capacity: The most chains kept.
    ///   - now: The clock.
    public init(timeToLive: TimeInterval = 15 * 60, capacity: Int = 32, now: @escaping @Sendable () -> Date = Date.init)
    {
        self.timeToLive = timeToLive
        self.capacity = capacity
        self.now = now
    }

    /// How many chains are cached now.
    public var count: Int { entries.withLock { $0.count } }

    /// Lookups answered from the cache and lookups that needed a full verification.
    public var statistics: (hits: Int, misses: Int) { counters.withLock { $0 } }

    func publicKey(for key: Key, at date: Date) -> P256.Signing.PublicKey? {
        let found = lookUp(key, at: date)
        counters.withLock { counts in
            if found == nil { counts.misses += 1 } else { counts.hits += 1 }
        }
        return found
    }

    private func lookUp(_ key: Key, at date: Date) -> P256.Signing.PublicKey? {
        let current = now()
        return entries.withLock { entries in
            guard let entry = entries[key] else { return nil }
            guard current.timeIntervalSince(entry.insertedAt) < timeToLive else {
                entries[key] = nil
                return nil
            }
            guard date >= entry.chain.validFrom, date <= entry.chain.validUntil else { return nil }
            return entry.chain.publicKey
        }
    }

    func remember(_ chain: VerifiedChain, for key: Key) {
        let current = now()
        entries.withLock { entries in
            if entries.count >= capacity, entries[key] == nil,
                let oldest = entries.min(by: { $0.value.insertedAt < $1.value.insertedAt })?.key
            {
                entries[oldest] = nil
            }
            entries[key] = Entry(chain: chain, insertedAt: current)
        }
    }
}
