import AsyncHTTPClient
import CofferAppStore
import CofferSimulator
import CofferTestSupport
import Crypto
import Foundation
import Testing
import X509

/// Online checks against real OCSP responders: `openssl ocsp` answering good, revoked and unknown, and a
/// responder nobody answers at.
@Suite("Online OCSP checks against openssl ocsp", .serialized)
struct OnlineCheckTests {
    /// A chain naming two local responders: one for the leaf (signed by the intermediate), one for the
    /// intermediate (signed by the root), as Apple's chain names ocsp.apple.com.
    struct Setup {
        let folder: URL
        let pki: SimulatorPKI
        let leafPort: UInt16
        let intermediatePort: UInt16

        init(ocsp: Bool = true) throws {
            folder = FileManager.default.temporaryDirectory.appendingPathComponent("coffer-ocsp-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            leafPort = try LocalPort.free()
            intermediatePort = try LocalPort.free()
            var options = SimulatorPKI.Options()
            if ocsp {
                options.leafOCSPResponder = "http://127.0.0.1:\(leafPort)/"
                options.intermediateOCSPResponder = "http://127.0.0.1:\(intermediatePort)/"
            }
            pki = try SimulatorPKI(
                validFrom: Date().addingTimeInterval(-86_400), leafValidUntil: Date().addingTimeInterval(86_400 * 30),
                options: options)
        }

        /// Starts the leaf's responder (the intermediate answers for it).
        func leafResponder(_ status: OCSPAnswer) throws -> OpenSSLResponder {
            try OpenSSLResponder(
                folder: folder, name: "leaf", port: leafPort, issuer: pki.intermediate, issuerKey: pki.intermediateKey,
                subject: pki.leaf, status: status)
        }

        /// Starts the intermediate's responder (the root answers for it).
        func intermediateResponder(_ status: OCSPAnswer) throws -> OpenSSLResponder {
            try OpenSSLResponder(
                folder: folder, name: "intermediate", port: intermediatePort, issuer: pki.root, issuerKey: pki.rootKey,
                subject: pki.intermediate, status: status)
        }

        func transaction() throws -> String {
            let signedDate = Int64(Date().timeIntervalSince1970 * 1000)
            let payload: [String: any Sendable] = [
                "transactionId": "2000000001", "originalTransactionId": "2000000001",
                "productId": "com.example.credits", "bundleId": "com.example.coffer", "environment": "Sandbox",
                "signedDate": signedDate, "purchaseDate": signedDate, "quantity": 1, "type": "Consumable",
            ]
            return try pki.signer().sign(payloadJSON: JSONSerialization.data(withJSONObject: payload))
        }

        /// Verifies a fresh transaction online; `nil` when it verified.
        func verifyOnline(cache: ChainCache? = nil) async throws -> VerificationError? {
            let http = HTTPClient(eventLoopGroupProvider: .singleton)
            let verifier = try SignedDataVerifier(
                rootCertificates: [pki.rootDER()], bundleId: "com.example.coffer", appAppleId: nil,
                environment: .sandbox,
                validationTime: .online(RevocationChecker(httpClient: http, timeout: .seconds(2))),
                cache: cache)
            let signed = try transaction()
            var failure: VerificationError?
            do {
                _ = try await verifier.verifyTransaction(signed)
            } catch {
                failure = error
            }
            try await http.shutdown()
            return failure
        }
    }

    @Test("leaf and intermediate both good: verified")
    func good() async throws {
        let setup = try Setup()
        let leaf = try setup.leafResponder(.good)
        let intermediate = try setup.intermediateResponder(.good)
        defer {
            leaf.stop()
            intermediate.stop()
        }
        let failure = try await setup.verifyOnline()
        #expect(failure == nil, "\(String(describing: failure))")
    }

    @Test(
        "a revoked leaf or intermediate is refused with INVALID_CERTIFICATE, an unknown status fails hard",
        arguments: [
            (OCSPAnswer.revoked, OCSPAnswer.good, "INVALID_CERTIFICATE", "revoked"),
            (.good, .revoked, "INVALID_CERTIFICATE", "revoked"),
            (.unknown, .good, "INVALID_CHAIN", "unknown"),
        ])
    func refused(leafAnswer: OCSPAnswer, intermediateAnswer: OCSPAnswer, status: String, reason: String)
        async throws
    {
        let setup = try Setup()
        let leaf = try setup.leafResponder(leafAnswer)
        let intermediate = try setup.intermediateResponder(intermediateAnswer)
        defer {
            leaf.stop()
            intermediate.stop()
        }
        let failure = try #require(try await setup.verifyOnline())
        #expect(failure.status == status)
        #expect(failure.message.contains(reason), "\(failure)")
    }

    @Test("an unreachable responder gives RETRYABLE_VERIFICATION_FAILURE, and nothing of it is cached")
    func unreachable() async throws {
        let setup = try Setup()
        let intermediate = try setup.intermediateResponder(.good)
        defer { intermediate.stop() }
        let cache = ChainCache()
        let failure = try #require(try await setup.verifyOnline(cache: cache))
        #expect(failure.status == "RETRYABLE_VERIFICATION_FAILURE")
        #expect(failure.message.contains("127.0.0.1:\(setup.leafPort)"))
        #expect(cache.count == 0)

        // The responder comes back: the same chain verifies.
        let leaf = try setup.leafResponder(.good)
        defer { leaf.stop() }
        let retried = try await setup.verifyOnline(cache: cache)
        #expect(retried == nil, "\(String(describing: retried))")
        #expect(cache.count == 1)
    }

    @Test("a chain that names no OCSP responder is refused online, accepted offline")
    func noResponder() async throws {
        let setup = try Setup(ocsp: false)
        let failure = try #require(try await setup.verifyOnline())
        #expect(failure.status == "INVALID_CHAIN")
        #expect(failure.message.contains("names no OCSP responder"))

        let offline = try SignedDataVerifier(
            rootCertificates: [setup.pki.rootDER()], bundleId: "com.example.coffer", appAppleId: nil,
            environment: .sandbox)
        _ = try await offline.verifyTransaction(setup.transaction())
    }
}
