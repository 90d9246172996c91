import CofferAppStore
import CofferSimulator
import CofferTestSupport
import Crypto
import Foundation
import Testing
import X509

/// The attack catalogue: every way to forge or bend signed data is refused with Apple's status.
@Suite("Signed data attacks")
struct AttackTests {
    static let issued = Date(timeIntervalSince1970: 1_735_689_600)  // 2025-01-01
    static let leafExpiry = Date(timeIntervalSince1970: 1_798_761_600)  // 2027-01-01
    static let signedAt: Int64 = 1_767_225_600_000  // 2026-01-01, in milliseconds

    let pki: SimulatorPKI
    let verifier: SignedDataVerifier

    init() throws {
        pki = try SimulatorPKI(validFrom: Self.issued, leafValidUntil: Self.leafExpiry)
        verifier = try SignedDataVerifier(
            rootCertificates: [pki.rootDER()], bundleId: "com.example.coffer", appAppleId: 1_234, environment: .sandbox)
    }

    static func transaction(
        bundleId: String = "com.example.coffer",
        environment: String = "Sandbox",
        signedDate: Int64 = signedAt
    ) -> [String: any Sendable] {
        [
            "transactionId": "2000000001", "originalTransactionId": "2000000001", "productId": "com.example.credits",
            "bundleId": bundleId, "environment": environment, "signedDate": signedDate, "purchaseDate": signedDate,
            "quantity": 1, "type": "Consumable", "inAppOwnershipType": "PURCHASED",
        ]
    }

    static func json(_ object: [String: any Sendable]) throws -> Data {
        try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
    }

    func status(_ signed: String, with verifier: SignedDataVerifier? = nil) async -> String {
        let verifier = verifier ?? self.verifier
        guard let error = await verificationError({ _ = try await verifier.verifyTransaction(signed) }) else {
            return "OK"
        }
        return error.status
    }

    @Test("a well-formed transaction from the trusted chain verifies")
    func baseline() async throws {
        let signed = try pki.signer().sign(payloadJSON: Self.json(Self.transaction()))
        let transaction = try await verifier.verifyTransaction(signed)
        #expect(transaction.transactionId == "2000000001")
        #expect(transaction.type == .consumable)
    }

