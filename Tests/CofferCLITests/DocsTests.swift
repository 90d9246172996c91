import CofferTestSupport
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The README and the guides stay true: their command blocks marked runnable (```` ```sh runnable ````) run
/// as written, the settings reference is the one the code generates, every metric is documented, and every
/// link between them leads somewhere.
@Suite("The documentation", .serialized, .timeLimit(.minutes(3)))
struct DocsTests {
    let root = ServeCommandTests().root

    /// README.md and every guide in docs/.
    var documents: [URL] {
        get throws {
            let docs = root.appendingPathComponent("docs")
            let guides = try FileManager.default.contentsOfDirectory(atPath: docs.path)
                .filter { $0.hasSuffix(".md") }.sorted().map { docs.appendingPathComponent($0) }
            return [root.appendingPathComponent("README.md")] + guides
        }
    }

    /// The runnable blocks of a document, in order.
    static func runnableBlocks(_ text: String) -> [String] {
        var blocks: [String] = []
        var current: [String]?
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if current == nil, line.trimmingCharacters(in: .whitespaces) == "```sh runnable" {
                current = []
            } else if current != nil, line.hasPrefix("```") {
                blocks.append(current!.joined(separator: "\n"))
                current = nil
            } else if current != nil {
                current!.append(String(line))
            }
        }
        return blocks
    }

    @Test("every block marked runnable runs as written, in a fresh folder with Examples/ beside it")
    func runnableBlocks() async throws {
        var ran = 0
        for document in try documents {
            let text = try String(contentsOf: document, encoding: .utf8)
            for (number, block) in Self.runnableBlocks(text).enumerated() {
                let name = "\(document.lastPathComponent) block \(number + 1)"
                let folder = FileManager.default.temporaryDirectory.appendingPathComponent("coffer-docs-\(UUID())")
                try FileManager.default.createDirectory(
                    at: folder.appendingPathComponent("Examples"), withIntermediateDirectories: true)
                defer { try? FileManager.default.removeItem(at: folder) }
                try FileManager.default.copyItem(
                    at: root.appendingPathComponent("Examples/catalog.json"),
                    to: folder.appendingPathComponent("Examples/catalog.json"))
                // The package is built already: `swift build` lines are the reader's, not the test's.
                let script =
                    "set -euo pipefail\n"
                    + block.split(separator: "\n").filter { !$0.hasPrefix("swift build") }.joined(separator: "\n")
                let bin = CofferProcess.executable.deletingLastPathComponent().path
                let output = try await CofferProcess.run(
                    ["-c", script], in: folder,
                    environment: ["PATH": bin + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")],
                    executable: "/bin/bash")
                #expect(
                    output.status == 0,
                    "\(name) failed:\n\(block)\n--- stdout\n\(output.stdout)\n--- stderr\n\(output.stderr)")
                ran += 1
            }
        }
        #expect(ran >= 3, "the README's tour and the guides' runnable blocks were not found")
    }

    @Test("docs/operations.md holds the settings reference coffer settings generates")
    func settingsReference() async throws {
        let operations = try String(
            contentsOf: root.appendingPathComponent("docs/operations.md"), encoding: .utf8)
        let generated = try await CofferProcess.run(["settings"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let begin = try #require(operations.range(of: "<!-- settings:begin -->\n"))
        let end = try #require(operations.range(of: "\n<!-- settings:end -->"))
        #expect(
            String(operations[begin.upperBound..<end.lowerBound]) == generated,
            "docs/operations.md's settings table differs from `coffer settings`: paste its output between the markers")
    }

    @Test("every metric the server exports is in docs/operations.md")
    func metricsReference() throws {
        let source = try String(
            contentsOf: root.appendingPathComponent("Sources/CofferService/ServerMetrics.swift"), encoding: .utf8)
        let operations = try String(
            contentsOf: root.appendingPathComponent("docs/operations.md"), encoding: .utf8)
        let names = source.matches(of: /Self\.name\(\s*"([a-z_]+)", "([a-z]+)"/).map { "coffer_\($0.1)_\($0.2)" }
        #expect(names.count >= 7)
        for name in names { #expect(operations.contains("`\(name)"), "docs/operations.md lacks \(name)") }
    }

    @Test("every relative link in the README and the guides leads to a file")
    func links() throws {
        for document in try documents {
            let text = try String(contentsOf: document, encoding: .utf8)
            let folder = document.deletingLastPathComponent()
            for match in text.matches(of: /\]\(([^)#\s]+)(#[^)]*)?\)/) {
                let target = String(match.1)
                guard !target.contains("://") else { continue }
                #expect(
                    FileManager.default.fileExists(atPath: folder.appendingPathComponent(target).path),
                    "\(document.lastPathComponent) links to \(target), which does not exist")
            }
        }
        let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
        #expect(readme.split(separator: "\n", omittingEmptySubsequences: false).count <= 250)
    }
}
