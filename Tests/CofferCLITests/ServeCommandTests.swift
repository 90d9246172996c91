import CofferCore
import CofferSimulator
import CofferStorePostgres
import CofferTestSupport
import Foundation
import Testing

@testable import CofferCLI

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

    func start(_ arguments: [String], in folder: URL, environment: [String: String] = [:], output: Pipe? = nil)
        throws -> Process
    {
        let process = Process()
        process.executableURL = CofferProcess.executable
        process.arguments = arguments
        process.currentDirectoryURL = folder
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        process.standardOutput = output ?? FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        return process
    }

    /// Starts `coffer serve`, reads its start line and stops it (on a thread of its own: the read blocks).
    func startLine(_ arguments: [String], in folder: URL, environment: [String: String] = [:]) async throws
        -> String
    {
        let output = Pipe()
        let server = try start(arguments, in: folder, environment: environment, output: output)
        defer {
            kill(server.processIdentifier, SIGKILL)
            server.waitUntilExit()
        }
        let reading = output.fileHandleForReading
        return try await blockingWork {
            var line = ""
            while !line.contains("\n") {
                let data = reading.availableData
                if data.isEmpty { break }
                line += String(decoding: data, as: UTF8.self)
            }
            return line
        }
    }

    func temporaryFolder() throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("coffer-serve-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try FileManager.default.copyItem(
            at: root.appendingPathComponent("Examples/catalog.json"), to: folder.appendingPathComponent("catalog.json"))
        return folder
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

    /// Kills `processes` and waits for them.
    static func stop(_ processes: [Process]) {
        for process in processes {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    /// `POST /v1/users` on the server at `base` once it answers (within about 10 s).
    func firstUser(_ base: String) async throws -> (status: Int, json: [String: Any]) {
        var created: (status: Int, json: [String: Any]) = (0, [:])
        for _ in 0..<100 where created.status != 201 {
            created = (try? await request("POST", base + "/v1/users")) ?? (0, [:])
            if created.status != 201 { try await Task.sleep(for: .milliseconds(100)) }
        }
        return created
    }

    @Test("serve, create a user, post a simulator-signed transaction, see the balance")
    func readme() async throws {
        let folder = try temporaryFolder()
        #expect(
            try await CofferProcess.run(["appstore-sim", "init", folder.appendingPathComponent("sim").path]).status == 0
        )
        let (simPort, port) = (try LocalPort.free(), try LocalPort.free())
        let simulator = try start(
            [
                "appstore-sim", "serve", "--folder", "sim", "--catalog", "catalog.json", "--bundle-id",
                "com.example.app", "--port", String(simPort), "--notify",
                "http://127.0.0.1:\(port)/v1/apple/notifications", "--time-scale", "3600000",
            ], in: folder)
        let server = try start(
            ["serve", "--bundle-id", "com.example.app", "--apple-root", "sim/root.der", "--port", String(port)],
            in: folder)
        defer { Self.stop([simulator, server]) }
        let base = "http://127.0.0.1:\(port)"
        let created = try await firstUser(base)
        #expect(created.status == 201)
        let token = try #require(created.json["token"] as? String)
        let accountToken = try #require(created.json["appAccountToken"] as? String)
        let remote = ["--server", "http://127.0.0.1:\(simPort)"]
        let bought = try await CofferProcess.run(
            [
                "appstore-sim", "purchase", "--account", "alice", "--product", "com.example.credits.400k", "--quantity",
                "2", "--app-account-token", accountToken,
            ] + remote)
        #expect(bought.status == 0, "\(bought.stderr)")
        let signed = try await CofferProcess.run(["appstore-sim", "signed", "2000000000"] + remote).stdout
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let delivered = try await request(
            "POST", base + "/v1/transactions", token: token, body: ["signedTransaction": signed])
        #expect(delivered.status == 200)
        // Apple's ONE_TIME_CHARGE notification names the user too: whichever arrives first delivers it.
        #expect(["delivered", "duplicate"].contains(delivered.json["outcome"] as? String))
        #expect(delivered.json["balance"] as? Int == 800_000)
        let me = try await request("GET", base + "/v1/me", token: token)
        #expect(me.json["balance"] as? Int == 800_000)
        #expect(me.json["supportId"] as? String == created.json["supportId"] as? String)
        #expect(try await request("GET", base + "/v1/me").status == 401)

        // Apple refunds it: the notification reaches the server, which takes the credits back.
        let refunded = try await CofferProcess.run(["appstore-sim", "refund", "2000000000"] + remote)
        #expect(refunded.status == 0, "\(refunded.stderr)")
        var balance: Int?
        for _ in 0..<100 {
            balance = try await request("GET", base + "/v1/me", token: token).json["balance"] as? Int
            if balance == 0 { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(balance == 0)
        let history = try await CofferProcess.run(["appstore-sim", "history", "alice", "--json"] + remote)
        #expect(history.stdout.contains("REFUND"))
        // Every post reached the server and was answered 200.
        #expect(history.stdout.contains("SUCCESS"))
        #expect(!history.stdout.contains("UNSUCCESSFUL_HTTP_RESPONSE_CODE"))
        // The database is a file in the working folder.
        #expect(FileManager.default.fileExists(atPath: folder.appendingPathComponent("coffer.sqlite").path))
    }

    @Test("settings come from flags, then COFFER_* variables, then the config file; bad values name their key")
    func settings() async throws {
        let folder = try temporaryFolder()
        let (filePort, flagPort) = (try LocalPort.free(), try LocalPort.free())
        let config = """
            {"bundle": {"id": "com.example.app"}, "port": \(filePort), "wallet": "device",
             "database": {"url": "sqlite:from-file.sqlite"}, "recovery": {"interval": 0}}
            """
        try config.write(to: folder.appendingPathComponent("coffer.json"), atomically: true, encoding: .utf8)
        let line = try await startLine(
            ["serve", "--config", "coffer.json", "--port", String(flagPort)], in: folder,
            environment: ["COFFER_WALLET": "server"])
        #expect(line.contains("server wallet"))
        #expect(line.contains("http://127.0.0.1:\(flagPort)"))
        #expect(line.contains("SQLite from-file.sqlite"))

        let bad = try await CofferProcess.run(["serve", "--bundle-id", "com.example.app", "--port", "99999"])
        #expect(bad.status != 0)
        #expect(bad.stderr.contains("port is \"99999\""))
        try #"{"bundle": {"id": "x"}, "wallet": "cloud"}"#.write(
            to: folder.appendingPathComponent("bad.json"), atomically: true, encoding: .utf8)
        let wrongWallet = try await CofferProcess.run([
            "serve", "--config", folder.appendingPathComponent("bad.json").path,
        ])
        #expect(wrongWallet.stderr.contains("wallet is \"cloud\"; expected device or server"))
        let missing = try await CofferProcess.run(["serve"])
        #expect(missing.stderr.contains("bundle.id is missing"))
        #expect(missing.stderr.contains("COFFER_BUNDLE_ID"))
    }

    @Test("panel.remote refuses to start without secure cookies and a panel.host, saying why")
    func panelRemoteNeedsTLSSettings() async throws {
        let insecure = try await CofferProcess.run(
            ["serve", "--bundle-id", "com.example.app"], environment: ["COFFER_PANEL_REMOTE": "true"])
        #expect(insecure.status != 0)
        #expect(insecure.stderr.contains("panel.secure.cookies"), "\(insecure.stderr)")
        let hostless = try await CofferProcess.run(
            ["serve", "--bundle-id", "com.example.app"],
            environment: ["COFFER_PANEL_REMOTE": "true", "COFFER_PANEL_SECURE_COOKIES": "true"])
        #expect(hostless.status != 0)
        #expect(hostless.stderr.contains("panel.host"), "\(hostless.stderr)")
        let badProxy = try await CofferProcess.run(
            ["serve", "--bundle-id", "com.example.app"], environment: ["COFFER_SERVER_TRUSTED_PROXIES": "10.0.0.0/99"])
        #expect(badProxy.status != 0)
        #expect(badProxy.stderr.contains("server.trusted.proxies"))
    }

    @Test("xcode.certificate: refused in Production, off loopback and unreadable; on loopback the start line says so")
    func xcodeCertificate() async throws {
        let certificate = try apple("xcode/xcode-certificate.pem")
        let production = try await CofferProcess.run(
            [
                "serve", "--bundle-id", "com.example.app", "--app-apple-id", "1", "--environment", "Production",
                "--xcode-certificate", certificate,
            ])
        #expect(production.status != 0)
        #expect(production.stderr.contains("xcode.certificate"), "\(production.stderr)")
        let remote = try await CofferProcess.run(
            ["serve", "--bundle-id", "com.example.app", "--host", "0.0.0.0", "--xcode-certificate", certificate])
        #expect(remote.status != 0)
        #expect(remote.stderr.contains("loopback"), "\(remote.stderr)")
        let folder = try temporaryFolder()
        let unreadable = try await CofferProcess.run(
            [
                "serve", "--bundle-id", "com.example.app", "--catalog",
                folder.appendingPathComponent("catalog.json").path,
            ],
            environment: ["COFFER_XCODE_CERTIFICATE": "/nonexistent.pem"])
        #expect(unreadable.status == 2)
        #expect(unreadable.stderr.contains("Xcode certificate"), "\(unreadable.stderr)")

        let line = try await startLine(
            [
                "serve", "--bundle-id", "com.example.app", "--port", String(try LocalPort.free()),
                "--xcode-certificate", certificate,
            ], in: folder)
        #expect(
            line.contains("accepting Xcode's StoreKit testing data signed by certificate 16c47dfe09825de0"), "\(line)")
    }

    @Test("docs/operations.md documents every setting with its variable")
    func documented() async throws {
        let readme = try String(contentsOf: root.appendingPathComponent("docs/operations.md"), encoding: .utf8)
        let help = try await CofferProcess.run(["serve", "--help"]).stdout
        #expect(help.contains("--config"))
        for setting in ServeSettings.keys {
            #expect(readme.contains("`\(setting.key)`"), "docs/operations.md lacks \(setting.key)")
            #expect(
                readme.contains("`\(setting.environmentVariable)`"),
                "docs/operations.md lacks \(setting.environmentVariable)")
        }
    }

    @Test(
        "PostgreSQL: coffer serve with a catalog of currencies starts and records its first; another first is refused",
        .enabled(if: TestPostgres.url != nil || TestPostgres.required, "\(TestPostgres.missing)"))
    func keptCurrencyPostgres() async throws {
        let folder = try temporaryFolder()
        let url = try await TestPostgres.freshDatabase()
        func catalog(_ currencies: [String]) throws {
            let listed = currencies.map { #"{"id": "\#($0)"}"# }.joined(separator: ", ")
            try #"{"currencies": [\#(listed)], "products": [{"id": "a", "kind": "consumable", "credits": 5}]}"#
                .write(to: folder.appendingPathComponent("catalog.json"), atomically: true, encoding: .utf8)
        }
        let server = ["COFFER_WALLET": "server"]
        try catalog(["coins", "gems"])
        let port = try LocalPort.free()
        let serving = try start(
            ["serve", "--bundle-id", "com.example.app", "--port", String(port), "--database-url", url], in: folder,
            environment: server)
        var ready = false
        for _ in 0..<150 where !ready {
            ready = (try? await request("GET", "http://127.0.0.1:\(port)/readyz"))?.status == 200
            if !ready { try await Task.sleep(for: .milliseconds(100)) }
        }
        kill(serving.processIdentifier, SIGKILL)
        serving.waitUntilExit()
        #expect(ready, "coffer serve on PostgreSQL with currencies did not come up")
        try catalog(["gems", "coins"])
        let swapped = try await CofferProcess.run(
            ["serve", "--bundle-id", "com.example.app", "--port", String(try LocalPort.free()), "--database-url", url],
            in: folder, environment: server)
        #expect(
            swapped.status == 2 && swapped.stderr.contains("Error: catalog: the catalog lists gems first"),
            "\(swapped.stderr)")
    }

    @Test(
        "two servers on one PostgreSQL: 50 concurrent posts of one transaction and its notification credit once",
        .enabled(if: TestPostgres.url != nil || TestPostgres.required, "\(TestPostgres.missing)"))
    func twoServersOnePostgres() async throws {
        let folder = try temporaryFolder()
        let url = try await TestPostgres.freshDatabase()
        #expect(
            try await CofferProcess.run(["appstore-sim", "init", folder.appendingPathComponent("sim").path]).status == 0
        )
        let ports = [try LocalPort.free(), try LocalPort.free()]
        let servers = try ports.map { port in
            try start(
                [
                    "serve", "--bundle-id", "com.example.app", "--apple-root", "sim/root.der", "--port", String(port),
                    "--database-url", url,
                ], in: folder)
        }
        defer {
            for process in servers {
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
            }
        }
        let bases = ports.map { "http://127.0.0.1:\($0)" }
        var created: (status: Int, json: [String: Any]) = (0, [:])
        for _ in 0..<150 where created.status != 201 {
            created = (try? await request("POST", bases[0] + "/v1/users")) ?? (0, [:])
            if created.status != 201 { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(created.status == 201)
        for _ in 0..<150 {
            if (try? await request("GET", bases[1] + "/readyz"))?.status == 200 { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        let token = try #require(created.json["token"] as? String)
        let accountText = try #require(created.json["appAccountToken"] as? String)
        let accountToken = try #require(UUID(uuidString: accountText))

        // Apple's side, in this process, signing with the simulator chain the servers trust.
        let pki = try SimulatorPKI(folder: folder.appendingPathComponent("sim"))
        let catalog = try Catalog(json: Data(contentsOf: folder.appendingPathComponent("catalog.json")))
        let apple = SimulatedAppStore(
            catalog: catalog, configuration: SimulatorConfiguration(bundleId: "com.example.app", appAppleId: 1_234),
            signer: try pki.signer(), clock: SimulatorClock(start: Date()))
        let bought = try await apple.purchase(
            account: "alice", productId: "com.example.credits.400k", appAccountToken: accountToken)
        let id = try #require(bought.transactionIds.first)
        let signed = try await apple.signedTransaction(id: id)
        let notification = try #require(await apple.sentNotifications().first).signedPayload

        let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
            for index in 0..<50 {
                let base = bases[index % 2]
                group.addTask {
                    if index % 4 < 2 {
                        return try await request(
                            "POST", base + "/v1/transactions", token: token, body: ["signedTransaction": signed]
                        ).status
                    }
                    return try await request(
                        "POST", base + "/v1/apple/notifications", body: ["signedPayload": notification]
                    ).status
                }
            }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(statuses.allSatisfy { $0 == 200 }, "\(statuses)")
        for base in bases {
            #expect(try await request("GET", base + "/v1/me", token: token).json["balance"] as? Int == 400_000)
        }
        let store = try await PostgresStore(url: url, maximumConnections: 2)
        defer { store.close() }
        let user = try #require(try await store.user(appAccountToken: accountToken, environment: .sandbox))
        let entries = try await store.entries(owner: user.id, environment: .sandbox)
        #expect(entries.map(\.key.rawValue) == ["purchase:\(id)"])
        let recorded = try await store.notifications(
            environment: .sandbox, transactionId: id, outcome: nil, limit: 10)
        #expect(recorded.count == 1)
    }
}
