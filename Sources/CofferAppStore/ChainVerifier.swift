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
        /// The chain's cache key when it was found in the cache.
        var key: ChainCache.Key?
        /// The JWS header the chain came in, to recognise by its bytes once its signature verified.
        var header: Data?
        /// SHA-256 over the header's bytes and the dot after them, when the header was recognised: the signing
        /// input's digest goes on from it over the payload alone (see ``JWS/signingInputDigest(continuing:)``).
        var signingPrefix: SHA256?
    }

    /// Verifies the chain in a JWS header. The caller remembers the chain (``remember(_:)``) once the
    /// JWS's signature verified with the key.
    func verify(_ jws: JWS, at date: Date) async throws(VerificationError) -> LeafKey {
        // A header whose bytes were seen before, with a chain that verified and signed genuine data, was checked
        // then: the same bytes say the same algorithm and chain.
        if let cache, let known = jws.withHeaderBytes({ cache.chainKey(header: $0, trust: trustIdentity) }),
            let cached = cache.publicKey(for: known.key, at: date, countingMiss: false)
        {
            return LeafKey(publicKey: cached, pending: nil, signingPrefix: known.signingPrefix)
        }
        let header = try jws.header()
        guard header.alg == "ES256" else {
            throw .verificationFailure("algorithm \(header.alg ?? "none") is not ES256")
        }
        guard let x5c = header.x5c, !x5c.isEmpty else { throw .verificationFailure("the x5c header is missing") }
        guard x5c.count == Self.chainLength else { throw .invalidChainLength(x5c.count) }
        var leaf = try await leafKey(x5c: x5c, at: date)
        leaf.header = jws.headerBytes
        return leaf
    }

    /// Remembers a chain verified by ``verify(_:at:)`` whose signature then verified.
    func remember(_ leaf: LeafKey) {
        guard let cache else { return }
        if let pending = leaf.pending {
            cache.remember(pending.chain, for: pending.key)
            if revocation == nil, let anchor = pending.chain.anchor { cache.remember(anchor, for: pending.key.anchor) }
        }
        if let header = leaf.header, let key = leaf.pending?.key ?? leaf.key {
            cache.remember(header: header, trust: trustIdentity, key: key)
        }
    }

    private func leafKey(x5c: [String], at date: Date) async throws(VerificationError) -> LeafKey {
        var ders: [Data] = []
        for (index, text) in x5c.prefix(2).enumerated() {
            ders.append(try Base64.decode(standard: text, what: "x5c certificate \(index)"))
        }
        let key = ChainCache.Key(
            trust: trustIdentity, leaf: Data(SHA256.hash(data: ders[0])), intermediate: Data(SHA256.hash(data: ders[1]))
        )
        if let cached = cache?.publicKey(for: key, at: date) { return LeafKey(publicKey: cached, key: key) }
        let leaf = try Self.certificate(ders[0], index: 0)
        let verified: VerifiedChain
        // A new leaf under an intermediate verified before (Apple signs with new leaves under one intermediate):
        // only the leaf is verified, through the intermediate as its anchor, with the same policy. Online checks
        // always verify the whole chain, so both certificates are checked for revocation.
        if revocation == nil, let anchor = cache?.intermediate(for: key.anchor, at: date) {
            verified = try await verify(leaf: leaf, through: anchor, at: date)
        } else {
            verified = try await verify(leaf: leaf, intermediate: try Self.certificate(ders[1], index: 1), at: date)
        }
        return LeafKey(publicKey: verified.publicKey, pending: (key, verified))
    }

    private static func certificate(_ der: Data, index: Int) throws(VerificationError) -> Certificate {
        do {
            return try Certificate(derEncoded: [UInt8](der))
        } catch {
            throw .invalidCertificate("x5c certificate \(index) cannot be parsed: \(error)")
        }
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
            throw Self.failure(result, at: date, unreachable: online?.requester.unreachable)
        }
        let certificates = Array(chain)
        var verified = try Self.verified(certificates, at: date)
        // The intermediate and the root: an anchor for the next leaf under this intermediate.
        let authorities = certificates.dropFirst()
        verified.anchor = VerifiedIntermediate(
            certificate: intermediate, validFrom: authorities.map(\.notValidBefore).max() ?? date,
            validUntil: authorities.map(\.notValidAfter).min() ?? date)
        return verified
    }

    /// Verifies a leaf at `date` through an intermediate verified before (``ChainCache/intermediate(for:at:)``),
    /// with the same policies as a whole chain: the intermediate is the anchor, and the window it was valid in
    /// with its root bounds the result.
    func verify(leaf: Certificate, through anchor: VerifiedIntermediate, at date: Date) async throws(VerificationError)
        -> VerifiedChain
    {
        var verifier = Verifier(rootCertificates: CertificateStore([anchor.certificate])) {
            RFC5280Policy(validationTime: date)
            AppleSigningPolicy(length: 2)
        }
        let result = await verifier.validate(leaf: leaf, intermediates: CertificateStore())
        guard case .validCertificate(let chain) = result else {
            throw Self.failure(result, at: date, unreachable: nil)
        }
        var verified = try Self.verified(Array(chain), at: date)
        verified.validFrom = max(verified.validFrom, anchor.validFrom)
        verified.validUntil = min(verified.validUntil, anchor.validUntil)
        verified.verifiedAt = anchor.verifiedAt
        return verified
    }

    /// The leaf's key and the window in which every certificate of a valid chain is valid.
    private static func verified(_ certificates: [Certificate], at date: Date) throws(VerificationError)
        -> VerifiedChain
    {
        guard let leaf = certificates.first, let publicKey = P256.Signing.PublicKey(leaf.publicKey) else {
            throw .invalidCertificate("the leaf key is not P-256")
        }
        let notBefore = certificates.map(\.notValidBefore).max() ?? date
        let notAfter = certificates.map(\.notValidAfter).min() ?? date
        return VerifiedChain(publicKey: publicKey, validFrom: notBefore, validUntil: notAfter)
    }

    /// Why a chain did not verify, in the verifier's words.
    private static func failure(_ result: CertificateValidationResult, at date: Date, unreachable: String?)
        -> VerificationError
    {
        let reasons =
            if case .couldNotValidate(let failures) = result {
                failures.map { String(describing: $0.policyFailureReason) }
            } else {
                [String]()
            }
        let when = date.formatted(.iso8601)
        if reasons.contains(where: { $0.contains("expired") || $0.contains("not yet valid") }) {
            return .invalidChain("a certificate in the chain is not valid at \(when)")
        }
        if let reason = reasons.first(where: { $0.contains("Apple's chain") || $0.contains("lacks OID") }) {
            return .invalidChain(reason)
        }
        if let unreachable { return .retryableVerificationFailure(unreachable) }
        if let reason = reasons.first(where: { $0.contains("revoked") }) { return .invalidCertificate(reason) }
        if let reason = reasons.first(where: { $0.contains("OCSP") }) {
            return .invalidChain("the online check failed: \(reason)")
        }
        return .invalidChain("no chain from the leaf through the presented intermediate to a trusted root at \(when)")
    }
}

