import CofferTestSupport
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `coffer simulate` against a running `coffer serve` and `coffer appstore-sim serve`, as the README shows.
@Suite("coffer simulate", .serialized, .timeLimit(.minutes(3)))
struct SimulateCommandTests {
    let serve = ServeCommandTests()

    @Test("the guided run holds at every step, in either wallet", arguments: ["device", "server"])
    func guided(wallet: String) async throws {
        let folder = try serve.temporaryFolder()
        #expect(
            try await CofferProcess.run(["appstore-sim", "init", folder.appendingPathComponent("sim").path]).status == 0
        )
        let (simPort, port) = (try LocalPort.free(), try LocalPort.free())
        let simulator = try serve.start(
            [
                "appstore-sim", "serve", "--folder", "sim", "--catalog", "catalog.json", "--bundle-id",
                "com.example.app", "--port", String(simPort), "--notify",
                "http://127.0.0.1:\(port)/v1/apple/notifications",
            ], in: folder)
        let server = try serve.start(
            [
                "serve", "--bundle-id", "com.example.app", "--apple-root", "sim/root.der", "--port", String(port),
                "--wallet", wallet,
            ], in: folder)
        defer {
            for process in [simulator, server] {
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
            }
        }
        let base = "http://127.0.0.1:\(port)"
        let simulatorBase = "http://127.0.0.1:\(simPort)"
        var ready = false
        for _ in 0..<100 where !ready {
            let server = try? await serve.request("GET", base + "/healthz")
            let apple = try? await serve.request("GET", simulatorBase + "/simulator/clock")
            ready = server?.status == 200 && apple?.status == 200
            if !ready { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(ready)
        let made = try await CofferProcess.run(
            ["keys", "create", "--name", "simulate", "--out", "key.pem"], in: folder)
        #expect(made.status == 0, Comment(rawValue: made.stderr))
        let keys = try await CofferProcess.run(["keys", "list", "--json"], in: folder)
        let keyList = try JSONSerialization.jsonObject(with: Data(keys.stdout.utf8)) as? [[String: Any]]
        let keyId = try #require(keyList?.first?["id"] as? String)

        let arguments = [
            "simulate", "--server", base, "--simulator", simulatorBase, "--wallet", wallet, "--key-id", keyId, "--key",
            "key.pem", "--folder", "app-home",
        ]
        let run = try await CofferProcess.run(arguments, in: folder)
        #expect(run.status == 0, Comment(rawValue: run.stdout + run.stderr))
        for line in [
            "✓ StoreKit still holds 1 unfinished transaction", "✓ nothing unfinished",
            "✓ balance 800000: the second purchase once", "✓ balance 400000", "✓ same Support ID _",
            "✓ balance 200250", "after 12 paid periods the loyalty rule gives premium, lifetime",
            "loyalty is for life", "Everything held",
        ] {
            #expect(run.stdout.contains(line), Comment(rawValue: "missing \(line) in:\n\(run.stdout)"))
        }
        if wallet == "device" { #expect(run.stdout.contains("restored from the backup")) }

        // Run again: a new account and a new customer, the same story.
        let again = try await CofferProcess.run(arguments.dropLast(2) + ["--folder", "app-home-2"], in: folder)
        #expect(again.status == 0, Comment(rawValue: again.stdout + again.stderr))

        // Without the simulator it says so, and fails.
        let nowhere = try await CofferProcess.run(
            ["simulate", "--server", base, "--simulator", "http://127.0.0.1:9", "--wallet", wallet], in: folder)
        #expect(nowhere.status != 0 && nowhere.stderr.contains("out of reach"))
    }
}
