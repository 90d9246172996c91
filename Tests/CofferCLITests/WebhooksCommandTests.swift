import CofferTestSupport
import Crypto
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `coffer webhooks` as an owner runs it on the server's machine, with `coffer serve` posting to a backend (a Python
/// HTTP server that writes down each request): an endpoint added and its secret printed once, a support change heard
/// signed with it, the delivery listed, replayed with the same id, and the endpoint removed.
@Suite("coffer webhooks", .timeLimit(.minutes(2)))
struct WebhooksCommandTests {
    let serve = ServeCommandTests()

    /// A backend that answers 204 and appends each request, as one JSON line, to `requests.jsonl` in `folder`.
    static let receiver = """
        import http.server, json, sys
        class Hook(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                line = {"headers": {k.lower(): v for k, v in self.headers.items()}, "body": body.decode()}
                with open(sys.argv[2], "a") as f:
                    f.write(json.dumps(line) + "\\n")
                self.send_response(204)
                self.end_headers()
            def log_message(self, *args):
                pass
        http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), Hook).serve_forever()
        """

    static func requests(_ file: URL, count: Int) async throws -> [[String: Any]] {
        var lines: [[String: Any]] = []
        for _ in 0..<300 {
            let text = (try? String(contentsOf: file, encoding: .utf8)) ?? ""
            lines = text.split(separator: "\n").compactMap {
                try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
            }
            if lines.count >= count { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        return lines
    }

    static func hex(_ data: some Sequence<UInt8>) -> String { data.map { String(format: "%02x", $0) }.joined() }

    @Test("add, a signed event over HTTP, list, deliveries, replay with the same id, rotate, remove; bad input refused")
    func endpoint() async throws {
        let folder = try serve.temporaryFolder()
        guard let python = Programs.find("python3", for: "the webhooks command test") else { return }
        let (port, hookPort) = (try LocalPort.free(), try LocalPort.free())
        let script = folder.appendingPathComponent("receiver.py")
        try Self.receiver.write(to: script, atomically: true, encoding: .utf8)
        let log = folder.appendingPathComponent("requests.jsonl")
        let receiver = Process()
        receiver.executableURL = URL(fileURLWithPath: python)
        receiver.arguments = [script.path, String(hookPort), log.path]
        try receiver.run()
        defer {
            // SIGKILL: a child of the test process may inherit a mask that blocks SIGTERM.
            kill(receiver.processIdentifier, SIGKILL)
            receiver.waitUntilExit()
        }

        // Bad input changes nothing and says what is wrong.
        let ftp = try await CofferProcess.run(["webhooks", "add", "--url", "ftp://example.com"], in: folder)
        #expect(ftp.status != 0 && ftp.stderr.contains("https://"), Comment(rawValue: ftp.stderr))
        let unknown = try await CofferProcess.run(
            ["webhooks", "add", "--url", "https://example.com", "--events", "purchase.bought"], in: folder)
        #expect(unknown.status != 0 && unknown.stderr.contains("unknown event purchase.bought"))

        let url = "http://127.0.0.1:\(hookPort)/hooks"
        let added = try await CofferProcess.run(
            ["webhooks", "add", "--url", url, "--events", "balance.adjusted", "--json"], in: folder)
        #expect(added.status == 0, Comment(rawValue: added.stderr))
        let made = try #require(try JSONSerialization.jsonObject(with: Data(added.stdout.utf8)) as? [String: Any])
        let secret = try #require(made["secret"] as? String)
        let id = try #require((made["endpoint"] as? [String: Any])?["id"] as? String)
        #expect(id.hasPrefix("wh_") && secret.hasPrefix("whsec_"))
        let listed = try await CofferProcess.run(["webhooks", "list"], in: folder)
        #expect(listed.stdout.contains(id) && listed.stdout.contains(url) && !listed.stdout.contains(secret))

        let server = try serve.start(
            ["serve", "--bundle-id", "com.example.app", "--port", String(port), "--wallet", "server"], in: folder)
        defer {
            kill(server.processIdentifier, SIGKILL)
            server.waitUntilExit()
        }
        let (supportId, _) = try await SupportCommandTests().firstCustomer(at: "http://127.0.0.1:\(port)")
        let set = try await CofferProcess.run(
            ["set-balance", "--recipient", supportId, "--balance", "70", "--reason", "Ticket #7"], in: folder)
        #expect(set.status == 0, Comment(rawValue: set.stderr))

        let first = try await Self.requests(log, count: 1)
        try #require(first.count == 1)
        let headers = try #require(first[0]["headers"] as? [String: String])
        let body = try #require(first[0]["body"] as? String)
        let event = try #require(try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any])
        #expect(event["type"] as? String == "balance.adjusted" && event["supportId"] as? String == supportId)
        #expect((event["data"] as? [String: Any])?["balance"] as? Int == 70)
        // Coffer-Signature: t=..., v1=HMAC-SHA256(secret, "t.body"), checked here with swift-crypto.
        let signature = try #require(headers["coffer-signature"])
        let parts = Dictionary(
            signature.split(separator: ",").map { $0.split(separator: "=", maxSplits: 1).map(String.init) }
                .map { ($0[0], $0[1]) }, uniquingKeysWith: { $1 })
        let t = try #require(parts["t"])
        let mac = HMAC<SHA256>.authenticationCode(
            for: Data("\(t).\(body)".utf8), using: SymmetricKey(data: Data(secret.utf8)))
        #expect(parts["v1"] == Self.hex(mac))

        let deliveries = try await CofferProcess.run(["webhooks", "deliveries", "--json"], in: folder)
        let list = try #require(
            try JSONSerialization.jsonObject(with: Data(deliveries.stdout.utf8)) as? [[String: Any]])
        #expect(list.count == 1 && list.first?["state"] as? String == "delivered")
        #expect(list.first?["eventId"] as? String == event["id"] as? String)

        let badDate = try await CofferProcess.run(["webhooks", "replay", id, "--since", "yesterday"], in: folder)
        #expect(badDate.status != 0 && badDate.stderr.contains("--since"))
        let replayed = try await CofferProcess.run(["webhooks", "replay", id, "--since", "2020-01-01"], in: folder)
        #expect(replayed.stdout.contains("1 events queued again"), Comment(rawValue: replayed.stderr))
        let again = try await Self.requests(log, count: 2)
        try #require(again.count == 2)
        let replayedBody = try #require(again[1]["body"] as? String)
        #expect(replayedBody == body, "a replay sends the same event, byte for byte")

        let rotated = try await CofferProcess.run(["webhooks", "rotate", id], in: folder)
        #expect(rotated.status == 0 && rotated.stdout.contains("New secret"))
        #expect(try await CofferProcess.run(["webhooks", "list"], in: folder).stdout.contains("rotating"))
        let removed = try await CofferProcess.run(["webhooks", "remove", id], in: folder)
        #expect(removed.status == 0)
        #expect(try await CofferProcess.run(["webhooks", "list"], in: folder).stdout.contains("No endpoints"))
        let gone = try await CofferProcess.run(["webhooks", "remove", id], in: folder)
        #expect(gone.status != 0 && gone.stderr.contains(id))
    }

    @Test("webhook.url, webhook.secret and apple.forward.url from the config file (a list) and the variables (commas)")
    func settings() async throws {
        for viaVariables in [false, true] {
            let folder = try serve.temporaryFolder()
            let port = try LocalPort.free()
            var environment: [String: String] = [:]
            if viaVariables {
                environment = [
                    "COFFER_WEBHOOK_URL": "https://api.example.com/hooks",
                    "COFFER_WEBHOOK_SECRET": "whsec_settings_0123456789",
                    "COFFER_APPLE_FORWARD_URL": "https://old.example.com/a, https://old.example.com/b",
                ]
            } else {
                let config = """
                    {"bundle": {"id": "com.example.app"}, "webhook": {"url": "https://api.example.com/hooks",
                     "secret": "whsec_settings_0123456789"},
                     "apple": {"forward": {"url": ["https://old.example.com/a", "https://old.example.com/b"]}}}
                    """
                try config.write(to: folder.appendingPathComponent("coffer.json"), atomically: true, encoding: .utf8)
            }
            let server = try serve.start(
                ["serve", "--bundle-id", "com.example.app", "--port", String(port)], in: folder,
                environment: environment)
            defer {
                kill(server.processIdentifier, SIGKILL)
                server.waitUntilExit()
            }
            // Listening means the endpoints are recorded (before the first request is answered).
            _ = try await SupportCommandTests().firstCustomer(at: "http://127.0.0.1:\(port)")
            let listed = try await CofferProcess.run(["webhooks", "list", "--json"], in: folder)
            let endpoints = try #require(
                try JSONSerialization.jsonObject(with: Data(listed.stdout.utf8)) as? [[String: Any]])
            let byId = Dictionary(uniqueKeysWithValues: endpoints.map { ($0["id"] as? String ?? "", $0) })
            #expect(Set(byId.keys) == ["settings", "forward-1", "forward-2"])
            #expect(byId["settings"]?["url"] as? String == "https://api.example.com/hooks")
            #expect(byId["forward-2"]?["url"] as? String == "https://old.example.com/b")
            #expect(!listed.stdout.contains("whsec_settings"), "the settings' secret stays in the settings")
            let removed = try await CofferProcess.run(["webhooks", "rotate", "settings"], in: folder)
            #expect(removed.status != 0 && removed.stderr.contains("changed in the settings"))
        }

        // What cannot be taken says which setting, and nothing starts.
        let noSecret = try await CofferProcess.run(
            ["serve", "--bundle-id", "com.example.app"], environment: ["COFFER_WEBHOOK_URL": "https://api.example.com"])
        #expect(noSecret.status != 0 && noSecret.stderr.contains("webhook.secret is missing"), "\(noSecret.stderr)")
        let short = try await CofferProcess.run(
            ["serve", "--bundle-id", "com.example.app"],
            environment: ["COFFER_WEBHOOK_URL": "https://api.example.com", "COFFER_WEBHOOK_SECRET": "short"])
        #expect(short.status != 0 && short.stderr.contains("webhook.secret") && !short.stderr.contains("short\""))
        let publicHTTP = try await CofferProcess.run(
            ["serve", "--bundle-id", "com.example.app"],
            environment: ["COFFER_APPLE_FORWARD_URL": "https://ok.example.com,http://public.example.com/apple"])
        #expect(
            publicHTTP.status != 0 && publicHTTP.stderr.contains("apple.forward.url")
                && publicHTTP.stderr.contains("https://"))
    }
}
