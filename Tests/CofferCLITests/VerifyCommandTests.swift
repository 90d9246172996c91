import CofferAppStore
import CofferSimulator
import CofferTestSupport
import Crypto
import Foundation
import Testing

/// The path of a file copied from `shared/apple/` into this target's resources.
func apple(_ name: String) throws -> String { try AppleFixtures.path(name) }

/// `coffer verify` is a contract other tools rely on: exit 0 verified, 1 rejected, 2 unreadable input, 64 usage;
/// `--json` prints one object with `status`, `message` and `payload`.
@Suite("coffer verify")
struct VerifyCommandTests {
    func json(_ output: CofferProcess.Output) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(output.stdout.utf8)) as? [String: Any])
    }

    @Test("the real Apple-signed notification verifies offline (exit 0) and is refused at the current date (exit 1)")
    func realNotification() async throws {
        let base = [
            "verify", try apple("real-signed/sandbox-test-notification.jws"), "--kind", "notification",
            "--bundle-id", "com.loki-project.loki-messenger", "--environment", "Sandbox", "--json",
        ]
        let offline = try await CofferProcess.run(base)
        #expect(offline.status == 0)
        let verified = try json(offline)
        #expect(verified["status"] as? String == "OK")
        let payload = try #require(verified["payload"] as? [String: Any])
        #expect(payload["notificationType"] as? String == "TEST")
        #expect(payload["notificationUUID"] as? String == "592751ef-c1b8-47fc-929e-d62dee66df4c")

        let online = try await CofferProcess.run(base + ["--online"])
        #expect(online.status == 1)
        let refused = try json(online)
        #expect(refused["status"] as? String == "INVALID_CHAIN")
        #expect(refused["payload"] is NSNull)
    }

    @Test("Apple's mock vectors through --root; wrong environment and app identifier are named")
    func mockVectors() async throws {
        let root = try apple("mock-signed/testCA.der")
        let transaction = try await CofferProcess.run([
            "verify", try apple("mock-signed/transactionInfo"), "--kind", "transaction", "--root", root, "--bundle-id",
            "com.example",
            "--environment", "sandbox",
        ])
        #expect(transaction.status == 0)
        #expect(transaction.stdout.hasPrefix("OK: verified transaction"))
        let notification = try apple("mock-signed/testNotification")
        let production = try await CofferProcess.run([
            "verify", notification, "--kind", "notification", "--root", root, "--bundle-id", "com.example",
            "--environment", "Production", "--app-apple-id", "1234", "--json",
        ])
        #expect(production.status == 1)
        #expect(try json(production)["status"] as? String == "INVALID_ENVIRONMENT")
        let otherApp = try await CofferProcess.run([
            "verify", notification, "--kind", "notification", "--root", root, "--bundle-id", "com.example",
            "--environment", "Production", "--app-apple-id", "1235",
        ])
        #expect(otherApp.status == 1)
        #expect(otherApp.stdout.hasPrefix("INVALID_APP_IDENTIFIER"))
    }

    @Test("data signed by the simulator's chain round-trips through coffer verify")
    func simulatorRoundTrip() async throws {
        let pki = try SimulatorPKI(
            validFrom: Date(timeIntervalSince1970: 1_735_689_600),
            leafValidUntil: Date(timeIntervalSince1970: 1_798_761_600))
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("coffer-verify-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let rootPath = folder.appendingPathComponent("root.der")
        try pki.rootDER().write(to: rootPath)
        let payload =
            #"{"transactionId": "2000000042", "productId": "com.example.credits", "bundleId": "com.example.coffer", "environment": "Sandbox", "signedDate": 1767225600000, "quantity": 3}"#
        let jwsPath = folder.appendingPathComponent("transaction.jws")
        try Data(try pki.signer().sign(payloadJSON: Data(payload.utf8)).utf8).write(to: jwsPath)
        let output = try await CofferProcess.run([
            "verify", jwsPath.path, "--kind", "transaction", "--root", rootPath.path, "--bundle-id",
            "com.example.coffer",
            "--environment", "Sandbox", "--json",
        ])
        #expect(output.status == 0, "\(output.stdout)")
        let decoded = try #require(try json(output)["payload"] as? [String: Any])
        #expect(decoded["transactionId"] as? String == "2000000042")
        #expect(decoded["quantity"] as? Int == 3)
        // Without the simulator's root, Apple Root CA - G3 alone does not trust it.
        let untrusted = try await CofferProcess.run([
            "verify", jwsPath.path, "--kind", "transaction", "--bundle-id", "com.example.coffer", "--environment",
            "Sandbox",
        ])
        #expect(untrusted.status == 1)
        #expect(untrusted.stdout.hasPrefix("INVALID_CHAIN"))
    }

    @Test("--online asks the chain's OCSP responders: good, revoked, unreachable")
    func online() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("coffer-online-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let (leafPort, intermediatePort) = (try LocalPort.free(), try LocalPort.free())
        var options = SimulatorPKI.Options()
        options.leafOCSPResponder = "http://127.0.0.1:\(leafPort)/"
        options.intermediateOCSPResponder = "http://127.0.0.1:\(intermediatePort)/"
        let pki = try SimulatorPKI(
            validFrom: Date().addingTimeInterval(-86_400), leafValidUntil: Date().addingTimeInterval(86_400 * 30),
            options: options)
        let rootPath = folder.appendingPathComponent("root.der")
        try pki.rootDER().write(to: rootPath)
        let payload =
            #"{"transactionId": "2000000043", "productId": "com.example.credits", "bundleId": "com.example.coffer", "environment": "Sandbox", "signedDate": 1767225600000}"#
        let jwsPath = folder.appendingPathComponent("transaction.jws")
        try Data(try pki.signer().sign(payloadJSON: Data(payload.utf8)).utf8).write(to: jwsPath)
        let command = [
            "verify", jwsPath.path, "--kind", "transaction", "--root", rootPath.path, "--bundle-id",
            "com.example.coffer", "--environment", "Sandbox", "--online", "--json",
        ]

        let intermediate = try OpenSSLResponder(
            folder: folder, name: "intermediate", port: intermediatePort, issuer: pki.root, issuerKey: pki.rootKey,
            subject: pki.intermediate, status: .good)
        defer { intermediate.stop() }
        let unreachable = try await CofferProcess.run(command)
        #expect(unreachable.status == 1)
        #expect(try json(unreachable)["status"] as? String == "RETRYABLE_VERIFICATION_FAILURE")

        for (answer, status, exit) in [(OCSPAnswer.good, "OK", Int32(0)), (.revoked, "INVALID_CERTIFICATE", 1)] {
            let leaf = try OpenSSLResponder(
                folder: folder, name: "leaf", port: leafPort, issuer: pki.intermediate, issuerKey: pki.intermediateKey,
                subject: pki.leaf, status: answer)
            defer { leaf.stop() }
            let output = try await CofferProcess.run(command)
            #expect(output.status == exit, "\(output.stdout)")
            #expect(try json(output)["status"] as? String == status)
        }
    }

    @Test("unreadable input exits 2 and usage errors 64, never 0 or 1")
    func usageErrors() async throws {
        let missing = try await CofferProcess.run([
            "verify", "/nonexistent/file.jws", "--kind", "transaction", "--bundle-id", "b", "--environment", "Sandbox",
        ])
        #expect(missing.status == 2)
        #expect(missing.stderr.contains("cannot read input"))
        let badKind = try await CofferProcess.run([
            "verify", "x", "--kind", "receipt", "--bundle-id", "b", "--environment", "Sandbox",
        ])
        #expect(badKind.status == 64)
    }
}

