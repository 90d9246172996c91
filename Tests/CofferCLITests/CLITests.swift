import CofferCore
import CofferStore
import CofferStoreSQLite
import CofferTestSupport
import Foundation
import Testing

/// Runs the built `coffer` executable as a user would, capturing its output.
struct CofferProcess {
    struct Output {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    /// The `coffer` binary next to the test bundle (`COFFER_BIN` overrides).
    static var executable: URL {
        if let path = ProcessInfo.processInfo.environment["COFFER_BIN"] { return URL(fileURLWithPath: path) }
        let bundle = Bundle.main.bundleURL
        let folder = bundle.pathExtension == "xctest" ? bundle.deletingLastPathComponent() : bundle
        return folder.appendingPathComponent("coffer")
    }

    /// Runs the command and waits for it on the calling thread: only for a thread of its own (``run(_:in:environment:executable:)``).
    static func runBlocking(
        _ arguments: [String], in folder: URL? = nil, environment: [String: String] = [:],
        executable other: String? = nil
    ) throws -> Output {
        let process = Process()
        process.executableURL = other.map(URL.init(fileURLWithPath:)) ?? executable
        process.arguments = arguments
        if let folder { process.currentDirectoryURL = folder }
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        let stderr = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Output(
            status: process.terminationStatus, stdout: String(decoding: stdout, as: UTF8.self),
            stderr: String(decoding: stderr, as: UTF8.self))
    }