/// An intermediate whose chain to a trusted root verified, and the dates between which it and its root are
/// both valid: the anchor for verifying another leaf it signed.
struct VerifiedIntermediate: Sendable {
    var certificate: Certificate
    var validFrom: Date
    var validUntil: Date
    /// When the cache remembered it (set by ``ChainCache/intermediate(for:at:)``): a chain verified through it
    /// is remembered as of then, so nothing outlives the time to live of the intermediate's own verification.
    var verifiedAt: Date?
}

/// A chain that verified: the leaf's key and the dates between which every certificate in it is valid.
public struct VerifiedChain: Sendable {
    /// The leaf's public key.
    public var publicKey: P256.Signing.PublicKey
    /// The latest `notBefore` in the chain.
    public var validFrom: Date
    /// The earliest `notAfter` in the chain.
    public var validUntil: Date
    /// The intermediate, verified up to its root, when the whole chain was verified.
    var anchor: VerifiedIntermediate?
    /// When the intermediate it was verified through was verified; `nil` for a whole chain verified now.
    var verifiedAt: Date?

    init(publicKey: P256.Signing.PublicKey, validFrom: Date, validUntil: Date) {
        self.publicKey = publicKey
        self.validFrom = validFrom
        self.validUntil = validUntil
    }
}

/// Apple's extra rules for the App Store signing chain: three certificates with Apple's OIDs.
struct AppleSigningPolicy: VerifierPolicy {
    let verifyingCriticalExtensions: [ASN1ObjectIdentifier] = []
    /// The certificates the verified chain holds: 3, or 2 from a leaf to an intermediate verified before.
    var length = ChainVerifier.chainLength

