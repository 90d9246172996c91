import Foundation
import Testing

/// Programs a test runs beside Coffer (Python, Node): found on the PATH, and run to completion.
public enum Programs {
    /// The program `name` on the PATH, or `nil` after saying why the check `what` cannot run: a failure under CI (a
    /// missing piece fails there), a warning elsewhere.
    public static func find(_ name: String, for what: String) -> String? {
        let paths = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":")
        if let found = paths.map({ "\($0)/\(name)" }).first(where: { FileManager.default.isExecutableFile(atPath: $0) })
        {
            return found
        }
        let message = "\(name) is not on the PATH, so \(what) is not run (.ci/run installs it)"
        if ProcessInfo.processInfo.environment["CI"] == "true" {
            Issue.record("\(message); a missing piece fails under CI")
        } else {
            print("⚠️  SKIPPED: \(message)")
        }
        return nil
    }

    /// Runs `program` with `arguments` and returns what it printed; one that fails throws with what it wrote to
    /// standard error. Blocks: call it through ``blockingWork(_:)`` from async code.
    public static func run(_ program: String, _ arguments: [String]) throws -> Data {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: program)
        process.arguments = arguments
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        let stderr = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw CocoaError(
                .executableLoad,
                userInfo: [NSLocalizedDescriptionKey: "\(program) failed: \(String(decoding: stderr, as: UTF8.self))"])
        }
        return data
    }
}
