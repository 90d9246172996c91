import Benchmark
import BenchmarkSupport
import CofferAppStore
import Crypto
import Foundation
import Synchronization

/// Verifications per second of StoreKit 2 signed transactions, single core:
/// - the raw ES256 verification (swift-crypto), the floor of any JWS check;
/// - Coffer's verifier with a warm verified-chain cache (steady state: one ES256 check plus decoding);
/// - Coffer's verifier with no cache (every chain built and checked in full).
/// Reads the payloads written by `VerificationPayloads` from `COFFER_PAYLOADS` when set, so Apple's
/// Python library can be measured on the same ones (see `Benchmarks/verification.sh`).
let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.throughput, .wallClock],
        warmupIterations: 1,
        scalingFactor: .kilo,
        maxDuration: .seconds(10),
        maxIterations: 10
    )
    let fixture: VerificationFixture
    do {
        fixture = try VerificationFixture()
    } catch {
        FileHandle.standardError.write(Data("cannot prepare payloads: \(error)\n".utf8))
        return
    }

    Benchmark("ES256 verify, swift-crypto (raw)") { benchmark in
        for index in benchmark.scaledIterations {
            blackHole(fixture.rawVerify(index))
        }
    }

    Benchmark("verify signed transaction, warm chain cache") { benchmark in
        for index in benchmark.scaledIterations {
            blackHole(try await fixture.warm.verifyTransaction(fixture.payload(index)))
        }
    }

    Benchmark("verify signed transaction, cold (full chain each time)") { benchmark in
        for index in benchmark.scaledIterations {
            blackHole(try await fixture.cold.verifyTransaction(fixture.payload(index)))
        }
    }

    Benchmark("verify signed transaction, cold leaf (a new leaf each time, its intermediate known)") { benchmark in
        for index in benchmark.scaledIterations {
            blackHole(try await fixture.newLeafVerifier.verifyTransaction(fixture.newLeafPayload(index)))
        }
    }
}

/// The payloads and verifiers every benchmark shares.
final class VerificationFixture: Sendable {
    let transactions: [String]
    let warm: SignedDataVerifier
    let cold: SignedDataVerifier
    let rawKey: P256.Signing.PublicKey
    let rawSignature: P256.Signing.ECDSASignature
    let rawMessage: Data

    init() throws {
        let payloads: BenchmarkPayloads
        if let folder = ProcessInfo.processInfo.environment["COFFER_PAYLOADS"] {
            payloads = try BenchmarkPayloads(folder: URL(fileURLWithPath: folder))
        } else {
            payloads = try BenchmarkPayloads(count: 1_000)
        }
        transactions = payloads.transactions
        warm = try SignedDataVerifier(
            rootCertificates: [payloads.rootDER], bundleId: BenchmarkPayloads.bundleId, appAppleId: nil,
            environment: .sandbox)
        cold = try SignedDataVerifier(
            rootCertificates: [payloads.rootDER], bundleId: BenchmarkPayloads.bundleId, appAppleId: nil,
            environment: .sandbox,
            cache: nil)
        // Each payload under a new leaf: a fresh verifier (and cache) every 1,000, so every leaf is new to it; its
        // intermediate is learned from the first payload, as a server learns it from Apple's first.
        let newLeaves = try BenchmarkPayloads.newLeaves(count: 1_001)
        newLeafTransactions = Array(newLeaves.transactions.dropFirst())
        newLeafRoot = newLeaves.rootDER
        newLeafFirst = newLeaves.transactions[0]
        newLeafVerifiers = Mutex((0, nil))
        let key = P256.Signing.PrivateKey()
        rawKey = key.publicKey
        rawMessage = Data(transactions[0].utf8)
        rawSignature = try key.signature(for: rawMessage)
    }

    let newLeafTransactions: [String]
    let newLeafRoot: Data
    let newLeafFirst: String
    let newLeafVerifiers: Mutex<(Int, SignedDataVerifier?)>

    func payload(_ index: Int) -> String { transactions[index % transactions.count] }

    func newLeafPayload(_ index: Int) -> String { newLeafTransactions[index % newLeafTransactions.count] }

    /// A verifier that has seen none of the new leaves' payloads yet, only the first (its intermediate): a new
    /// one for every pass over them.
    var newLeafVerifier: SignedDataVerifier {
        get async throws {
            let (uses, current) = newLeafVerifiers.withLock { state in
                defer { state.0 += 1 }
                return state
            }
            if let current, uses % newLeafTransactions.count != 0 { return current }
            let verifier = try SignedDataVerifier(
                rootCertificates: [newLeafRoot], bundleId: BenchmarkPayloads.bundleId, appAppleId: nil,
                environment: .sandbox)
            _ = try await verifier.verifyTransaction(newLeafFirst)
            newLeafVerifiers.withLock { $0.1 = verifier }
            return verifier
        }
    }

    func rawVerify(_ index: Int) -> Bool { rawKey.isValidSignature(rawSignature, for: rawMessage) }
}