    @Test("alg none, HS256 keyed with the public key, and ES384 are refused")
    func algorithms() async throws {
        let payload = try Self.json(Self.transaction())
        let signer = try pki.signer()
        let x5c = signer.certificateChain
        let none = try signer.sign(payloadJSON: payload, header: ["alg": "none", "x5c": x5c])
        let unsigned = none.split(separator: ".").prefix(2).joined(separator: ".") + "."
        #expect(await status(unsigned) == "VERIFICATION_FAILURE")
        #expect(await status(none) == "VERIFICATION_FAILURE")

        let headerJSON = try JSONSerialization.data(
            withJSONObject: ["alg": "HS256", "x5c": x5c], options: [.sortedKeys])
        let input = JWSSigner.base64URL(headerJSON) + "." + JWSSigner.base64URL(payload)
        let secret = SymmetricKey(data: pki.leafKey.publicKey.derRepresentation)
        let mac = HMAC<SHA256>.authenticationCode(for: Data(input.utf8), using: secret)
        #expect(await status(input + "." + JWSSigner.base64URL(Data(mac))) == "VERIFICATION_FAILURE")

        #expect(
            await status(try signer.sign(payloadJSON: payload, header: ["alg": "ES384", "x5c": x5c]))
                == "VERIFICATION_FAILURE")
    }

    @Test("an untrusted root, a leaf not issued by the presented intermediate, and a foreign signing key are refused")
    func chains() async throws {
        let payload = try Self.json(Self.transaction())
        let stranger = try SimulatorPKI(validFrom: Self.issued, leafValidUntil: Self.leafExpiry)
        #expect(await status(try stranger.signer().sign(payloadJSON: payload)) == "INVALID_CHAIN")

        let mixed = try JWSSigner(key: stranger.leafKey, chain: [stranger.leaf, pki.intermediate, pki.root])
        #expect(await status(try mixed.sign(payloadJSON: payload)) == "INVALID_CHAIN")

        let foreign = try JWSSigner(key: P256.Signing.PrivateKey(), chain: [pki.leaf, pki.intermediate, pki.root])
        #expect(await status(try foreign.sign(payloadJSON: payload)) == "VERIFICATION_FAILURE")
    }

    @Test("a leaf or intermediate without Apple's OID is refused")
    func missingOIDs() async throws {
        let payload = try Self.json(Self.transaction())
        for (leafOID, intermediateOID) in [(false, true), (true, false)] {
            var options = SimulatorPKI.Options()
            options.leafOID = leafOID
            options.intermediateOID = intermediateOID
            let broken = try SimulatorPKI(validFrom: Self.issued, leafValidUntil: Self.leafExpiry, options: options)
            let trusting = try SignedDataVerifier(
                rootCertificates: [broken.rootDER()], bundleId: "com.example.coffer", appAppleId: nil,
                environment: .sandbox)
            #expect(await status(try broken.signer().sign(payloadJSON: payload), with: trusting) == "INVALID_CHAIN")
        }
    }

    @Test("two or four certificates in x5c are refused with INVALID_CHAIN_LENGTH")
    func chainLength() async throws {
        let payload = try Self.json(Self.transaction())
        let two = try JWSSigner(key: pki.leafKey, chain: [pki.leaf, pki.intermediate])
        #expect(await status(try two.sign(payloadJSON: payload)) == "INVALID_CHAIN_LENGTH")
        let four = try JWSSigner(key: pki.leafKey, chain: [pki.leaf, pki.intermediate, pki.root, pki.root])
        #expect(await status(try four.sign(payloadJSON: payload)) == "INVALID_CHAIN_LENGTH")
    }

    @Test("a tampered payload is refused")
    func tampered() async throws {
        let signed = try pki.signer().sign(payloadJSON: Self.json(Self.transaction()))
        var parts = signed.split(separator: ".").map(String.init)
        var object = Self.transaction()
        object["quantity"] = 99
        parts[1] = JWSSigner.base64URL(try Self.json(object))
        #expect(await status(parts.joined(separator: ".")) == "VERIFICATION_FAILURE")
    }

    @Test("data signed after the leaf expired is refused, even offline")
    func expiredLeaf() async throws {
        let late = Int64(Self.leafExpiry.timeIntervalSince1970 * 1000) + 86_400_000
        let signed = try pki.signer().sign(payloadJSON: Self.json(Self.transaction(signedDate: late)))
        #expect(await status(signed) == "INVALID_CHAIN")
        let early = Int64(Self.issued.timeIntervalSince1970 * 1000) - 86_400_000
        #expect(
            await status(try pki.signer().sign(payloadJSON: Self.json(Self.transaction(signedDate: early))))
                == "INVALID_CHAIN")
    }

    @Test("wrong bundle id, environment and appAppleId are refused")
    func identifiers() async throws {
        let signer = try pki.signer()
        #expect(
            await status(try signer.sign(payloadJSON: Self.json(Self.transaction(bundleId: "com.evil"))))
                == "INVALID_APP_IDENTIFIER")
        #expect(
            await status(try signer.sign(payloadJSON: Self.json(Self.transaction(environment: "Production"))))
                == "INVALID_ENVIRONMENT")
        // Production refuses the simulator's roots, so a chain without the simulator's mark stands in for Apple's.
        var unmarked = SimulatorPKI.Options()
        unmarked.simulatorMarker = false
        let stand = try SimulatorPKI(validFrom: Self.issued, leafValidUntil: Self.leafExpiry, options: unmarked)
        let production = try SignedDataVerifier(
            rootCertificates: [stand.rootDER()], bundleId: "com.example.coffer", appAppleId: 1_234,
            environment: .production)
        let notification: [String: any Sendable] = [
            "notificationType": "TEST", "notificationUUID": UUID().uuidString, "signedDate": Self.signedAt,
            "data": ["bundleId": "com.example.coffer", "environment": "Production", "appAppleId": 999]
                as [String: any Sendable],
        ]
        let signed = try stand.signer().sign(payloadJSON: Self.json(notification))
        let error = await verificationError { _ = try await production.verifyNotification(signed) }
        #expect(error?.status == "INVALID_APP_IDENTIFIER")
    }

    @Test("a notification carrying a transaction from an untrusted chain is refused")
    func nestedUntrusted() async throws {
        let stranger = try SimulatorPKI(validFrom: Self.issued, leafValidUntil: Self.leafExpiry)
        let nested = try stranger.signer().sign(payloadJSON: Self.json(Self.transaction()))
        let notification: [String: any Sendable] = [
            "notificationType": "REFUND", "notificationUUID": UUID().uuidString, "signedDate": Self.signedAt,
            "data": ["bundleId": "com.example.coffer", "environment": "Sandbox", "signedTransactionInfo": nested]
                as [String: any Sendable],
        ]
        let signed = try pki.signer().sign(payloadJSON: Self.json(notification))
        #expect(
            await verificationError { _ = try await verifier.verifyNotification(signed) }?.status == "INVALID_CHAIN")

        let trustedNested = try pki.signer().sign(payloadJSON: Self.json(Self.transaction()))
        var good = notification
        good["data"] =
            ["bundleId": "com.example.coffer", "environment": "Sandbox", "signedTransactionInfo": trustedNested]
            as [String: any Sendable]
        let verified = try await verifier.verifyNotification(try pki.signer().sign(payloadJSON: Self.json(good)))
        #expect(verified.transaction?.transactionId == "2000000001")
        #expect(verified.payload.notificationType == .refund)
    }

    @Test("malformed base64, malformed JSON, repeated keys and oversized input are refused")
    func malformed() async throws {
        let signer = try pki.signer()
        let signed = try signer.sign(payloadJSON: Self.json(Self.transaction()))
        let parts = signed.split(separator: ".").map(String.init)
        let standardAlphabet = parts[0] + "." + parts[1].replacingOccurrences(of: "-", with: "+") + "+/." + parts[2]
        #expect(await status(standardAlphabet) == "VERIFICATION_FAILURE")
        #expect(await status(parts[0] + "." + parts[1] + "==." + parts[2]) == "VERIFICATION_FAILURE")
        #expect(await status(parts[0] + ". " + parts[1] + "." + parts[2]) == "VERIFICATION_FAILURE")
        #expect(await status(parts[0] + "." + parts[1]) == "VERIFICATION_FAILURE")
        #expect(await status(signed + ".extra") == "VERIFICATION_FAILURE")
        #expect(await status(try signer.sign(payloadJSON: Data("{\"transactionId\": ".utf8))) == "VERIFICATION_FAILURE")
        let repeated = Data(
            #"{"bundleId": "com.example.coffer", "environment": "Sandbox", "environment": "Production"}"#.utf8)
        #expect(await status(try signer.sign(payloadJSON: repeated)) == "VERIFICATION_FAILURE")
        let padded = try Self.json(
            Self.transaction().merging(["padding": String(repeating: "x", count: 70_000)]) { $1 })
        #expect(await status(try signer.sign(payloadJSON: padded)) == "VERIFICATION_FAILURE")
        let badCertificate = try signer.sign(
            payloadJSON: Self.json(Self.transaction()),
            header: ["alg": "ES256", "x5c": ["bm90IGEgY2VydGlmaWNhdGU=", "AAAA", "AAAA"]])
        #expect(await status(badCertificate) == "INVALID_CERTIFICATE")
        let urlSafeCertificate = try signer.sign(
            payloadJSON: Self.json(Self.transaction()),
            header: [
                "alg": "ES256",
                "x5c": signer.certificateChain.map { $0.replacingOccurrences(of: "=", with: "") + "-_" },
            ])
        #expect(await status(urlSafeCertificate) == "VERIFICATION_FAILURE")
    }
}

