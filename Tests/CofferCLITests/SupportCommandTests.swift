import CofferTestSupport
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The support commands as a support person runs them: a key made on the server's machine, then grants,
/// users, timelines and balances over the signed admin API, and the same reads on the local database.
@Suite("support commands", .timeLimit(.minutes(2)))
struct SupportCommandTests {
    let serve = ServeCommandTests()

    /// The first customer a server just started makes: new users are asked for until it listens.
    func firstCustomer(at base: String) async throws -> (supportId: String, token: String) {
        var created: (status: Int, json: [String: Any]) = (0, [:])
        for _ in 0..<100 where created.status != 201 {
            created = (try? await serve.request("POST", base + "/v1/users")) ?? (0, [:])
            if created.status != 201 { try await Task.sleep(for: .milliseconds(100)) }
        }
        return (try #require(created.json["supportId"] as? String), try #require(created.json["token"] as? String))
    }

    @Test(
        "support's commands read the settings as coffer serve does: its config file's database, wallet and environment; another wallet or environment is refused"
    )
    func serversSettings() async throws {
        let folder = try serve.temporaryFolder()
        let port = try LocalPort.free()
        try FileManager.default.createDirectory(
            at: folder.appendingPathComponent("data"), withIntermediateDirectories: true)
        let config =
            #"{"database": {"url": "sqlite:data/shop.sqlite"}, "wallet": "server", "bundle": {"id": "com.example.app"}}"#
        try config.write(to: folder.appendingPathComponent("server.json"), atomically: true, encoding: .utf8)
        let server = try serve.start(["serve", "--config", "server.json", "--port", String(port)], in: folder)
        defer {
            kill(server.processIdentifier, SIGKILL)
            server.waitUntilExit()
        }
        let base = "http://127.0.0.1:\(port)"
        let (supportId, token) = try await firstCustomer(at: base)

        // The customer coffer serve --config keeps, with its wallet: the balance the app reads changes.
        let found = try await CofferProcess.run(["user", supportId, "--config", "server.json", "--json"], in: folder)
        #expect(found.status == 0, Comment(rawValue: found.stderr))
        let stale = try await CofferProcess.run(
            [
                "set-balance", "--recipient", supportId, "--balance", "70", "--expected", "1", "--reason", "Ticket #44",
                "--config", "server.json",
            ], in: folder)
        #expect(stale.status != 0 && stale.stderr.contains("balance changed since you saw it"))
        let set = try await CofferProcess.run(
            [
                "set-balance", "--recipient", supportId, "--balance", "70", "--reason", "Ticket #44", "--config",
                "server.json",
            ], in: folder)
        #expect(set.status == 0, Comment(rawValue: set.stderr))
        #expect(set.stdout.contains("70"))
        let me = try await serve.request("GET", base + "/v1/me", token: token)
        #expect(me.json["balance"] as? Int == 70)
        // COFFER_CONFIG names it too.
        let byVariable = try await CofferProcess.run(
            ["user", supportId], in: folder, environment: ["COFFER_CONFIG": "server.json"])
        #expect(
            byVariable.status == 0 && byVariable.stdout.contains("balance 70"), Comment(rawValue: byVariable.stderr))

        // What the database does not hold is refused, saying what it holds, and nothing changes.
        let device = try await CofferProcess.run(
            [
                "set-balance", "--recipient", supportId, "--balance", "5", "--reason", "x", "--config", "server.json",
                "--wallet", "device",
            ], in: folder)
        #expect(
            device.status != 0 && device.stderr.contains("keeps the server wallet"), Comment(rawValue: device.stderr))
        let production = try await CofferProcess.run(
            ["user", supportId, "--config", "server.json", "--environment", "Production"], in: folder)
        #expect(
            production.status != 0 && production.stderr.contains("holds no Production customers"),
            Comment(rawValue: production.stderr))
        #expect(try await serve.request("GET", base + "/v1/me", token: token).json["balance"] as? Int == 70)
    }

    @Test("keys create, grant, grants, users, user, set-balance over the admin API and locally; revoked keys refused")
    func ticket() async throws {
        let folder = try serve.temporaryFolder()
        let port = try LocalPort.free()
        let server = try serve.start(
            ["serve", "--bundle-id", "com.example.app", "--port", String(port), "--wallet", "server"], in: folder)
        defer {
            kill(server.processIdentifier, SIGKILL)
            server.waitUntilExit()
        }
        let base = "http://127.0.0.1:\(port)"
        let (supportId, token) = try await firstCustomer(at: base)

        // The key is made next to the database; its private half is a file only its owner reads.
        let made = try await CofferProcess.run(
            ["keys", "create", "--name", "support laptop", "--out", "key.pem"], in: folder)
        #expect(made.status == 0, Comment(rawValue: made.stderr))
        let keyPath = folder.appendingPathComponent("key.pem").path
        let permissions = try FileManager.default.attributesOfItem(atPath: keyPath)[.posixPermissions] as? Int
        #expect(permissions == 0o600)
        let over = try await CofferProcess.run(["keys", "create", "--name", "again", "--out", "key.pem"], in: folder)
        #expect(over.status != 0 && over.stderr.contains("exists"), "a key file is never written over")
        let keys = try await CofferProcess.run(["keys", "list", "--json"], in: folder)
        let keyList = try JSONSerialization.jsonObject(with: Data(keys.stdout.utf8)) as? [[String: Any]]
        let keyId = try #require(keyList?.first?["id"] as? String)
        #expect(!keys.stdout.contains("PRIVATE") && !keys.stdout.contains("PUBLIC KEY"))
        let remote = ["COFFER_SERVER": base, "COFFER_KEY_ID": keyId, "COFFER_KEY_FILE": keyPath]

        let granted = try await CofferProcess.run(
            ["grant", "--recipient", supportId, "--credits", "400000", "--reason", "Ticket #42"], in: folder,
            environment: remote)
        #expect(granted.status == 0, Comment(rawValue: granted.stderr))
        #expect(granted.stdout.contains("Granted 400000 credits to \(supportId)"))
        let pending = try await CofferProcess.run(["grants", "--status", "pending"], in: folder, environment: remote)
        #expect(pending.stdout.contains(supportId) && pending.stdout.contains("Ticket #42"))
        #expect(pending.stdout.contains("support laptop"))

        // An entitlement for a time: the customer has it in GET /v1/me until it ends; coffer user shows its id, and
        // coffer cancel-grant ends it.
        let entitled = try await CofferProcess.run(
            ["grant", "--entitlement", "adFree", "--days", "7", "--recipient", supportId, "--reason", "Ticket #7"],
            in: folder, environment: remote)
        #expect(entitled.status == 0, Comment(rawValue: entitled.stderr))
        #expect(entitled.stdout.contains("Granted adFree to \(supportId) for 7 days"))
        #expect(
            (try await serve.request("GET", base + "/v1/me", token: token).json["entitlements"] as? [String]) == [
                "adFree"
            ])
        let shown = try await CofferProcess.run(["user", supportId], in: folder, environment: remote)
        let entitlementGrant = try #require(
            shown.stdout.firstMatch(of: /granted adFree until .*; grant ([0-9a-f-]{36})/)
        ).1
        let ended = try await CofferProcess.run(
            ["cancel-grant", String(entitlementGrant)], in: folder, environment: remote)
        #expect(
            ended.status == 0 && ended.stdout.contains("Cancelled the grant of adFree"), Comment(rawValue: ended.stderr)
        )
        #expect((try await serve.request("GET", base + "/v1/me", token: token).json["entitlements"] as? [String]) == [])

        // The app picks the grant up on its next refresh.
        let grants = try await serve.request("GET", base + "/v1/me/grants?status=pending", token: token)
        let grantId = try #require((grants.json["grants"] as? [[String: Any]])?.first?["id"] as? String)
        #expect(try await serve.request("POST", base + "/v1/me/grants/\(grantId)/claim", token: token).status == 200)
        let claimed = try await CofferProcess.run(
            ["grants", "--status", "claimed", "--json"], in: folder, environment: remote)
        let claimedList = try JSONSerialization.jsonObject(with: Data(claimed.stdout.utf8)) as? [[String: Any]]
        #expect(claimedList?.map { $0["supportId"] as? String } == [supportId])

        // A grant made by mistake is cancelled before the app claims it; a claimed one cannot be.
        let mistaken = try await CofferProcess.run(
            ["grant", "--recipient", supportId, "--credits", "5", "--reason", "typo", "--json"], in: folder,
            environment: remote)
        let mistakenId = try #require(
            (try JSONSerialization.jsonObject(with: Data(mistaken.stdout.utf8)) as? [String: Any])?["id"] as? String)
        let cancelled = try await CofferProcess.run(["cancel-grant", mistakenId], in: folder, environment: remote)
        #expect(cancelled.status == 0 && cancelled.stdout.contains("Cancelled the grant of 5 credits"))
        let listedCancelled = try await CofferProcess.run(["grants", "--status", "cancelled"], in: folder)
        #expect(listedCancelled.stdout.contains("typo") && listedCancelled.stdout.contains("cancelled"))
        let claimedOne = try await CofferProcess.run(["cancel-grant", grantId.lowercased()], in: folder)
        #expect(claimedOne.status != 0 && claimedOne.stderr.contains("claimed this grant already"))
        #expect(try await serve.request("GET", base + "/v1/me", token: token).json["balance"] as? Int == 400_000)

        // The balance support saw is checked by the server inside the edit's transaction, over the admin API too.
        let stale = try await CofferProcess.run(
            [
                "set-balance", "--recipient", supportId, "--balance", "1000", "--expected", "5", "--reason",
                "Ticket #43",
            ], in: folder, environment: remote)
        #expect(
            stale.status != 0 && stale.stderr.contains("it is 400,000 now, not 5"), Comment(rawValue: stale.stderr))
        #expect(try await serve.request("GET", base + "/v1/me", token: token).json["balance"] as? Int == 400_000)
        let set = try await CofferProcess.run(
            [
                "set-balance", "--recipient", supportId, "--balance", "1000", "--expected", "400000", "--reason",
                "Ticket #43",
            ], in: folder, environment: remote)
        #expect(set.stdout.contains("balance 400000 -> 1000 (via ledger)"), Comment(rawValue: set.stderr))
        #expect(try await serve.request("GET", base + "/v1/me", token: token).json["balance"] as? Int == 1_000)

        let found = try await CofferProcess.run(
            ["users", "--search", String(supportId.dropFirst().prefix(5)).uppercased()], in: folder,
            environment: remote)
        #expect(found.stdout.contains(supportId))
        let listed = try await CofferProcess.run(["users", "list", "--json"], in: folder, environment: remote)
        #expect(listed.status == 0 && listed.stdout.contains(supportId))
        // Merging needs an anonymous customer and an Apple account's: refused clearly, nothing changed.
        // Without the customer's code or an owner's reason, the command says what it needs.
        let unconsented = try await CofferProcess.run(["users", "merge", supportId, supportId], in: folder)
        #expect(unconsented.status != 0 && unconsented.stderr.contains("--code CODE"), "\(unconsented.stderr)")
        let intoItself = try await CofferProcess.run(
            ["users", "merge", supportId, supportId, "--override-reason", "Ticket #30"], in: folder,
            environment: remote)
        #expect(intoItself.status != 0 && intoItself.stderr.contains("cannot be merged into itself"))
        let other = try await serve.request("POST", base + "/v1/users")
        let otherId = try #require(other.json["supportId"] as? String)
        let notAccount = try await CofferProcess.run(
            ["users", "merge", supportId, otherId, "--code", "ABCD-EFGH"], in: folder)
        #expect(notAccount.status != 0 && notAccount.stderr.contains("is not an Apple account's customer"))
        // A data request: refused without --yes; then deleted once, through the admin API; the app's token stops.
        let otherToken = try #require(other.json["token"] as? String)
        let unconfirmed = try await CofferProcess.run(["delete-customer", otherId], in: folder, environment: remote)
        #expect(unconfirmed.status != 0 && unconfirmed.stderr.contains("--yes"))
        #expect(try await serve.request("GET", base + "/v1/me", token: otherToken).status == 200)
        let deleted = try await CofferProcess.run(
            ["delete-customer", otherId, "--yes"], in: folder, environment: remote)
        #expect(deleted.status == 0 && deleted.stdout.contains("Deleted \(otherId) at the customer's request"))
        #expect(try await serve.request("GET", base + "/v1/me", token: otherToken).status == 401)
        let twice = try await CofferProcess.run(["delete-customer", otherId, "--yes"], in: folder)
        #expect(twice.status != 0 && twice.stderr.contains("deleted already"))
        let story = try await CofferProcess.run(["user", supportId], in: folder, environment: remote)
        #expect(story.status == 0)
        for line in ["balance 1000", "grant-created", "grant-claimed", "adjustment", "Ticket #42"] {
            #expect(story.stdout.contains(line), Comment(rawValue: line + " missing from\n" + story.stdout))
        }

        // The same reads straight from the local database, with the same answers.
        let local = try await CofferProcess.run(["user", supportId, "--json"], in: folder)
        let detail = try JSONSerialization.jsonObject(with: Data(local.stdout.utf8)) as? [String: Any]
        #expect((detail?["user"] as? [String: Any])?["balance"] as? Int == 1_000)
        // Five of the ledger and grants, and the entitlement's grant and cancellation.
        #expect((detail?["timeline"] as? [Any])?.count == 7)

        // Mistakes are clear and change nothing.
        let nobody = try await CofferProcess.run(
            ["grant", "--recipient", "_000000000000", "--credits", "5", "--reason", "x"], in: folder,
            environment: remote)
        #expect(nobody.status != 0 && nobody.stderr.contains("not found"))
        let noKey = try await CofferProcess.run(["users", "--server", base], in: folder)
        #expect(noKey.status != 0 && noKey.stderr.contains("--key-id"))

        #expect(try await CofferProcess.run(["keys", "revoke", keyId], in: folder).status == 0)
        let revoked = try await CofferProcess.run(["users"], in: folder, environment: remote)
        #expect(revoked.status != 0 && revoked.stderr.contains("revoked"))
        let keysAfter = try await CofferProcess.run(["keys", "list"], in: folder)
        #expect(keysAfter.stdout.contains("revoked"))
    }

    @Test("the first run prints a one-time admin login; coffer admin create, reset-password and list")
    func admins() async throws {
        let folder = try serve.temporaryFolder()
        func firstLines(_ port: UInt16) async throws -> String {
            let pipe = Pipe()
            let server = try serve.start(
                ["serve", "--bundle-id", "com.example.app", "--port", String(port)], in: folder, output: pipe)
            var text = ""
            for _ in 0..<100 where !text.contains("Admin panel") {
                try await Task.sleep(for: .milliseconds(100))
                let reading = pipe.fileHandleForReading
                text += try await blockingWork { String(decoding: reading.availableData, as: UTF8.self) }
            }
            kill(server.processIdentifier, SIGKILL)
            server.waitUntilExit()
            return text
        }
        let first = try await firstLines(try LocalPort.free())
        #expect(first.contains("Admin panel: http://127.0.0.1:"), Comment(rawValue: first))
        #expect(first.contains("(this machine only)"))
        // Standard output is a pipe here, not a terminal: the password is in an owner-only file, never in the log.
        let file = folder.appendingPathComponent("coffer-first-admin-password")
        #expect(first.contains("sign in as admin with the password in \(file.path)"), Comment(rawValue: first))
        let password = try String(contentsOf: file, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(password.count == 20)
        #expect(!first.contains(password))
        let mode = try FileManager.default.attributesOfItem(atPath: file.path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        let database =
            try FileManager.default.attributesOfItem(
                atPath: folder.appendingPathComponent("coffer.sqlite").path)[.posixPermissions] as? Int
        #expect(database == 0o600)
        for suffix in ["-wal", "-shm"] {
            let path = folder.appendingPathComponent("coffer.sqlite" + suffix).path
            if FileManager.default.fileExists(atPath: path) {
                #expect(try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int == 0o600)
            }
        }
        let again = try await firstLines(try LocalPort.free())
        #expect(again.contains("Admin panel") && !again.contains("password"), Comment(rawValue: again))

        let created = try await CofferProcess.run(["admin", "create", "--name", "bob"], in: folder)
        #expect(created.status == 0 && created.stdout.contains("Created owner bob with password "))
        let support = try await CofferProcess.run(
            ["admin", "create", "--name", "sam", "--role", "support", "--grant-limit", "50000"], in: folder)
        #expect(support.status == 0 && support.stdout.contains("Created support sam"))
        let noLimit = try await CofferProcess.run(
            ["admin", "create", "--name", "kim", "--role", "support"], in: folder)
        #expect(noLimit.status != 0 && noLimit.stderr.contains("--grant-limit"))
        let raised = try await CofferProcess.run(
            ["admin", "set-role", "--name", "sam", "--role", "support", "--grant-limit", "90000"], in: folder)
        #expect(raised.status == 0 && raised.stdout.contains("sam is support with a grant limit of 90000 credits"))
        let noTwoFactor = try await CofferProcess.run(["admin", "reset-two-factor", "--name", "sam"], in: folder)
        #expect(noTwoFactor.status != 0 && noTwoFactor.stderr.contains("two-factor sign-in is off for sam"))
        let twice = try await CofferProcess.run(["admin", "create", "--name", "bob"], in: folder)
        #expect(twice.status != 0 && twice.stderr.contains("exists"))
        let badName = try await CofferProcess.run(["admin", "create", "--name", "bob smith"], in: folder)
        #expect(badName.status != 0)
        let reset = try await CofferProcess.run(["admin", "reset-password", "--name", "bob"], in: folder)
        #expect(reset.status == 0 && reset.stdout.contains("New password for bob: "))
        let nobody = try await CofferProcess.run(["admin", "reset-password", "--name", "carol"], in: folder)
        #expect(nobody.status != 0 && nobody.stderr.contains("no admin named carol"))
        // Sam leaves: disabled, listed so, enabled again; the owners "admin" and "bob" stay, and disabling both
        // leaves the last one refused.
        let disabled = try await CofferProcess.run(["admin", "disable", "--name", "sam"], in: folder)
        #expect(disabled.status == 0 && disabled.stdout.contains("sam is disabled"), "\(disabled.stderr)")
        #expect(try await CofferProcess.run(["admin", "list"], in: folder).stdout.contains("sam (disabled)"))
        #expect(
            try await CofferProcess.run(["admin", "enable", "--name", "sam"], in: folder).stdout.contains(
                "sam is enabled"))
        #expect(try await CofferProcess.run(["admin", "disable", "--name", "bob"], in: folder).status == 0)
        let lastOwner = try await CofferProcess.run(["admin", "disable", "--name", "admin"], in: folder)
        #expect(lastOwner.status != 0 && lastOwner.stderr.contains("admin is the only owner"), "\(lastOwner.stderr)")
        #expect(try await CofferProcess.run(["admin", "enable", "--name", "bob"], in: folder).status == 0)
        let list = try await CofferProcess.run(["admin", "list"], in: folder)
        #expect(list.stdout.contains("admin") && list.stdout.contains("bob"))
        #expect(!list.stdout.contains("(disabled)"))
        #expect(list.stdout.contains("support") && list.stdout.contains("90000"))
        #expect(!list.stdout.contains("$2"))
    }

    /// This machine's first IPv4 address that is not loopback.
    static func networkAddress() -> String? {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0, let first = list else { return nil }
        defer { freeifaddrs(list) }
        var cursor: UnsafeMutablePointer<ifaddrs>? = first
        while let entry = cursor {
            defer { cursor = entry.pointee.ifa_next }
            guard let address = entry.pointee.ifa_addr, address.pointee.sa_family == sa_family_t(AF_INET) else {
                continue
            }
            var text = [CChar](repeating: 0, count: Int(INET_ADDRSTRLEN))
            address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { pointer in
                var raw = pointer.pointee.sin_addr
                _ = inet_ntop(AF_INET, &raw, &text, socklen_t(INET_ADDRSTRLEN))
            }
            let ip = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            if !ip.hasPrefix("127.") { return ip }
        }
        return nil
    }

    @Test("bound to every address, the server answers the API from the network but the panel only on loopback")
    func panelStaysLocal() async throws {
        let address = try #require(Self.networkAddress(), "this machine needs a non-loopback IPv4 address")
        let folder = try serve.temporaryFolder()
        for remote in [false, true] {
            let port = try LocalPort.free()
            let server = try serve.start(
                ["serve", "--bundle-id", "com.example.app", "--host", "0.0.0.0", "--port", String(port)], in: folder,
                environment: [
                    "COFFER_PANEL_REMOTE": String(remote), "COFFER_PANEL_SECURE_COOKIES": String(remote),
                    "COFFER_PANEL_HOST": address,
                ])
            defer {
                kill(server.processIdentifier, SIGKILL)
                server.waitUntilExit()
            }
            var health = 0
            for _ in 0..<100 where health != 200 {
                health = (try? await serve.request("GET", "http://\(address):\(port)/healthz"))?.status ?? 0
                if health != 200 { try await Task.sleep(for: .milliseconds(100)) }
            }
            #expect(health == 200, "the API answers on \(address)")
            let fromNetwork = try await serve.request("GET", "http://\(address):\(port)/admin/login").status
            #expect(fromNetwork == (remote ? 200 : 403), "panel.remote = \(remote)")
            let fromHere = try await serve.request("GET", "http://127.0.0.1:\(port)/admin/login").status
            #expect(fromHere == 200)
        }
    }
}
