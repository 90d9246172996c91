import BenchmarkSupport
import Foundation

// Writes a set of signed transactions and the root that signed them, so Coffer's verifier and Apple's
// Python library can be measured on the same payloads:
//   VerificationPayloads OUT_DIR [COUNT]
// OUT_DIR/root.der, OUT_DIR/transactions.txt (one JWS a line), OUT_DIR/bundle-id.txt.
let arguments = CommandLine.arguments
guard arguments.count >= 2 else {
    FileHandle.standardError.write(Data("usage: VerificationPayloads OUT_DIR [COUNT]\n".utf8))
    exit(64)
}
let folder = URL(fileURLWithPath: arguments[1])
let count = arguments.count > 2 ? Int(arguments[2]) ?? 1_000 : 1_000
try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
let payloads = try BenchmarkPayloads(count: count)
try payloads.rootDER.write(to: folder.appendingPathComponent("root.der"))
try Data((payloads.transactions.joined(separator: "\n") + "\n").utf8).write(
    to: folder.appendingPathComponent("transactions.txt"))
try Data(BenchmarkPayloads.bundleId.utf8).write(to: folder.appendingPathComponent("bundle-id.txt"))
print("wrote \(count) signed transactions to \(folder.path)")