@Suite("coffer receipt")
struct ReceiptCommandTests {
    @Test("a real production receipt verifies and lists its purchases")
    func production() async throws {
        let output = try await CofferProcess.run(["receipt", try apple("receipts/receipt-production")])
        #expect(output.status == 0, "\(output.stdout)\(output.stderr)")
        #expect(output.stdout.contains("type Production  bundle org.getpure.pure-iphone"))
        #expect(output.stdout.contains("in-app purchases 4"))
        #expect(output.stdout.contains("340001196262039"))
        let json = try await CofferProcess.run(["receipt", try apple("receipts/receipt-production"), "--json"])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        #expect(object["status"] as? String == "OK")
        let receipt = try #require(object["receipt"] as? [String: Any])
        #expect((receipt["inAppPurchases"] as? [Any])?.count == 4)
    }

    @Test("an Xcode receipt needs --xcode; unreadable files exit 2")
    func xcode() async throws {
        let refused = try await CofferProcess.run(["receipt", try apple("receipts/receipt-xcode")])
        #expect(refused.status == 1)
        #expect(refused.stdout.hasPrefix("INVALID_CHAIN"))
        let accepted = try await CofferProcess.run([
            "receipt", try apple("receipts/receipt-xcode"), "--xcode", try apple("StoreKitTestCertificate.cer"),
        ])
        #expect(accepted.status == 0)
        #expect(accepted.stdout.contains("Xcode's StoreKit test certificate"))
        #expect(try await CofferProcess.run(["receipt", "/nonexistent"]).status == 2)
    }

