import CofferTestSupport
import Foundation
import Testing

/// `coffer reconcile` as an operator runs it: the server's settings, its database and its In-App Purchase key, here
/// against `coffer appstore-sim serve`, with no notification ever reaching the server.
@Suite("coffer reconcile", .timeLimit(.minutes(2)))
struct ReconcileCommandTests {
    let serve = ServeCommandTests()

    @Test("a purchase and a refund only Apple knew of: reported, settled by --repair, and the second run finds nothing")
    func repair() async throws {
        let folder = try serve.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        #expect(
            try await CofferProcess.run(["appstore-sim", "init", folder.appendingPathComponent("sim").path]).status == 0
        )
        let (simPort, port) = (try LocalPort.free(), try LocalPort.free())
        // The simulator posts no notifications anywhere: only the app and the App Store Server API tell Coffer.
        let simulator = try serve.start(
            [
                "appstore-sim", "serve", "--folder", "sim", "--catalog", "catalog.json", "--bundle-id",
                "com.example.app", "--port", String(simPort),
            ], in: folder)
        let server = try serve.start(
            ["serve", "--bundle-id", "com.example.app", "--apple-root", "sim/root.der", "--port", String(port)],
            in: folder)
        defer { ServeCommandTests.stop([simulator, server]) }
        let base = "http://127.0.0.1:\(port)"
        let created = try await serve.firstUser(base)
        let token = try #require(created.json["token"] as? String)
        let accountToken = try #require(created.json["appAccountToken"] as? String)
        let supportId = try #require(created.json["supportId"] as? String)
        let remote = ["--server", "http://127.0.0.1:\(simPort)"]
        let buy = ["appstore-sim", "purchase", "--account", "alice", "--product", "com.example.credits.400k"]
        #expect(try await CofferProcess.run(buy + ["--app-account-token", accountToken] + remote).status == 0)
        let signed = try await CofferProcess.run(["appstore-sim", "signed", "2000000000"] + remote).stdout
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let delivered = try await serve.request(
            "POST", base + "/v1/transactions", token: token, body: ["signedTransaction": signed])
        #expect(delivered.json["balance"] as? Int == 400_000)
        // A second purchase the app never presented, and a refund of the first: only Apple knows.
        #expect(try await CofferProcess.run(buy + ["--app-account-token", accountToken] + remote).status == 0)
        #expect(try await CofferProcess.run(["appstore-sim", "refund", "2000000000"] + remote).status == 0)
        kill(server.processIdentifier, SIGKILL)
        server.waitUntilExit()

        let key =
            try JSONSerialization.jsonObject(
                with: Data(contentsOf: folder.appendingPathComponent("sim/api-key.json"))) as? [String: Any]
        let environment = [
            "COFFER_APPSTORE_KEY_ID": try #require(key?["keyId"] as? String),
            "COFFER_APPSTORE_ISSUER_ID": try #require(key?["issuerId"] as? String),
            "COFFER_APPSTORE_PRIVATE_KEY": folder.appendingPathComponent("sim")
                .appendingPathComponent(try #require(key?["privateKeyFile"] as? String)).path,
            "COFFER_APPSTORE_URL": "http://127.0.0.1:\(simPort)",
        ]
        let flags = ["reconcile", "--bundle-id", "com.example.app", "--apple-root", "sim/root.der"]
        let report = try await CofferProcess.run(flags, in: folder, environment: environment)
        #expect(report.status == 0, "\(report.stderr)")
        #expect(report.stdout.contains("\(supportId)  missing-refund  2000000000"), "\(report.stdout)")
        #expect(report.stdout.contains("\(supportId)  missing-purchase  2000000002"), "\(report.stdout)")
        #expect(report.stdout.contains("2 discrepancies, 0 repaired, 2 left for support"))

        let repaired = try await CofferProcess.run(
            flags + ["--repair", "--json"], in: folder, environment: environment)
        #expect(repaired.status == 0, "\(repaired.stderr)")
        let answer = try JSONSerialization.jsonObject(with: Data(repaired.stdout.utf8)) as? [String: Any]
        let run = try #require(answer?["run"] as? [String: Any])
        #expect(run["found"] as? Int == 2 && run["repaired"] as? Int == 2 && run["left"] as? Int == 0)
        let items = try #require(answer?["discrepancies"] as? [[String: Any]])
        #expect(Set(items.compactMap { $0["kind"] as? String }) == ["missing-refund", "missing-purchase"])
        #expect(items.allSatisfy { $0["repairedAt"] != nil && $0["supportId"] as? String == supportId })

        let again = try await CofferProcess.run(
            flags + ["--repair", "--customer", supportId], in: folder, environment: environment)
        #expect(again.status == 0, "\(again.stderr)")
        #expect(again.stdout.contains("The ledger agrees with Apple."), "\(again.stdout)")
        let shown = try await CofferProcess.run(["user", supportId, "--json"], in: folder)
        let balance =
            (try JSONSerialization.jsonObject(with: Data(shown.stdout.utf8)) as? [String: Any])
            .flatMap { $0["user"] as? [String: Any] }?["balance"] as? Int
        #expect(balance == 400_000, "\(shown.stdout)")
    }

    @Test("what it needs is said plainly: the key, a Support ID, a date")
    func refusals() async throws {
        let folder = try serve.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let flags = ["reconcile", "--bundle-id", "com.example.app"]
        let keyless = try await CofferProcess.run(flags, in: folder)
        #expect(keyless.status != 0)
        #expect(keyless.stderr.contains("In-App Purchase key"), "\(keyless.stderr)")
        let badId = try await CofferProcess.run(flags + ["--customer", "bob"], in: folder)
        #expect(badId.stderr.contains("--customer is bob"), "\(badId.stderr)")
        let badDate = try await CofferProcess.run(flags + ["--since", "yesterday"], in: folder)
        #expect(badDate.stderr.contains("--since is yesterday"), "\(badDate.stderr)")
    }
}
