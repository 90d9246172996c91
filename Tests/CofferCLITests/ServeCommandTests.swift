import CofferTestSupport
import Foundation
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
#if canImport(Glibc)
    import Glibc
#endif

/// What the README shows: `coffer serve`, a user created over HTTP, a transaction signed by the simulator
/// posted, the balance seen.
@Suite("coffer serve", .timeLimit(.minutes(2)))
struct ServeCommandTests {
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    func start(_ arguments: [String], in folder: URL) throws -> Process {
        let process = Process()
        process.executableURL = CofferProcess.executable
        process.arguments = arguments
        process.currentDirectoryURL = folder
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        return process
    }

    func request(_ method: String, _ url: String, token: String? = nil, body: [String: String]? = nil) async throws
        -> (status: Int, json: [String: Any])
    {
        var request = URLRequest(url: try #require(URL(string: url)))
        request.httpMethod = method
        if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        if let body { request.httpBody = try JSONSerialization.data(withJSONObject: body) }
        let (data, response) = try await URLSession.shared.data(for: request)
        let status = (response as? HTTPURLResponse)?.statusCode ?? 0
        return (status, (try? JSONSerialization.jsonObject(with: data) as? [String: Any]) ?? [:])
    }

    @Test("serve, create a user, post a simulator-signed transaction, see the balance")
    func readme() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("coffer-serve-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try FileManager.default.copyItem(
            at: root.appendingPathComponent("Examples/catalog.json"), to: folder.appendingPathComponent("catalog.json"))
        #expect(try CofferProcess.run(["appstore-sim", "init", folder.appendingPathComponent("sim").path]).status == 0)
        let (simPort, port) = (try LocalPort.free(), try LocalPort.free())
        let simulator = try start(
            [
                "appstore-sim", "serve", "--folder", "sim", "--catalog", "catalog.json", "--bundle-id",
                "com.example.app",
                "--port", String(simPort),
            ], in: folder)
        let server = try start(
            ["serve", "--bundle-id", "com.example.app", "--apple-root", "sim/root.der", "--port", String(port)],
            in: folder)
        defer {
            for process in [simulator, server] {
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
            }
        }
        let base = "http://127.0.0.1:\(port)"
        var created: (status: Int, json: [String: Any]) = (0, [:])
        for _ in 0..<100 where created.status != 201 {
            created = (try? await request("POST", base + "/v1/users")) ?? (0, [:])
            if created.status != 201 { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(created.status == 201)
        let token = try #require(created.json["token"] as? String)
        let accountToken = try #require(created.json["appAccountToken"] as? String)
        let remote = ["--server", "http://127.0.0.1:\(simPort)"]
        let bought = try CofferProcess.run(
            [
                "appstore-sim", "purchase", "--account", "alice", "--product", "com.example.credits.400k", "--quantity",
                "2", "--app-account-token", accountToken,
            ] + remote)
        #expect(bought.status == 0, "\(bought.stderr)")
        let signed = try CofferProcess.run(["appstore-sim", "signed", "2000000000"] + remote).stdout
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let delivered = try await request(
            "POST", base + "/v1/transactions", token: token, body: ["signedTransaction": signed])
        #expect(delivered.status == 200)
        #expect(delivered.json["outcome"] as? String == "delivered")
        #expect(delivered.json["balance"] as? Int == 800_000)
        let me = try await request("GET", base + "/v1/me", token: token)
        #expect(me.json["balance"] as? Int == 800_000)
        #expect(me.json["supportId"] as? String == created.json["supportId"] as? String)
        #expect(try await request("GET", base + "/v1/me").status == 401)
        // The database is a file in the working folder.
        #expect(FileManager.default.fileExists(atPath: folder.appendingPathComponent("coffer.sqlite").path))
    }
}
