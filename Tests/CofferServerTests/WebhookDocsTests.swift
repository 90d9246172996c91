import CofferService
import CofferTestSupport
import Foundation
import Testing

/// The Python and Node functions docs/webhooks.md gives a developer check what Coffer signs: a request Coffer signed is
/// accepted (with one secret, and with either of two during a rotation), and a changed body, another secret or an old
/// timestamp refused.
@Suite("docs/webhooks.md's signature checks", .timeLimit(.minutes(1)))
struct WebhookDocsTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// The first fenced block of `language` in docs/webhooks.md.
    static func snippet(_ language: String) throws -> String {
        let text = try String(contentsOf: root.appendingPathComponent("docs/webhooks.md"), encoding: .utf8)
        let start = try #require(text.range(of: "```\(language)\n"), "docs/webhooks.md has no \(language) block")
        let end = try #require(text.range(of: "\n```", range: start.upperBound..<text.endIndex))
        return String(text[start.upperBound..<end.lowerBound])
    }

    /// Runs `program file arguments...` and returns what it printed.
    static func run(_ program: String, _ file: URL, _ arguments: [String]) throws -> String {
        String(decoding: try Programs.run(program, [file.path] + arguments), as: UTF8.self)
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// What each check must say about requests Coffer signed.
    static func verdicts(_ program: String, script: String) throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("coffer-hooks-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let file = folder.appendingPathComponent("check")
        try script.write(to: file, atomically: true, encoding: .utf8)
        let body = #"{"data":{"credits":1000,"reason":"Café ☕"},"id":"e1","type":"purchase.delivered"}"#
        let bodyFile = folder.appendingPathComponent("body.json")
        try Data(body.utf8).write(to: bodyFile)
        let tampered = folder.appendingPathComponent("tampered.json")
        try Data(body.replacingOccurrences(of: "1000", with: "9000").utf8).write(to: tampered)
        let at = Date(timeIntervalSince1970: 1_767_225_600)
        let (secret, next) = ("whsec_docs_secret_0123456789", "whsec_docs_next_secret_0123")
        let header = WebhookSignature.value(body: body, secrets: [secret], at: at)
        let rotating = WebhookSignature.value(body: body, secrets: [next, secret], at: at)
        func check(_ header: String, _ body: URL, _ secret: String, _ now: TimeInterval) throws -> String {
            try run(program, file, [header, body.path, secret, String(Int(now))])
        }
        let now = at.timeIntervalSince1970 + 30
        #expect(try check(header, bodyFile, secret, now) == "ok")
        #expect(try check(rotating, bodyFile, secret, now) == "ok")
        #expect(try check(rotating, bodyFile, next, now) == "ok")
        #expect(try check(header, tampered, secret, now) == "bad")
        #expect(try check(header, bodyFile, next, now) == "bad")
        #expect(try check(header, bodyFile, secret, now + 600) == "bad")
        #expect(try check("v1=deadbeef", bodyFile, secret, now) == "bad")
    }

    @Test("the Swift function is this suite's own (compiled here), and accepts what Coffer signs")
    func swift() throws {
        let file = try String(
            contentsOf: Self.root.appendingPathComponent("Tests/CofferServerTests/WebhookDocsSwiftCheck.swift"),
            encoding: .utf8)
        #expect(
            file.hasSuffix(try Self.snippet("swift") + "\n"),
            "docs/webhooks.md's Swift differs from WebhookDocsSwiftCheck.swift")
        let body = #"{"id":"e1","type":"balance.spent"}"#
        let at = Date(timeIntervalSince1970: 1_767_225_600)
        let header = WebhookSignature.value(body: body, secrets: ["whsec_docs_secret_0123456789"], at: at)
        let now = at.addingTimeInterval(10)
        #expect(
            verifyCofferSignature(
                header: header, body: Data(body.utf8), secret: "whsec_docs_secret_0123456789", now: now))
        #expect(
            !verifyCofferSignature(
                header: header, body: Data((body + " ").utf8), secret: "whsec_docs_secret_0123456789", now: now))
        #expect(
            !verifyCofferSignature(header: header, body: Data(body.utf8), secret: "whsec_other_secret_012345", now: now)
        )
        #expect(
            !verifyCofferSignature(
                header: header, body: Data(body.utf8), secret: "whsec_docs_secret_0123456789",
                now: at.addingTimeInterval(600)))
    }

    @Test("the Python function accepts what Coffer signs and refuses the rest")
    func python() throws {
        guard let python = Programs.find("python3", for: "the Python check") else { return }
        let driver = """
            \(try Self.snippet("python"))

            import sys
            header, body_file, secret, now = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
            with open(body_file, "rb") as f:
                print("ok" if verify_coffer_signature(header, f.read(), secret, now) else "bad")
            """
        try Self.verdicts(python, script: driver)
    }

    @Test("the Node function accepts what Coffer signs and refuses the rest")
    func node() throws {
        guard let node = Programs.find("node", for: "the Node check") else { return }
        let driver = """
            \(try Self.snippet("js"))

            const fs = require("fs");
            const [header, bodyFile, secret, now] = process.argv.slice(2);
            console.log(verifyCofferSignature(header, fs.readFileSync(bodyFile), secret, Number(now)) ? "ok" : "bad");
            """
        try Self.verdicts(node, script: driver)
    }
}
