// Verification speed, every case side by side in one process: rounds of 1,000 verifications of each case,
// interleaved so the machine's drift touches them all alike, then percentiles of the rounds.
//
//   VerificationLoop [--rounds 15] [--only raw|raw-jws|warm|new-leaf|cold|decode|foundation]
//
// Cases: the raw ES256 check (swift-crypto, the floor of any JWS check): `raw` checks one signature of one message
// 1,000 times (the same inputs each time, as the issue 3 and 20 runs measured it), `raw-jws` checks each of the
// 1,000 transactions' own signature over its own signing input, hashed in the loop, with the leaf's key (distinct
// signatures, as a stream of Apple's data has: a plain check of the same data, which hashes the whole signing input
// each time where the warm verifier goes on from its header's kept hash); Coffer's verifier with a warm cache (the
// steady state: one ES256 check plus splitting and decoding); a new leaf each time under an intermediate
// verified before (Apple signs with new leaves under one intermediate); cold (no cache: the whole chain
// built and checked every time); and, for the payload alone, Coffer's strict decoder beside Foundation's
// JSONDecoder (`decode`, `foundation`).
import BenchmarkSupport
import CofferAppStore
import Crypto
import Foundation

let arguments = CommandLine.arguments
func option(_ name: String) -> String? {
    arguments.firstIndex(of: "--\(name)").flatMap { $0 + 1 < arguments.count ? arguments[$0 + 1] : nil }
}
let rounds = Int(option("rounds") ?? "15") ?? 15
let only = option("only")
let perRound = 1_000

let payloads = try BenchmarkPayloads(count: perRound)
let newLeaves = try BenchmarkPayloads.newLeaves(count: perRound + 1)
func verifier(_ root: Data, cache: ChainCache?) throws -> SignedDataVerifier {
    try SignedDataVerifier(
        rootCertificates: [root], bundleId: BenchmarkPayloads.bundleId, appAppleId: nil, environment: .sandbox,
        cache: cache)
}
let warm = try verifier(payloads.rootDER, cache: ChainCache())
let cold = try verifier(payloads.rootDER, cache: nil)
let key = P256.Signing.PrivateKey()
let message = Data(payloads.transactions[0].utf8)
let signature = try key.signature(for: message)
let decodedPayloads = payloads.transactions.map { jws -> Data in
    var segment = String(jws.split(separator: ".")[1]).replacingOccurrences(of: "-", with: "+")
        .replacingOccurrences(of: "_", with: "/")
    while segment.count % 4 != 0 { segment += "=" }
    return Data(base64Encoded: segment) ?? Data()
}

/// The same transactions as raw ES256 checks: each JWS's own signature over its own signing input (hashed in the
/// loop, header and payload, as any verifier must), with the leaf's key read once from the chain.
let signedParts = try payloads.transactions.map { jws -> (input: Data, signature: P256.Signing.ECDSASignature) in
    let parts = jws.split(separator: ".")
    var segment = String(parts[2]).replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
    while segment.count % 4 != 0 { segment += "=" }
    let signature = try P256.Signing.ECDSASignature(rawRepresentation: Data(base64Encoded: segment) ?? Data())
    return (Data("\(parts[0]).\(parts[1])".utf8), signature)
}
let leafKey: P256.Signing.PublicKey = try await {
    var header = String(payloads.transactions[0].split(separator: ".")[0]).replacingOccurrences(of: "-", with: "+")
        .replacingOccurrences(of: "_", with: "/")
    while header.count % 4 != 0 { header += "=" }
    let object = try JSONSerialization.jsonObject(with: Data(base64Encoded: header)!) as! [String: Any]
    let chain = try ChainVerifier(rootCertificates: [payloads.rootDER], cache: nil)
    return try await chain.verify(x5c: object["x5c"] as! [String], at: Date())
}()

/// Microseconds per verification of one round of `name`.
func round(_ name: String) async throws -> Double {
    var checked = 0
    let started = ContinuousClock.now
    switch name {
    case "decode":
        for payload in decodedPayloads {
            checked +=
                try AppleJSON.decode(JWSTransactionDecodedPayload.self, from: payload).quantity.map(Int.init) ?? 0
        }
    case "foundation":
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .millisecondsSince1970
        for payload in decodedPayloads {
            checked += try decoder.decode(JWSTransactionDecodedPayload.self, from: payload).quantity.map(Int.init) ?? 0
        }
    case "raw":
        for _ in 0..<perRound where key.publicKey.isValidSignature(signature, for: message) { checked += 1 }
    case "raw-jws":
        for part in signedParts where leafKey.isValidSignature(part.signature, for: SHA256.hash(data: part.input)) {
            checked += 1
        }
    case "warm":
        for payload in payloads.transactions {
            checked += try await warm.verifyTransaction(payload).quantity.map(Int.init) ?? 0
        }
    case "new-leaf":
        // A fresh verifier that has seen only the first payload (its intermediate), so every leaf after is new.
        let fresh = try verifier(newLeaves.rootDER, cache: ChainCache(capacity: 2 * perRound))
        _ = try await fresh.verifyTransaction(newLeaves.transactions[0])
        let measured = ContinuousClock.now
        for payload in newLeaves.transactions.dropFirst() {
            checked += try await fresh.verifyTransaction(payload).quantity.map(Int.init) ?? 0
        }
        return Double((ContinuousClock.now - measured) / .microseconds(1)) / Double(perRound)
    default:
        for payload in payloads.transactions {
            checked += try await cold.verifyTransaction(payload).quantity.map(Int.init) ?? 0
        }
    }
    precondition(checked == perRound, "every verification must succeed")
    return Double((ContinuousClock.now - started) / .microseconds(1)) / Double(perRound)
}

let cases = only.map { [$0] } ?? ["raw", "raw-jws", "warm", "new-leaf", "cold", "decode", "foundation"]
var samples: [String: [Double]] = [:]
for name in cases { _ = try await round(name) }  // warm-up
for _ in 0..<rounds {
    for name in cases { samples[name, default: []].append(try await round(name)) }
}
func percentile(_ values: [Double], _ p: Double) -> Double {
    let sorted = values.sorted()
    return sorted[min(sorted.count - 1, Int(Double(sorted.count - 1) * p))]
}
print("| case | p0 | p25 | p50 | p75 | max | p50 vs raw | p50 vs raw-jws |")
print("|---|---|---|---|---|---|---|---|")
let floors = ["raw", "raw-jws"].map { name in samples[name].map { percentile($0, 0.5) } }
for name in cases {
    let values = samples[name] ?? []
    let cells = [0, 0.25, 0.5, 0.75, 1].map { String(format: "%.1f µs", percentile(values, $0)) }
    let shares = floors.map { floor in
        floor.map { String(format: "%.0f%%", 100 * $0 / percentile(values, 0.5)) } ?? ""
    }
    print("| \(name) | " + (cells + shares).joined(separator: " | ") + " |")
}