    @Test("an Xcode-signed transaction: its certificate saved, then trusted in Sandbox with --xcode-certificate")
    func xcodeCertificate() async throws {
        let saved = FileManager.default.temporaryDirectory.appendingPathComponent(
            "coffer-xcode-\(UUID().uuidString).pem")
        defer { try? FileManager.default.removeItem(at: saved) }
        let arguments = [
            "verify", try apple("xcode/xcode-signed-transaction"), "--kind", "transaction", "--bundle-id",
            "com.example.naturelab.backyardbirds.example", "--environment", "Sandbox",
        ]
        let refused = try await CofferProcess.run(arguments + ["--save-xcode-certificate", saved.path])
        #expect(refused.stdout.contains("saved Xcode's certificate (SHA-256 16c47dfe"), "\(refused.stdout)")
        #expect(refused.status == 1)  // saved, never trusted by saving it
        let accepted = try await CofferProcess.run(arguments + ["--xcode-certificate", saved.path])
        #expect(accepted.status == 0, "\(accepted.stdout)")
        #expect(accepted.stdout.contains("\"environment\" : \"Xcode\""), "\(accepted.stdout)")
        let production = try await CofferProcess.run(
            arguments.dropLast(2) + [
                "--environment", "Production", "--app-apple-id", "1", "--xcode-certificate",
                saved.path,
            ])
        #expect(production.status == 1)
    }

    @Test("--root trusts one more root: a receipt in Apple's shape exits 0, a forged chain 1 with the reason")
    func extraRoot() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "coffer-receipt-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        var receipt = AppReceipt()
        receipt.receiptType = "ProductionSandbox"
        receipt.bundleId = "com.example.coffer"
        receipt.creationDate = Date(timeIntervalSince1970: 1_767_225_600)
        var purchase = InAppPurchaseReceipt()
        purchase.productId = "coins"
        purchase.transactionId = "4000000000000007"
        purchase.quantity = 1
        receipt.inAppPurchases = [purchase]
        func write(_ options: SimulatorReceiptAuthority.Options, _ name: String) throws -> (root: String, file: String)
        {
            let authority = try SimulatorReceiptAuthority(
                validFrom: Date(timeIntervalSince1970: 1_700_000_000),
                validUntil: Date(timeIntervalSince1970: 1_900_000_000), options: options)
            let root = folder.appendingPathComponent("\(name)-root.der")
            try authority.rootDER().write(to: root)
            let file = folder.appendingPathComponent("\(name).receipt")
            try Data(authority.sign(receipt).base64EncodedString().utf8).write(to: file)
            return (root.path, file.path)
        }
        let genuine = try write(.init(), "genuine")
        var options = SimulatorReceiptAuthority.Options()
        options.leafOID = false
        let forged = try write(options, "forged")

        let accepted = try await CofferProcess.run(["receipt", genuine.file, "--root", genuine.root])
        #expect(accepted.status == 0, "\(accepted.stdout)\(accepted.stderr)")
        #expect(accepted.stdout.contains("4000000000000007"))
        let untrusted = try await CofferProcess.run(["receipt", genuine.file])
        #expect(untrusted.status == 1)
        let refused = try await CofferProcess.run(["receipt", forged.file, "--root", forged.root, "--json"])
        #expect(refused.status == 1)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(refused.stdout.utf8)) as? [String: Any])
        #expect(object["status"] as? String == "INVALID_CHAIN")
        #expect((object["message"] as? String)?.contains("leaf lacks OID 1.2.840.113635.100.6.11.1") == true)
        #expect(try await CofferProcess.run(["receipt", genuine.file, "--root", "/nonexistent.der"]).status == 2)
    }
}

@Suite("coffer appstore")
struct AppStoreCommandTests {
    @Test("lists the App Store Server API calls; a missing key file exits 2, an unreachable host 1")
    func usage() async throws {
        let help = try await CofferProcess.run(["appstore", "--help"])
        #expect(help.status == 0)
        for command in [
            "transaction", "history", "statuses", "lookup", "refunds", "notifications", "test-notification",
        ] {
            #expect(help.stdout.contains(command))
        }
        let base = [
            "appstore", "transaction", "2000000001", "--key-id", "K", "--issuer-id", "I", "--bundle-id", "com.example",
        ]
        #expect(try await CofferProcess.run(base + ["--private-key", "/nonexistent.p8"]).status == 2)
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("coffer-key-\(UUID().uuidString).p8")
        try Data(P256.Signing.PrivateKey().pemRepresentation.utf8).write(to: folder)
        let unreachable = try await CofferProcess.run(
            base + ["--private-key", folder.path, "--base-url", "http://127.0.0.1:9", "--timeout", "1"])
        #expect(unreachable.status == 1)
        #expect(unreachable.stderr.contains("unreachable"))
    }
}