    func chainMeetsPolicyRequirements(chain: UnverifiedCertificateChain) async -> PolicyEvaluationResult {
        guard chain.count == length else {
            return .failsToMeetPolicy(reason: "Apple's chain has \(length) certificates here, this one \(chain.count)")
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
/// verification is one ES256 check. A cached chain is used only for effective dates inside its validity. It also
/// remembers the header bytes that named each chain (so a header seen before is not decoded again), and each
/// intermediate verified up to a root (so a new leaf under it costs the leaf's check alone).
public final class ChainCache: Sendable {
    /// What a cached chain is found by: the trusted roots, and the SHA-256 of the leaf's and the
    /// intermediate's DER.
    struct Key: Hashable {
        var trust: String
        var leaf: Data
        var intermediate: Data

        /// The intermediate's own key: what its verification up to a root is found by.
        var anchor: AnchorKey { AnchorKey(trust: trust, intermediate: intermediate) }
    }

    /// What a verified intermediate is found by: the trusted roots and the SHA-256 of its DER.
    struct AnchorKey: Hashable {
        var trust: String
        var intermediate: Data
    }

    /// What a JWS header seen before is found by: the trusted roots and the header segment's bytes exactly as
    /// sent (not a String of them: String equality is Unicode canonical equivalence, and decoding replaces
    /// invalid UTF-8), hashed whole.
    private struct HeaderKey: Hashable {
        var trust: String
        var segment: Data

        func hash(into hasher: inout Hasher) {
            hasher.combine(trust)
            segment.withUnsafeBytes { hasher.combine(bytes: $0) }
        }
    }

    /// How long a verified chain is trusted without verifying it again.
    public let timeToLive: TimeInterval
    /// How many chains are kept (Apple signs with a handful of leaves at a time).
    public let capacity: Int
    private let now: @Sendable () -> Date
    private let entries = Mutex(TimedEntries<Key, VerifiedChain>())
    private let anchors = Mutex(TimedEntries<AnchorKey, VerifiedIntermediate>())
    private let headers = Mutex<[HeaderKey: KnownHeader]>([:])
    /// The header found or remembered last, compared first.
    private let lastHeader = Mutex<(trust: String, segment: Data, known: KnownHeader)?>(nil)
    private let counters = Mutex((hits: 0, misses: 0))
    private let intermediateCounter = Mutex(0)

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
    public var count: Int { entries.withLock { $0.values.count } }

    /// Chain lookups answered from the cache, and those that missed: the chain was then verified, whole or (see
    /// ``intermediateHits``) its leaf alone through an intermediate verified before.
    public var statistics: (hits: Int, misses: Int) { counters.withLock { $0 } }

    /// Chain lookups that missed but found the intermediate verified before, so only the leaf was verified.
    public var intermediateHits: Int { intermediateCounter.withLock { $0 } }

    /// The key of a chain verified before, valid at `date`. A lookup through a header seen before counts no
    /// miss (`countingMiss` false): the lookup by the header's certificates that follows counts it.
    func publicKey(for key: Key, at date: Date, countingMiss: Bool = true) -> P256.Signing.PublicKey? {
        let found = lookUp(key, at: date)
        counters.withLock { counts in
            if found != nil {
                counts.hits += 1
            } else if countingMiss {
                counts.misses += 1
            }
        }
        return found
    }

    private func lookUp(_ key: Key, at date: Date) -> P256.Signing.PublicKey? {
        let current = now()
        return entries.withLock { entries in
            entries.value(for: key, now: current, timeToLive: timeToLive)
                .flatMap { date >= $0.validFrom && date <= $0.validUntil ? $0.publicKey : nil }
        }
    }

    /// A header seen before: the chain it names, and SHA-256 over its bytes and the dot that ends it (every JWS
    /// under this header starts its signing input with those bytes, so its digest goes on from there).
    struct KnownHeader: Sendable {
        let key: Key
        let signingPrefix: SHA256
    }

    /// The chain a header seen before named, when its chain verified and signed genuine data. The header Apple
    /// signed with last is compared first, byte for byte, before any hashing: a steady stream of data comes
    /// under one or a few leaves.
    func chainKey(header: UnsafeRawBufferPointer, trust: String) -> KnownHeader? {
        let last = lastHeader.withLock { last -> KnownHeader? in
            guard let last, last.trust == trust, last.segment.count == header.count else { return nil }
            let same = last.segment.withUnsafeBytes { segment in
                guard let left = segment.baseAddress, let right = header.baseAddress else { return header.isEmpty }
                return memcmp(left, right, header.count) == 0
            }
            return same ? last.known : nil
        }
        if let last { return last }
        let headerKey = HeaderKey(trust: trust, segment: Data(header))
        guard let known = headers.withLock({ $0[headerKey] }) else { return nil }
        lastHeader.withLock { $0 = (trust, headerKey.segment, known) }
        return known
    }

    /// Remembers that `header` names the chain `key`: at most `capacity` headers are kept (a new one past it
    /// starts the list again, and a header forgotten is only decoded again).
    func remember(header: Data, trust: String, key: Key) {
        // A copy of its own: the header given may be a slice that would keep the whole signed data alive.
        let headerKey = HeaderKey(trust: trust, segment: Data(header))
        var prefix = SHA256()
        prefix.update(data: headerKey.segment)
        prefix.update(data: Data(".".utf8))
        let known = KnownHeader(key: key, signingPrefix: prefix)
        headers.withLock { headers in
            if headers.count >= capacity, headers[headerKey] == nil { headers.removeAll(keepingCapacity: true) }
            headers[headerKey] = known
        }
        lastHeader.withLock { $0 = (trust, headerKey.segment, known) }
    }

    /// An intermediate verified up to a trusted root within the time to live, valid with its root at `date`.
    func intermediate(for key: AnchorKey, at date: Date) -> VerifiedIntermediate? {
        let current = now()
        let found = anchors.withLock { anchors in
            anchors.entry(for: key, now: current, timeToLive: timeToLive)
                .flatMap { entry -> VerifiedIntermediate? in
                    guard date >= entry.value.validFrom && date <= entry.value.validUntil else { return nil }
                    var anchor = entry.value
                    anchor.verifiedAt = entry.insertedAt
                    return anchor
                }
        }
        if found != nil { intermediateCounter.withLock { $0 += 1 } }
        return found
    }

    /// Remembers an intermediate verified up to a trusted root (as part of a chain whose signature verified).
    func remember(_ anchor: VerifiedIntermediate, for key: AnchorKey) {
        let current = now()
        anchors.withLock { $0.insert(anchor, for: key, now: current, capacity: capacity) }
    }

    func remember(_ chain: VerifiedChain, for key: Key) {
        let current = chain.verifiedAt.map { min($0, now()) } ?? now()
        // Kept without its intermediate's certificate (remembered apart, as an anchor): each lookup copies the
        // entry out, and a certificate is many references to retain and release.
        var kept = chain
        kept.anchor = nil
        entries.withLock { $0.insert(kept, for: key, now: current, capacity: capacity) }
    }
}

/// Values remembered for a time to live, at most a capacity of them (the oldest goes first).
private struct TimedEntries<Key: Hashable, Value> {
    var values: [Key: (value: Value, insertedAt: Date)] = [:]

    /// The value for `key` unless it is older than `timeToLive` (then it is forgotten).
    mutating func value(for key: Key, now: Date, timeToLive: TimeInterval) -> Value? {
        entry(for: key, now: now, timeToLive: timeToLive)?.value
    }

    /// The value for `key` and when it was remembered, unless it is older than `timeToLive` (then it is forgotten).
    mutating func entry(for key: Key, now: Date, timeToLive: TimeInterval) -> (value: Value, insertedAt: Date)? {
        guard let entry = values[key] else { return nil }
        guard now.timeIntervalSince(entry.insertedAt) < timeToLive else {
            values[key] = nil
            return nil
        }
        return entry
    }

    mutating func insert(_ value: Value, for key: Key, now: Date, capacity: Int) {
        if values.count >= capacity, values[key] == nil,
            let oldest = values.min(by: { $0.value.insertedAt < $1.value.insertedAt })?.key
        {
            values[oldest] = nil
        }
        values[key] = (value, now)
    }
}