    /// Runs the command on a thread of its own: waiting for a command that takes seconds must not hold one of the
    /// few threads Swift concurrency runs every suite on (on 2 cores, two such waits stall every test in the
    /// process, and tests waiting on PostgreSQL meanwhile miss their deadlines).
    static func run(
        _ arguments: [String], in folder: URL? = nil, environment: [String: String] = [:], executable: String? = nil
    ) async throws -> Output {
        try await blockingWork {
            try runBlocking(arguments, in: folder, environment: environment, executable: executable)
        }
    }
}

@Suite("coffer command line")
struct CLITests {
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    func temporaryFile(_ name: String) throws -> String {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("coffer-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return folder.appendingPathComponent(name).path
    }

    @Test("--help lists the commands")
    func help() async throws {
        let output = try await CofferProcess.run(["--help"])
        #expect(output.status == 0)
        for command in ["catalog", "ledger", "migrate"] { #expect(output.stdout.contains(command)) }
    }

    @Test("catalog check accepts the example catalog and lists its products")
    func catalogCheck() async throws {
        let output = try await CofferProcess.run([
            "catalog", "check", root.appendingPathComponent("Examples/catalog.json").path,
        ])
        #expect(output.status == 0)
        #expect(output.stdout.contains("OK, 4 products, 1 loyalty rules"))
        #expect(output.stdout.contains("com.example.credits.400k  consumable     400000"))
        #expect(output.stdout.contains("loyalty: 12 paid periods of pro unlock premium, lifetime"))
    }

    @Test("catalog check --json prints the parsed catalog")
    func catalogJSON() async throws {
        let output = try await CofferProcess.run([
            "catalog", "check", "--json", root.appendingPathComponent("Examples/catalog.json").path,
        ])
        #expect(output.status == 0)
        let object = try JSONSerialization.jsonObject(with: Data(output.stdout.utf8)) as? [String: Any]
        #expect((object?["products"] as? [Any])?.count == 4)
    }

    @Test("catalog check refuses a bad catalog with exit 1 and a message naming the fault")
    func catalogRefused() async throws {
        let path = try temporaryFile("bad.json")
        try Data(#"{"products": [{"id": "a", "kind": "consumable", "credits": -1}]}"#.utf8).write(
            to: URL(fileURLWithPath: path))
        let output = try await CofferProcess.run(["catalog", "check", path])
        #expect(output.status == 1)
        #expect(output.stderr.contains("product a: credits must not be negative (got -1)"))
        let missing = try await CofferProcess.run(["catalog", "check", "/nonexistent/catalog.json"])
        #expect(missing.status == 1)
        #expect(missing.stderr.contains("cannot read"))
    }

    @Test("catalog check names the catalog's currencies, one or several")
    func catalogCurrencies() async throws {
        let one = try temporaryFile("coins.json")
        let oneText =
            #"{"currencies": [{"id": "coins", "name": "Coins"}], "products": [{"id": "a", "kind": "consumable", "#
            + #""credits": {"coins": 500}}]}"#
        try Data(oneText.utf8).write(to: URL(fileURLWithPath: one))
        let named = try await CofferProcess.run(["catalog", "check", one])
        #expect(named.status == 0)
        #expect(named.stdout.contains("currency: coins (Coins)"))
        #expect(named.stdout.contains("a        consumable  500"))
        let several = try temporaryFile("coins-and-gems.json")
        let severalText =
            #"{"currencies": [{"id": "coins"}, {"id": "gems"}], "products": [{"id": "a", "kind": "consumable", "#
            + #""credits": {"coins": 500, "gems": 5}}]}"#
        try Data(severalText.utf8).write(to: URL(fileURLWithPath: several))
        let both = try await CofferProcess.run(["catalog", "check", several])
        #expect(both.status == 0, "\(both.stderr)")
        #expect(both.stdout.contains("coins") && both.stdout.contains("gems"), "\(both.stdout)")
    }

    @Test(
        "the database keeps its default currency: a catalog listing another first is refused, saying which to list first"
    )
    func keptCurrency() async throws {
        let path = try temporaryFile("kept.sqlite")
        let folder = URL(fileURLWithPath: path).deletingLastPathComponent()
        #expect(try await CofferProcess.run(["migrate", "--database", path]).status == 0)
        func catalog(_ currencies: [String]) throws {
            let listed = currencies.map { #"{"id": "\#($0)"}"# }.joined(separator: ", ")
            try #"{"currencies": [\#(listed)], "products": [{"id": "a", "kind": "consumable", "credits": 5}]}"#
                .write(to: folder.appendingPathComponent("catalog.json"), atomically: true, encoding: .utf8)
        }
        // Several currencies are the server wallet's.
        let server = ["COFFER_WALLET": "server"]
        let users = ["users", "--database-url", "sqlite:" + path, "--json"]
        // The first catalog that names currencies records its first; the same order, or a currency added after it,
        // opens the database.
        try catalog(["coins"])
        #expect(try await CofferProcess.run(users, in: folder, environment: server).status == 0)
        try catalog(["coins", "gems"])
        #expect(try await CofferProcess.run(users, in: folder, environment: server).status == 0)
        // Gems listed first would show the coins' balances as gems: refused, by support's commands and by serve.
        try catalog(["gems", "coins"])
        let swapped = try await CofferProcess.run(users, in: folder, environment: server)
        #expect(swapped.status != 0 && swapped.stderr.contains("list coins first"), "\(swapped.stderr)")
        let served = try await CofferProcess.run(
            [
                "serve", "--database-url", "sqlite:" + path, "--bundle-id", "com.example.app", "--port",
                String(try LocalPort.free()),
            ],
            in: folder, environment: server)
        #expect(served.status == 2 && served.stderr.contains("Error: catalog: the catalog lists gems first"))
        #expect(served.stderr.contains("list coins first"), "\(served.stderr)")
        // coffer doctor says so before a start.
        let doctor = try await CofferProcess.run(
            ["doctor", "--database-url", "sqlite:" + path, "--bundle-id", "com.example.app"], in: folder,
            environment: server)
        #expect(
            doctor.status == 1 && doctor.stdout.contains("FAIL  catalog: catalog.json: the catalog lists gems first"))
    }

    @Test("support's commands take the wallet the database's server keeps: its catalog's allowance is no refusal there")
    func servedWalletCatalog() async throws {
        let path = try temporaryFile("served.sqlite")
        let folder = URL(fileURLWithPath: path).deletingLastPathComponent()
        try #"{"products": [{"id": "p", "kind": "autoRenewable", "group": "g", "allowance": 300}]}"#.write(
            to: folder.appendingPathComponent("catalog.json"), atomically: true, encoding: .utf8)
        let users = ["users", "--database-url", "sqlite:" + path, "--json"]
        do {
            let store = try SQLiteStore(path: path)
            try await store.saveCursor("serve.wallet", value: "device", environment: .sandbox)
        }
        // A device-wallet server's database: the allowance is refused, saying why.
        let device = try await CofferProcess.run(users, in: folder)
        #expect(device.status != 0 && device.stderr.contains("p gives an allowance"), "\(device.stderr)")
        let store = try SQLiteStore(path: path)
        try await store.saveCursor("serve.wallet", value: "server", environment: .sandbox)
        // A server-wallet server's: no flag needed.
        let server = try await CofferProcess.run(users, in: folder)
        #expect(server.status == 0, "\(server.stderr)")
    }

    @Test("ledger show prints a user's wallet and entries; ledger check finds the books sound")
    func ledgerShow() async throws {
        let path = try temporaryFile("coffer.sqlite")
        let store = try SQLiteStore(path: path)
        let user = User(
            environment: .sandbox, supportId: try #require(SupportID("_abc123def456")), tokenHash: "h",
            createdAt: Date(timeIntervalSince1970: 1_767_225_600))
        try await store.createUser(user)
        let fact = TransactionFact(
            transactionId: "2000000123", productId: "com.example.credits.400k", purchaseDate: user.createdAt)
        for event in [
            LedgerEvent.purchase(fact, credits: 400_000), .spend(key: "round-1", amount: 350_000), .revocation(fact),
            .grant(id: "g1", credits: 400_000, reason: "Ticket #42"),
        ] {
            _ = try await store.apply(
                LedgerRequest(owner: user.id, environment: .sandbox, event: event, at: user.createdAt))
        }
        // Gems, another currency's ledger: 30 bought with the same purchase, 20 spent.
        let gems = try #require(Currency(rawValue: "gems"))
        for event in [LedgerEvent.purchase(fact, credits: 30), .spend(key: "round-1", amount: 20)] {
            _ = try await store.apply(
                LedgerRequest(owner: user.id, environment: .sandbox, event: event, at: user.createdAt, currency: gems))
        }

        let output = try await CofferProcess.run(["ledger", "show", "_ABC123DEF456", "--database", path])
        #expect(output.status == 0, "\(output.stderr)")
        // 400k bought, 350k spent, refunded (50k taken, 350k deficit), 400k granted settles the deficit first.
        #expect(output.stdout.contains("_abc123def456  Sandbox  balance 50000  deficit 0"))
        #expect(output.stdout.contains("gems  balance 10  deficit 0"))
        for key in ["purchase:2000000123", "spend:round-1", "revocation:2000000123", "grant:g1", "Ticket #42"] {
            #expect(output.stdout.contains(key))
        }

        let json = try await CofferProcess.run(["ledger", "show", "_abc123def456", "--database", path, "--json"])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        #expect((object["entries"] as? [Any])?.count == 4)
        #expect((object["wallet"] as? [String: Any])?["balance"] as? Int == 50_000)
        let others = try #require(object["otherCurrencies"] as? [[String: Any]])
        #expect(others.map { $0["currency"] as? String } == ["gems"] && (others[0]["entries"] as? [Any])?.count == 2)

        let check = try await CofferProcess.run(["ledger", "check", "--database", path])
        #expect(check.status == 0)
        #expect(check.stdout.contains("checked 1 users in Sandbox: 0 problems"))
    }

    @Test("ledger show refuses unknown users, bad Support IDs, missing databases and environments")
    func ledgerErrors() async throws {
        let path = try temporaryFile("empty.sqlite")
        #expect(try await CofferProcess.run(["migrate", "--database", path]).status == 0)
        let unknown = try await CofferProcess.run(["ledger", "show", "_000000000000", "--database", path])
        #expect(unknown.status == 1)
        #expect(unknown.stderr.contains("no user _000000000000 in Sandbox"))
        #expect(
            try await CofferProcess.run(["ledger", "show", "nope", "--database", path]).stderr.contains(
                "not a Support ID"))
        #expect(
            try await CofferProcess.run(["ledger", "show", "_000000000000", "--database", path + ".missing"]).status
                == 1)
        let environment = try await CofferProcess.run([
            "ledger", "check", "--database", path, "--environment", "Staging",
        ])
        #expect(environment.status == 1)
        #expect(environment.stderr.contains("unknown environment Staging"))
    }
}