@Suite("Verified-chain cache")
struct ChainCacheTests {
    @Test("a verified chain is reused for the time to live, only inside its validity")
    func reuse() async throws {
        let pki = try SimulatorPKI(validFrom: AttackTests.issued, leafValidUntil: AttackTests.leafExpiry)
        let cache = ChainCache(timeToLive: 60)
        let verifier = try SignedDataVerifier(
            rootCertificates: [pki.rootDER()], bundleId: "com.example.coffer", appAppleId: nil, environment: .sandbox,
            cache: cache)
        let signer = try pki.signer()
        for index in 0..<5 {
            var object = AttackTests.transaction()
            object["transactionId"] = "tx-\(index)"
            _ = try await verifier.verifyTransaction(try signer.sign(payloadJSON: AttackTests.json(object)))
        }
        #expect(cache.count == 1)
        let late = Int64(AttackTests.leafExpiry.timeIntervalSince1970 * 1000) + 86_400_000
        let expired = try signer.sign(payloadJSON: AttackTests.json(AttackTests.transaction(signedDate: late)))
        #expect(
            await verificationError { _ = try await verifier.verifyTransaction(expired) }?.status == "INVALID_CHAIN")
        let forged = try JWSSigner(key: P256.Signing.PrivateKey(), chain: [pki.leaf, pki.intermediate, pki.root])
        let signed = try forged.sign(payloadJSON: AttackTests.json(AttackTests.transaction()))
        #expect(
            await verificationError { _ = try await verifier.verifyTransaction(signed) }?.status
                == "VERIFICATION_FAILURE")
    }

    @Test("junk signed under a real chain never enters the cache nor evicts a good entry")
    func junkNeverCached() async throws {
        let pki = try SimulatorPKI(validFrom: AttackTests.issued, leafValidUntil: AttackTests.leafExpiry)
        let other = try SimulatorPKI(validFrom: AttackTests.issued, leafValidUntil: AttackTests.leafExpiry)
        let cache = ChainCache(capacity: 2)
        let verifier = try SignedDataVerifier(
            rootCertificates: [pki.rootDER(), other.rootDER()], bundleId: "com.example.coffer", appAppleId: nil,
            environment: .sandbox, cache: cache)
        let genuine = try pki.signer().sign(payloadJSON: AttackTests.json(AttackTests.transaction()))
        _ = try await verifier.verifyTransaction(genuine)
        #expect(cache.count == 1)
        // Forged signatures (a stranger's key) under the other authority's real chain, each header different.
        for index in 0..<10 {
            let forger = try JWSSigner(
                key: P256.Signing.PrivateKey(), chain: [other.leaf, other.intermediate, other.root])
            var object = AttackTests.transaction()
            object["transactionId"] = "junk-\(index)"
            let junk = try forger.sign(payloadJSON: AttackTests.json(object))
            #expect(
                await verificationError { _ = try await verifier.verifyTransaction(junk) }?.status
                    == "VERIFICATION_FAILURE")
        }
        #expect(cache.count == 1, "junk made cache entries")
        let before = cache.statistics
        _ = try await verifier.verifyTransaction(genuine)
        #expect(cache.statistics.hits == before.hits + 1, "the good entry was evicted")
    }

    @Test("an entry older than the time to live is verified again")
    func expiry() async throws {
        let pki = try SimulatorPKI(validFrom: AttackTests.issued, leafValidUntil: AttackTests.leafExpiry)
        let clock = TestClock()
        let cache = ChainCache(timeToLive: 60, now: { clock.now() })
        let chains = try ChainVerifier(rootCertificates: [pki.rootDER()], cache: cache)
        let x5c = try pki.signer().certificateChain
        let date = Date(timeIntervalSince1970: 1_767_225_600)
        _ = try await chains.verify(x5c: x5c, at: date)
        _ = try await chains.verify(x5c: x5c, at: date)
        #expect(cache.statistics == (hits: 1, misses: 1))
        clock.advance(61)
        _ = try await chains.verify(x5c: x5c, at: date)
        #expect(cache.statistics == (hits: 1, misses: 2))
        #expect(cache.count == 1)
    }

    /// A transaction with `id`, signed by `authority`'s leaf.
    static func signed(_ authority: SimulatorPKI, _ id: String) throws -> String {
        var object = AttackTests.transaction()
        object["transactionId"] = id
        return try authority.signer().sign(payloadJSON: AttackTests.json(object))
    }

    @Test("a new leaf under an intermediate verified before: only the leaf is verified, with the whole policy")
    func newLeafUnderKnownIntermediate() async throws {
        let pki = try SimulatorPKI(validFrom: AttackTests.issued, leafValidUntil: AttackTests.leafExpiry)
        let cache = ChainCache()
        let verifier = try SignedDataVerifier(
            rootCertificates: [pki.rootDER()], bundleId: "com.example.coffer", appAppleId: nil, environment: .sandbox,
            cache: cache)
        _ = try await verifier.verifyTransaction(try Self.signed(pki, "first"))
        #expect(cache.intermediateHits == 0)
        // Apple's next leaf under the same intermediate.
        let renewed = try pki.withNewLeaf(validFrom: AttackTests.issued, validUntil: AttackTests.leafExpiry)
        let transaction = try await verifier.verifyTransaction(try Self.signed(renewed, "second"))
        #expect(transaction.transactionId == "second")
        #expect(cache.intermediateHits == 1)
        #expect(cache.count == 2)

        // A leaf expired at the signed date: refused as the whole chain's check refuses it.
        let expired = try pki.withNewLeaf(
            validFrom: AttackTests.issued, validUntil: AttackTests.issued.addingTimeInterval(86_400))
        let late = await verificationError {
            _ = try await verifier.verifyTransaction(try Self.signed(expired, "late"))
        }
        #expect(late?.status == "INVALID_CHAIN")
        #expect(cache.intermediateHits == 2)

        // A stranger's leaf presenting the known intermediate: no chain, refused.
        let stranger = try SimulatorPKI(validFrom: AttackTests.issued, leafValidUntil: AttackTests.leafExpiry)
        let forged = try JWSSigner(key: stranger.leafKey, chain: [stranger.leaf, pki.intermediate, pki.root])
        var object = AttackTests.transaction()
        object["transactionId"] = "forged"
        let signed = try forged.sign(payloadJSON: AttackTests.json(object))
        let refused = await verificationError { _ = try await verifier.verifyTransaction(signed) }
        #expect(refused?.status == "INVALID_CHAIN")
        #expect(cache.intermediateHits == 3)
        #expect(cache.count == 2, "a refused leaf entered the cache")
    }

    @Test("a chain verified through a remembered intermediate lives no longer than that intermediate's verification")
    func anchoredChainExpiresWithItsAnchor() async throws {
        let pki = try SimulatorPKI(validFrom: AttackTests.issued, leafValidUntil: AttackTests.leafExpiry)
        let clock = TestClock()
        let cache = ChainCache(timeToLive: 60, now: { clock.now() })
        let verifier = try SignedDataVerifier(
            rootCertificates: [pki.rootDER()], bundleId: "com.example.coffer", appAppleId: nil, environment: .sandbox,
            cache: cache)
        _ = try await verifier.verifyTransaction(try Self.signed(pki, "first"))
        clock.advance(40)
        let renewed = try pki.withNewLeaf(validFrom: AttackTests.issued, validUntil: AttackTests.leafExpiry)
        _ = try await verifier.verifyTransaction(try Self.signed(renewed, "second"))
        #expect(cache.intermediateHits == 1)
        _ = try await verifier.verifyTransaction(try Self.signed(renewed, "third"))
        #expect(cache.statistics == (hits: 1, misses: 2), "the new leaf's chain is remembered")
        // 61 s after the intermediate was verified with its root (21 s after the new leaf was): both are
        // verified again, whole, and the miss is counted once.
        clock.advance(21)
        _ = try await verifier.verifyTransaction(try Self.signed(renewed, "fourth"))
        #expect(cache.statistics == (hits: 1, misses: 3))
        #expect(cache.intermediateHits == 1, "the intermediate outlived its time to live")
    }

    @Test("a header seen before is recognised by its bytes; a forged signature under it is still refused")
    func headerSeenBefore() async throws {
        let pki = try SimulatorPKI(validFrom: AttackTests.issued, leafValidUntil: AttackTests.leafExpiry)
        let cache = ChainCache()
        let verifier = try SignedDataVerifier(
            rootCertificates: [pki.rootDER()], bundleId: "com.example.coffer", appAppleId: nil, environment: .sandbox,
            cache: cache)
        let signer = try pki.signer()
        for index in 0..<3 {
            var object = AttackTests.transaction()
            object["transactionId"] = "tx-\(index)"
            _ = try await verifier.verifyTransaction(try signer.sign(payloadJSON: AttackTests.json(object)))
        }
        #expect(cache.statistics == (hits: 2, misses: 1))
        // The same header bytes over a payload the leaf never signed.
        let genuine = try signer.sign(payloadJSON: AttackTests.json(AttackTests.transaction()))
        let parts = genuine.split(separator: ".").map(String.init)
        var object = AttackTests.transaction()
        object["transactionId"] = "tampered"
        let tampered = parts[0] + "." + Base64URL.encode(try AttackTests.json(object)) + "." + parts[2]
        let error = await verificationError { _ = try await verifier.verifyTransaction(tampered) }
        #expect(error?.status == "VERIFICATION_FAILURE")
        // A header whose bytes differ (a `typ` added) is decoded and checked again: its chain is the cached one.
        let other = try signer.sign(
            payloadJSON: AttackTests.json(object),
            header: ["alg": "ES256", "typ": "JWT", "x5c": signer.certificateChain])
        _ = try await verifier.verifyTransaction(other)
        #expect(cache.statistics == (hits: 4, misses: 1))
        // Back to the first header, now found among those kept rather than as the last one: a genuine payload's
        // digest goes on from that header's kept hash and verifies; a tampered one under it still does not.
        var again = AttackTests.transaction()
        again["transactionId"] = "tx-again"
        #expect(
            try await verifier.verifyTransaction(try signer.sign(payloadJSON: AttackTests.json(again))).transactionId
                == "tx-again")
        #expect(cache.statistics == (hits: 5, misses: 1))
        _ = try await verifier.verifyTransaction(other)
        #expect(
            await verificationError { _ = try await verifier.verifyTransaction(tampered) }?.status
                == "VERIFICATION_FAILURE")
        // ... and one that names another algorithm is refused even though its chain is cached.
        let wrong = try signer.sign(
            payloadJSON: AttackTests.json(object), header: ["alg": "ES384", "x5c": signer.certificateChain])
        #expect(
            await verificationError { _ = try await verifier.verifyTransaction(wrong) }?.status
                == "VERIFICATION_FAILURE")
        // A header equal to a known one as a String but not in bytes (U+212A KELVIN SIGN is canonically
        // equivalent to "K"): not recognised, and refused as the malformed header it is.
        let known = genuine.split(separator: ".").map(String.init)
        guard let k = known[0].firstIndex(of: "K") else {
            Issue.record("the header has no K to replace")
            return
        }
        var lookalike = known[0]
        lookalike.replaceSubrange(k...k, with: "\u{212A}")
        #expect(lookalike == known[0] && !lookalike.utf8.elementsEqual(known[0].utf8))
        let before = cache.statistics
        let foreign = lookalike + "." + known[1] + "." + known[2]
        #expect(await verificationError { _ = try await verifier.verifyTransaction(foreign) } != nil)
        #expect(cache.statistics.hits == before.hits, "a byte-different header was recognised")
    }

    @Test("a cache shared by verifiers with different roots never lends one verifier's trust to another")
    func sharedCache() async throws {
        let pki = try SimulatorPKI(validFrom: AttackTests.issued, leafValidUntil: AttackTests.leafExpiry)
        let cache = ChainCache()
        let x5c = try pki.signer().certificateChain
        let date = Date(timeIntervalSince1970: 1_767_225_600)
        _ = try await ChainVerifier(rootCertificates: [pki.rootDER()], cache: cache).verify(x5c: x5c, at: date)
        let untrusting = try ChainVerifier(rootCertificates: [AppleRoots.rootCAG3()], cache: cache)
        let error = await verificationError { _ = try await untrusting.verify(x5c: x5c, at: date) }
        #expect(error?.status == "INVALID_CHAIN")
    }
}

