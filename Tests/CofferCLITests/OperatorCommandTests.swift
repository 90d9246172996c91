import CofferCLI
import CofferCore
import CofferStoreSQLite
import CofferTestSupport
import Crypto
import Foundation
import GRDB
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// What an operator runs besides `coffer serve`: the version, structured logs, backups and their restore.
@Suite("Operating coffer", .serialized, .timeLimit(.minutes(3)))
struct OperatorCommandTests {
    let serve = ServeCommandTests()

    /// `coffer serve` in `folder` on `port`, once it answers its health check.
    func serving(
        in folder: URL, port: UInt16, flags: [String] = [], environment: [String: String] = [:], output: Pipe? = nil
    ) async throws -> Process {
        let server = try serve.start(
            ["serve", "--bundle-id", "com.example.app", "--port", String(port)] + flags, in: folder,
            environment: environment.merging(["COFFER_RECOVERY_INTERVAL": "0"]) { first, _ in first }, output: output)
        var ready = false
        for _ in 0..<100 where !ready {
            ready = (try? await serve.request("GET", "http://127.0.0.1:\(port)/healthz"))?.status == 200
            if !ready { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(ready)
        return server
    }

    @Test("coffer --version prints the build's version, the one CHANGELOG.md names")
    func version() async throws {
        let output = try await CofferProcess.run(["--version"])
        #expect(output.status == 0)
        #expect(output.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == CofferVersion.current)
        let changelog = try String(
            contentsOf: serve.root.appendingPathComponent("CHANGELOG.md"), encoding: .utf8)
        let heading = try Regex(#"\n## ([0-9]+\.[0-9]+\.[0-9]+) "#)
        let released = try #require(changelog.firstMatch(of: heading)?.output[1].substring)
        // Released, or the development of a later one.
        let numbers = { (text: Substring) in text.split(separator: ".").compactMap { Int($0) } }
        let current = CofferVersion.current.split(separator: "-", maxSplits: 1)
        #expect(
            CofferVersion.current == "\(released)"
                || (current.count == 2 && current[1] == "dev"
                    && numbers(current[0]).lexicographicallyPrecedes(numbers(released)) == false
                    && numbers(current[0]) != numbers(released))
        )
    }

    @Test("log.format json: every line of the server's output is one JSON object; requests carry their id")
    func jsonLogs() async throws {
        let folder = try serve.temporaryFolder()
        let port = try LocalPort.free()
        let output = Pipe()
        let server = try await serving(in: folder, port: port, flags: ["--log-format", "json"], output: output)
        defer {
            kill(server.processIdentifier, SIGKILL)
            server.waitUntilExit()
        }
        let base = "http://127.0.0.1:\(port)"
        let created = try await serve.request("POST", base + "/v1/users")
        #expect(created.status == 201)
        var text = ""
        var lines: [[String: Any]] = []
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline, !lines.contains(where: { ($0["path"] as? String) == "/v1/users" }) {
            let reading = output.fileHandleForReading
            text += try await blockingWork { String(decoding: reading.availableData, as: UTF8.self) }
            let complete = text.split(separator: "\n", omittingEmptySubsequences: true)
            lines = try complete.dropLast(text.hasSuffix("\n") ? 0 : 1).map { line in
                let object = try JSONSerialization.jsonObject(with: Data(line.utf8))
                return try #require(object as? [String: Any], "not one JSON object: \(line)")
            }
        }
        #expect(lines.contains { ($0["message"] as? String)?.hasPrefix("Coffer serving com.example.app") == true })
        for line in lines {
            #expect(line["time"] is String && line["level"] is String && line["message"] is String)
        }
        let request = try #require(lines.first { ($0["path"] as? String) == "/v1/users" })
        #expect((request["request_id"] as? String)?.isEmpty == false)
        #expect(request["status"] as? String == "201")

        let wrong = try await CofferProcess.run(["serve", "--bundle-id", "com.example.app", "--log-format", "xml"])
        #expect(wrong.status != 0)
        #expect(wrong.stderr.contains("log.format is \"xml\"; expected text or json"), "\(wrong.stderr)")
    }

    @Test("coffer backup under load: nothing acknowledged before it began is missing; a server on the copy serves it")
    func backupUnderLoad() async throws {
        let folder = try serve.temporaryFolder()
        let port = try LocalPort.free()
        let server = try await serving(
            in: folder, port: port,
            environment: ["COFFER_LIMIT_USERS_BURST": "100000", "COFFER_LIMIT_USERS_RATE": "100000"])
        defer {
            kill(server.processIdentifier, SIGKILL)
            server.waitUntilExit()
        }
        let base = "http://127.0.0.1:\(port)"
        // Customers keep arriving while the copy is taken; each acknowledged one is noted in order.
        let acknowledged = Mutex<[(supportId: String, token: String)]>([])
        let stop = Mutex(false)
        let load = Task {
            while !stop.withLock({ $0 }) {
                let created = try await serve.request("POST", base + "/v1/users")
                if created.status == 201, let id = created.json["supportId"] as? String,
                    let token = created.json["token"] as? String
                {
                    acknowledged.withLock { $0.append((id, token)) }
                }
            }
        }
        // At least eleven acknowledged before the copy begins, however busy the machine (a minute at most).
        for _ in 0..<3_000 where acknowledged.withLock({ $0.count }) <= 10 {
            try await Task.sleep(for: .milliseconds(20))
        }
        let before = acknowledged.withLock { $0 }
        let backup = try await CofferProcess.run(["backup", "copy.sqlite"], in: folder)
        try await Task.sleep(for: .milliseconds(300))
        stop.withLock { $0 = true }
        try await load.value
        #expect(backup.status == 0, "\(backup.stderr)")
        #expect(backup.stdout.contains("Backed up coffer.sqlite to copy.sqlite"), "\(backup.stdout)")
        #expect(before.count > 10)
        let copy = folder.appendingPathComponent("copy.sqlite").path
        let mode = try FileManager.default.attributesOfItem(atPath: copy)[.posixPermissions] as? NSNumber
        #expect(mode?.intValue == 0o600)
        // Every customer acknowledged before the copy began is in it.
        let summary = try SQLiteBackup.inspect(copy)
        #expect(summary.migrations == SQLiteBackup.migrations)
        #expect(summary.users >= before.count)
        let reader = try DatabaseQueue(
            path: copy,
            configuration: {
                var c = Configuration()
                c.readonly = true
                return c
            }())
        let inCopy = Set(try await reader.read { db in try String.fetchAll(db, sql: "SELECT support_id FROM users") })
        try reader.close()
        #expect(before.allSatisfy { inCopy.contains($0.supportId) })
        #expect(try await CofferProcess.run(["backup", "copy.sqlite"], in: folder).stderr.contains("exists already"))

        // Restored into a new folder, a server started on it serves a customer acknowledged before the copy.
        let restored = try serve.temporaryFolder()
        let restore = try await CofferProcess.run(
            ["restore", copy, "--database-url", "sqlite:coffer.sqlite"], in: restored)
        #expect(restore.status == 0, "\(restore.stderr)")
        let again = try await CofferProcess.run(["restore", copy], in: restored)
        #expect(again.status != 0 && again.stderr.contains("--yes"), "\(again.stderr)")
        let replaced = try await CofferProcess.run(["restore", copy, "--yes"], in: restored)
        #expect(replaced.status == 0 && replaced.stdout.contains("kept as"), "\(replaced.stdout)")
        let restoredPort = try LocalPort.free()
        let second = try await serving(in: restored, port: restoredPort)
        defer {
            kill(second.processIdentifier, SIGKILL)
            second.waitUntilExit()
        }
        let customer = try #require(before.first)
        var me: (status: Int, json: [String: Any]) = (0, [:])
        for _ in 0..<100 where me.status != 200 {
            me =
                (try? await serve.request("GET", "http://127.0.0.1:\(restoredPort)/v1/me", token: customer.token)) ?? (
                    0, [:]
                )
            if me.status != 200 { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(me.status == 200)
        #expect(me.json["supportId"] as? String == customer.supportId)
    }

    @Test("coffer restore refuses a copy of another schema version, a damaged file and one that is not Coffer's")
    func restoreRefuses() async throws {
        let folder = try serve.temporaryFolder()
        let original = folder.appendingPathComponent("coffer.sqlite").path
        _ = try SQLiteStore(path: original)
        #expect(try await CofferProcess.run(["backup", "old.sqlite"], in: folder).status == 0)
        // An older Coffer's copy: its last migration was never applied.
        let old = try DatabaseQueue(path: folder.appendingPathComponent("old.sqlite").path)
        try await old.write { db in
            try db.execute(
                sql: "DELETE FROM grdb_migrations WHERE identifier = ?", arguments: [SQLiteBackup.migrations.last])
        }
        try old.close()
        let target = folder.appendingPathComponent("target.sqlite").path
        let refused = try await CofferProcess.run(["restore", "old.sqlite", "--database-url", target], in: folder)
        #expect(refused.status != 0)
        #expect(refused.stderr.contains("restore it with the Coffer version that made it"), "\(refused.stderr)")
        #expect(!FileManager.default.fileExists(atPath: target))
        try Data("not a database at all, just some bytes".utf8).write(
            to: folder.appendingPathComponent("junk.sqlite"))
        let junk = try await CofferProcess.run(["restore", "junk.sqlite", "--database-url", target], in: folder)
        #expect(junk.status != 0 && !FileManager.default.fileExists(atPath: target), "\(junk.stderr)")
        let other = try DatabaseQueue(path: folder.appendingPathComponent("other.sqlite").path)
        try await other.write { db in try db.execute(sql: "CREATE TABLE notes (text TEXT)") }
        try other.close()
        let foreign = try await CofferProcess.run(["restore", "other.sqlite", "--database-url", target], in: folder)
        #expect(foreign.stderr.contains("not a Coffer database"), "\(foreign.stderr)")
        // A link to a good copy is refused: the database path must become a file of its own.
        #expect(try await CofferProcess.run(["backup", "good.sqlite"], in: folder).status == 0)
        try FileManager.default.createSymbolicLink(
            atPath: folder.appendingPathComponent("link.sqlite").path,
            withDestinationPath: folder.appendingPathComponent("good.sqlite").path)
        let linked = try await CofferProcess.run(["restore", "link.sqlite", "--database-url", target], in: folder)
        #expect(linked.status != 0 && linked.stderr.contains("symbolic link"), "\(linked.stderr)")
        #expect(!FileManager.default.fileExists(atPath: target))
        let postgres = try await CofferProcess.run(
            ["backup", "x.sqlite", "--database-url", "postgres://coffer@127.0.0.1/coffer"], in: folder)
        #expect(postgres.stderr.contains("pg_dump"), "\(postgres.stderr)")
    }

    @Test("coffer doctor: settings, catalog, database, key files and what Production still needs; 1 on a problem")
    func doctor() async throws {
        let folder = try serve.temporaryFolder()
        let missing = try await CofferProcess.run(["doctor"], in: folder)
        #expect(missing.status == 1)
        #expect(missing.stdout.contains("FAIL  settings: bundle.id is missing"), "\(missing.stdout)")

        _ = try SQLiteStore(path: folder.appendingPathComponent("coffer.sqlite").path)
        let key = P256.Signing.PrivateKey()
        let keyFile = folder.appendingPathComponent("AuthKey_TEST123456.p8")
        try key.pemRepresentation.write(to: keyFile, atomically: true, encoding: .utf8)
        chmod(keyFile.path, 0o644)
        let arguments = ["doctor", "--bundle-id", "com.example.app"]
        let environment = [
            "COFFER_APPSTORE_KEY_ID": "TEST123456", "COFFER_APPSTORE_ISSUER_ID": "57246542-96fe-1a63-e053-0824d011072a",
            "COFFER_APPSTORE_PRIVATE_KEY": keyFile.path,
        ]
        let good = try await CofferProcess.run(arguments, in: folder, environment: environment)
        #expect(good.status == 0, "\(good.stdout)")
        #expect(good.stdout.contains("ok    catalog: catalog.json, 4 products"))
        #expect(good.stdout.contains("schema up to date (\(SQLiteBackup.migrations.count) migrations)"))
        #expect(good.stdout.contains("App Store Server API key TEST123456: a signed token made"))
        #expect(good.stdout.contains("warn  appstore.private.key: \(keyFile.path) can be read by others"))
        #expect(good.stdout.contains("environment is Sandbox: set environment=Production"))
        // On loopback with no trusted proxy: a reverse proxy on this machine must be listed.
        #expect(
            good.stdout.contains("if a reverse proxy on this machine forwards to Coffer, list it"), "\(good.stdout)")
        #expect(!good.stdout.contains("metrics.token"))
        // Behind a trusted proxy without a metrics token: /metrics answers whoever reaches the proxy.
        let proxied = try await CofferProcess.run(
            arguments, in: folder,
            environment: environment.merging(["COFFER_SERVER_TRUSTED_PROXIES": "127.0.0.1"]) { $1 })
        #expect(proxied.stdout.contains("metrics.token: without it /metrics answers anyone"), "\(proxied.stdout)")
        #expect(!proxied.stdout.contains("if a reverse proxy on this machine forwards"))

        try "not a key".write(to: keyFile, atomically: true, encoding: .utf8)
        let broken = try await CofferProcess.run(arguments, in: folder, environment: environment)
        #expect(broken.status == 1)
        #expect(broken.stdout.contains("FAIL  App Store Server API key TEST123456"), "\(broken.stdout)")
        let noCatalog = try await CofferProcess.run(arguments + ["--catalog", "missing.json"], in: folder)
        #expect(noCatalog.status == 1 && noCatalog.stdout.contains("FAIL  catalog: missing.json"))
        // A catalog of several currencies: both wallets keep them (the app's ledger one ledger per currency).
        let several =
            #"{"currencies": [{"id": "coins"}, {"id": "gems"}], "products": [{"id": "a", "kind": "consumable", "#
            + #""credits": {"coins": 500, "gems": 5}}]}"#
        try several.write(to: folder.appendingPathComponent("several.json"), atomically: true, encoding: .utf8)
        let device = try await CofferProcess.run(arguments + ["--catalog", "several.json"], in: folder)
        #expect(device.stdout.contains("ok    catalog: several.json, 1 products"), "\(device.stdout)")
        let server = try await CofferProcess.run(
            arguments + ["--catalog", "several.json"], in: folder, environment: ["COFFER_WALLET": "server"])
        #expect(server.stdout.contains("ok    catalog: several.json, 1 products"), "\(server.stdout)")
        // A subscription's allowance (credits that end) likewise: the server wallet only.
        let allowance = #"{"products": [{"id": "p", "kind": "autoRenewable", "group": "g", "allowance": 300}]}"#
        try allowance.write(to: folder.appendingPathComponent("allowance.json"), atomically: true, encoding: .utf8)
        let deviceAllowance = try await CofferProcess.run(arguments + ["--catalog", "allowance.json"], in: folder)
        #expect(
            deviceAllowance.status == 1 && deviceAllowance.stdout.contains("p gives an allowance"),
            "\(deviceAllowance.stdout)")
        let serverAllowance = try await CofferProcess.run(
            arguments + ["--catalog", "allowance.json"], in: folder, environment: ["COFFER_WALLET": "server"])
        #expect(
            serverAllowance.stdout.contains("ok    catalog: allowance.json, 1 products"), "\(serverAllowance.stdout)")
    }

    @Test(
        "coffer doctor on PostgreSQL: a fresh database answers with its migrations to come; a closed port fails fast",
        .enabled(if: TestPostgres.url != nil || TestPostgres.required, "\(TestPostgres.missing)"))
    func doctorPostgres() async throws {
        let folder = try serve.temporaryFolder()
        let url = try await TestPostgres.freshDatabase()
        let fresh = try await CofferProcess.run(
            ["doctor", "--bundle-id", "com.example.app", "--database-url", url], in: folder)
        #expect(fresh.status == 0, "\(fresh.stdout)")
        #expect(fresh.stdout.contains("migrations to apply at the next start"), "\(fresh.stdout)")
        let closed = try await CofferProcess.run(
            ["doctor", "--bundle-id", "com.example.app", "--database-url", "postgres://coffer@127.0.0.1:1/none"],
            in: folder, environment: ["COFFER_DATABASE_TIMEOUT": "2"])
        #expect(closed.status == 1)
        #expect(closed.stdout.contains("FAIL  database: PostgreSQL 127.0.0.1:1/none"), "\(closed.stdout)")
    }

    @Test(
        "deploy/install.sh lays out the binary, the data folder 0700 and a config coffer doctor accepts; the unit verifies"
    )
    func deploy() async throws {
        let stage = try serve.temporaryFolder().appendingPathComponent("root")
        let install = Process()
        install.executableURL = serve.root.appendingPathComponent("deploy/install.sh")
        install.arguments = ["--root", stage.path, "--binary", CofferProcess.executable.path]
        install.standardOutput = FileHandle.nullDevice
        try install.run()
        install.waitUntilExit()
        #expect(install.terminationStatus == 0)
        func mode(_ path: String) -> Int? { DoctorMode.of(stage.appendingPathComponent(path).path) }
        #expect(mode("var/lib/coffer") == 0o700)
        #expect(mode("etc/coffer") == 0o750)
        #expect(mode("etc/coffer/coffer.json") == 0o640 && mode("etc/coffer/coffer.env") == 0o640)
        let coffer = stage.appendingPathComponent("usr/local/bin/coffer").path
        let version = try await CofferProcess.run(["--version"], executable: coffer)
        #expect(version.stdout.contains(CofferVersion.current))
        // The config it installs, with the staged paths in place of /etc and /var/lib, passes coffer doctor.
        let doctor = try await CofferProcess.run(
            ["doctor", "--config", stage.appendingPathComponent("etc/coffer/coffer.json").path],
            environment: [
                "COFFER_CATALOG": stage.appendingPathComponent("etc/coffer/catalog.json").path,
                "COFFER_DATABASE_URL": "sqlite:" + stage.appendingPathComponent("var/lib/coffer/coffer.sqlite").path,
            ])
        #expect(doctor.status == 0, "\(doctor.stdout)")
        #expect(!doctor.stdout.contains("database folder"), "the data folder is owner-only: \(doctor.stdout)")
        // The unit, with the staged binary in place of /usr/local/bin/coffer, passes systemd-analyze verify.
        guard
            let analyze = ["/usr/bin/systemd-analyze", "/bin/systemd-analyze"].first(where: {
                FileManager.default.isExecutableFile(atPath: $0)
            })
        else {
            #expect(ProcessInfo.processInfo.environment["CI"] != "true", "systemd-analyze is missing under CI")
            print("NOT RUN: systemd-analyze is not installed, so deploy/coffer.service is not verified")
            return
        }
        let unit = try String(
            contentsOf: serve.root.appendingPathComponent("deploy/coffer.service"),
            encoding: .utf8
        ).replacingOccurrences(of: "/usr/local/bin/coffer", with: coffer)
        let unitFile = stage.appendingPathComponent("coffer.service")
        try unit.write(to: unitFile, atomically: true, encoding: .utf8)
        let verify = try await CofferProcess.run(["verify", unitFile.path], executable: analyze)
        #expect(verify.status == 0, "\(verify.stderr)")
    }
}

/// A file's permission bits.
enum DoctorMode {
    static func of(_ path: String) -> Int? {
        (try? FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? NSNumber)?.intValue
    }
}
