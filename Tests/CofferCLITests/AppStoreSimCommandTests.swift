import CofferTestSupport
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `coffer appstore-sim`, as a developer uses it: init a folder, serve, drive it from the shell, and check
/// what it signs with `coffer verify`.
@Suite("coffer appstore-sim", .timeLimit(.minutes(2)))
struct AppStoreSimCommandTests {
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// `coffer appstore-sim serve` on a free port for the folder `init` made (bundle id `com.example.app`), once it
    /// answers; kill the process when done.
    static func serve(_ folder: URL, _ options: [String] = []) async throws -> (Process, port: Int) {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let port = try LocalPort.free()
        let server = Process()
        server.executableURL = CofferProcess.executable
        server.arguments =
            [
                "appstore-sim", "serve", "--folder", folder.path, "--catalog",
                root.appendingPathComponent("Tests/CofferTestSupport/Fixtures/catalog.json").path, "--bundle-id",
                "com.example.app", "--port", String(port),
            ] + options
        server.standardOutput = FileHandle.nullDevice
        server.standardError = FileHandle.nullDevice
        try server.run()
        var ready = false
        for _ in 0..<100 where !ready {
            ready =
                try await CofferProcess.run([
                    "appstore-sim", "history", "nobody", "--server", "http://127.0.0.1:\(port)",
                ])
                .status == 0
            if !ready { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(ready, "the simulator did not start")
        return (server, Int(port))
    }

    @Test("init, serve, purchase, advance-clock, refund, history; signed data verifies in Sandbox only")
    func session() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("coffer-sim-\(UUID().uuidString)")
        let initialized = try await CofferProcess.run(["appstore-sim", "init", folder.path])
        #expect(initialized.status == 0, "\(initialized.stderr)")
        #expect(initialized.stdout.contains("root.der"))
        #expect(try await CofferProcess.run(["appstore-sim", "init", folder.path]).status != 0)  // never overwrites

        let (server, port) = try await Self.serve(folder, ["--offer-code", "SPRING=com.example.credits.400k"])
        defer {
            kill(server.processIdentifier, SIGKILL)
            server.waitUntilExit()
        }
        let remote = ["--server", "http://127.0.0.1:\(port)"]

        let bought = try await CofferProcess.run(
            [
                "appstore-sim", "purchase", "--account", "alice", "--product", "com.example.credits.400k", "--quantity",
                "3",
            ]
                + remote)
        #expect(bought.status == 0, "\(bought.stderr)")
        #expect(bought.stdout.contains("alice bought com.example.credits.400k ×3: transaction 2000000000"))
        #expect(bought.stdout.contains("notifications: ONE_TIME_CHARGE"))
        let subscribed = try await CofferProcess.run(
            ["appstore-sim", "purchase", "--account", "alice", "--product", "com.example.pro.monthly"] + remote)
        #expect(subscribed.stdout.contains("SUBSCRIBED/INITIAL_BUY"))
        let advanced = try await CofferProcess.run(["appstore-sim", "advance-clock", "31d"] + remote)
        #expect(advanced.stdout.contains("renewed"))
        #expect(advanced.stdout.contains("DID_RENEW"))
        let refunded = try await CofferProcess.run(["appstore-sim", "refund", "2000000000"] + remote)
        #expect(refunded.stdout.contains("refunded 2000000000"))
        let reversed = try await CofferProcess.run(["appstore-sim", "reverse-refund", "2000000000"] + remote)
        #expect(reversed.stdout.contains("REFUND_REVERSED"))
        let expired = try await CofferProcess.run(["appstore-sim", "expire", "2000000002"] + remote)
        #expect(expired.stdout.contains("EXPIRED/VOLUNTARY"))

        let history = try await CofferProcess.run(["appstore-sim", "history", "alice", "--json"] + remote)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(history.stdout.utf8)) as? [String: Any])
        let notifications = try #require(object["notifications"] as? [[String: Any]])
        #expect(
            notifications.compactMap { $0["type"] as? String } == [
                "ONE_TIME_CHARGE", "SUBSCRIBED/INITIAL_BUY", "DID_RENEW", "REFUND", "REFUND_REVERSED",
                "DID_CHANGE_RENEWAL_STATUS/AUTO_RENEW_DISABLED", "EXPIRED/VOLUNTARY",
            ])
        #expect((object["transactions"] as? [Any])?.count == 3)

        // The app receipt is PKCS#7 in Apple's shape: `coffer receipt` verifies it by Apple's receipt policy
        // with the simulator's receipt root, and refuses it without.
        let receipt = try await CofferProcess.run(["appstore-sim", "receipt", "alice"] + remote)
        #expect(receipt.status == 0)
        let receiptFile = folder.appendingPathComponent("alice.receipt")
        try Data(receipt.stdout.utf8).write(to: receiptFile)
        let verified = try await CofferProcess.run([
            "receipt", receiptFile.path, "--root", folder.appendingPathComponent("receipt-root.der").path,
        ])
        #expect(verified.status == 0, "\(verified.stdout)\(verified.stderr)")
        #expect(verified.stdout.contains("type ProductionSandbox  bundle com.example.app"))
        #expect(verified.stdout.contains("2000000000"))
        #expect(try await CofferProcess.run(["receipt", receiptFile.path]).status == 1)
        let keyMode =
            try FileManager.default.attributesOfItem(
                atPath: folder.appendingPathComponent("receipt-leaf-key.pem").path)[.posixPermissions] as? Int
        #expect(keyMode == 0o600)

        // Bad input: a clear error, exit 1, nothing changes.
        let unknown = try await CofferProcess.run(["appstore-sim", "refund", "999"] + remote)
        #expect(unknown.status == 1)
        #expect(unknown.stderr.contains("no transaction 999"))
        let badProduct = try await CofferProcess.run(
            ["appstore-sim", "purchase", "--account", "alice", "--product", "com.example.nope"] + remote)
        #expect(badProduct.status == 1)
        #expect(badProduct.stderr.contains("not in the catalog"))
        #expect(try await CofferProcess.run(["appstore-sim", "advance-clock", "soon"] + remote).status == 64)

        // An offer code from --offer-code, redeemed once per account, as the device's sheet does.
        let redeemed = try await CofferProcess.run(
            ["appstore-sim", "redeem-offer-code", "--account", "bob", "SPRING"] + remote)
        #expect(redeemed.status == 0, "\(redeemed.stderr)")
        #expect(redeemed.stdout.contains("bob redeemed offer code SPRING"))
        let twice = try await CofferProcess.run(
            ["appstore-sim", "redeem-offer-code", "--account", "bob", "SPRING"] + remote)
        #expect(twice.status == 1 && twice.stderr.contains("already redeemed"))
        let unknownCode = try await CofferProcess.run(
            ["appstore-sim", "redeem-offer-code", "--account", "bob", "NOPE"] + remote)
        #expect(unknownCode.status == 1 && unknownCode.stderr.contains("no offer code NOPE"))

        // The App Store's own events, one control each; the report names each order.
        let carol = try await CofferProcess.run(
            ["appstore-sim", "purchase", "--account", "carol", "--product", "com.example.pro.monthly"] + remote)
        let carolsLine = try #require(carol.stdout.split(separator: "\n").first { $0.hasPrefix("order ") })
        let original = String(try #require(carolsLine.split(separator: " ").last))
        let events: [([String], String)] = [
            (["price-increase", original, "--price", "12.99"], "PRICE_INCREASE/PENDING"),
            (["accept-price-increase", original], "PRICE_INCREASE/ACCEPTED"),
            (["extend", original, "--days", "3"], "RENEWAL_EXTENDED"),
            (["extend-all", "com.example.pro.monthly", "--days", "2", "--storefront", "USA"], "1 extended"),
            (["rescind-consent", "carol"], "RESCIND_CONSENT"),
            (["remove-from-sale", "com.example.pro.monthly"], "expire at their next renewal"),
            (["rate-limit", "refund-history", "5"], "refund-history limited to 5 requests an hour"),
            (["rate-limit", "refund-history", "0"], "refund-history has no rate limit"),
        ]
        for (arguments, said) in events {
            let run = try await CofferProcess.run(["appstore-sim"] + arguments + remote)
            #expect(run.status == 0 && run.stdout.contains(said), "\(arguments): \(run.stdout)\(run.stderr)")
        }
        #expect(
            try await CofferProcess.run(["appstore-sim", "price-increase", original, "--price", "12,99"] + remote)
                .status == 64)
        #expect(
            try await CofferProcess.run(["appstore-sim", "extend", original, "--days", "91"] + remote).status == 64)
        let unknownEndpoint = try await CofferProcess.run(["appstore-sim", "rate-limit", "everything", "5"] + remote)
        #expect(unknownEndpoint.status == 1 && unknownEndpoint.stderr.contains("endpoint must be one of"))

        // What the device would post verifies with the simulator's root in Sandbox, and never in Production.
        let signed = try await CofferProcess.run(["appstore-sim", "signed", "2000000000"] + remote)
        let jws = folder.appendingPathComponent("transaction.jws")
        try Data(signed.stdout.utf8).write(to: jws)
        let rootDER = folder.appendingPathComponent("root.der").path
        let sandbox = try await CofferProcess.run([
            "verify", jws.path, "--kind", "transaction", "--root", rootDER, "--bundle-id", "com.example.app",
            "--environment", "Sandbox",
        ])
        #expect(sandbox.status == 0, "\(sandbox.stdout)")
        #expect(sandbox.stdout.contains("\"quantity\" : 3"))
        let production = try await CofferProcess.run([
            "verify", jws.path, "--kind", "transaction", "--root", rootDER, "--bundle-id", "com.example.app",
            "--environment", "Production", "--app-apple-id", "1234567890",
        ])
        #expect(production.status == 1)
        #expect(production.stdout.contains("cannot be trusted in Production"))

        // The App Store Server API, with the key init wrote, through `coffer appstore`.
        let key = try #require(
            try JSONSerialization.jsonObject(
                with: Data(contentsOf: folder.appendingPathComponent("api-key.json"))) as? [String: String])
        let info = try await CofferProcess.run([
            "appstore", "transaction", "2000000000", "--key-id", key["keyId"] ?? "", "--issuer-id",
            key["issuerId"] ?? "", "--bundle-id", "com.example.app", "--private-key",
            folder.appendingPathComponent(key["privateKeyFile"] ?? "").path, "--base-url", "http://127.0.0.1:\(port)",
        ])
        #expect(info.status == 0, "\(info.stderr)")
        #expect(info.stdout.contains("signedTransactionInfo"))
    }
}