@Suite("Strict base64")
struct Base64Tests {
    @Test("JWS segments: base64url without padding only; certificates: standard base64 with padding only")
    func alphabets() async throws {
        let pki = try SimulatorPKI(validFrom: AttackTests.issued, leafValidUntil: AttackTests.leafExpiry)
        let verifier = try SignedDataVerifier(
            rootCertificates: [pki.rootDER()], bundleId: "com.example.coffer", appAppleId: nil, environment: .sandbox)
        let signer = try pki.signer()
        let payload = try AttackTests.json(AttackTests.transaction())
        let good = try signer.sign(payloadJSON: payload)
        _ = try await verifier.verifyTransaction(good)
        // Non-zero bits after the last byte: a second spelling of the same bytes is refused.
        let parts = good.split(separator: ".").map(String.init)
        var signature = Array(parts[2].utf8)
        let last = signature.count - 1
        let table = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
        if let position = table.firstIndex(of: signature[last]), position % 4 == 0 {
            signature[last] = table[position + 1]
            let variant = parts[0] + "." + parts[1] + "." + String(decoding: signature, as: UTF8.self)
            #expect(
                await verificationError { _ = try await verifier.verifyTransaction(variant) }?.status
                    == "VERIFICATION_FAILURE")
        }
        let unpadded = try signer.sign(
            payloadJSON: payload,
            header: ["alg": "ES256", "x5c": signer.certificateChain.map { $0.replacingOccurrences(of: "=", with: "") }])
        let status = await verificationError { _ = try await verifier.verifyTransaction(unpadded) }?.status
        // Certificates whose DER length is a multiple of 3 need no padding; any other must keep it. Only the
        // leaf and the intermediate are read (the x5c's root is never trusted; the pinned one is used), so
        // only theirs count: whether they need padding depends on this run's random keys.
        let needsPadding = signer.certificateChain.prefix(2).contains { $0.hasSuffix("=") }
        #expect(status == (needsPadding ? "VERIFICATION_FAILURE" : nil))
    }
}
