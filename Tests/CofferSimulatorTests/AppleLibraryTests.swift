import CofferAppStore
import CofferSimulator
import CofferTestSupport
import Foundation
import Testing

/// Apple's own Python library (app-store-server-library, installed from PyPI by the test command) accepts
/// everything Coffer's verifier accepts from the simulator, given the simulator's root.
@Suite("Apple's Python library accepts the simulator's data", .timeLimit(.minutes(2)))
struct AppleLibraryTests {
    /// The Python interpreter with Apple's library, from `COFFER_PYTHON` (set by `scripts/test`).
    static func python() -> String? {
        guard let path = ProcessInfo.processInfo.environment["COFFER_PYTHON"], !path.isEmpty else { return nil }
        return path
    }

    /// A script of `scripts/apple-library`.
    static func script(_ name: String) -> URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("scripts/apple-library/\(name)")
    }

    /// The interpreter with Apple's library, or `nil` after saying why `check` cannot run: a failure under CI (a
    /// missing piece fails there), a warning elsewhere.
    static func pythonOrSay(_ check: String) -> String? {
        if let python = python() { return python }
        let message = "COFFER_PYTHON is not set: run scripts/test, which installs Apple's library from PyPI"
        if ProcessInfo.processInfo.environment["CI"] == "true" {
            Issue.record("\(message) (a missing piece fails under CI)")
        } else {
            print("⚠️  SKIPPED \(check): \(message)")
        }
        return nil
    }

    /// Runs `script` with `argument` under `python` and returns what it printed; a script that fails throws with
    /// what it wrote to standard error. Blocks: call it through `blockingWork`.
    static func run(python: String, script: URL, argument: String) throws -> Data {
        do {
            return try Programs.run(python, [script.path, argument])
        } catch let error as CocoaError {
            throw CocoaError(
                .executableLoad,
                userInfo: [NSLocalizedDescriptionKey: "Apple's library failed: \(error.localizedDescription)"])
        }
    }

    @Test("every kind of signed data, from every scenario, verifies in both")
    func sameVerdicts() async throws {
        guard let python = Self.pythonOrSay("Apple's Python library check") else { return }
        let fixture = try SimulatorFixture()
        let store = fixture.store
        await store.formFamily(["alice", "bob"])
        let credits = try await store.purchase(account: "alice", productId: "com.example.credits", quantity: 3)
        try await store.purchase(account: "alice", productId: "com.example.noads", appAccountToken: UUID())
        let monthly = try await store.purchase(account: "alice", productId: "com.example.pro.monthly")
        try await store.purchase(account: "carol", productId: "com.example.pass")
        try await store.advanceClock(by: 31 * 86_400)
        try await store.purchase(account: "alice", productId: "com.example.pro.yearly")  // an upgrade
        // The shapes without a transaction's data too: a summary, and an app-level notification.
        try await store.announcePriceIncrease(
            originalTransactionId: try #require(monthly.transactionIds.first), price: 49_990, consentRequired: true)
        var extendAll = MassExtendRenewalDateRequest()
        (extendAll.extendByDays, extendAll.extendReasonCode) = (5, 3)
        (extendAll.productId, extendAll.requestIdentifier) = ("com.example.pro.yearly", UUID().uuidString)
        _ = try await store.extendRenewalDates(extendAll)
        try await store.rescindConsent(account: "alice")
        try await store.requestRefund(transactionId: try #require(credits.transactionIds.first))
        try await store.refund(transactionId: try #require(credits.transactionIds.first), percentage: nil)
        try await store.refund(transactionId: try #require(monthly.transactionIds.first), percentage: 25_000)
        _ = try await store.sendTestNotification()

        var items: [(kind: String, jws: String)] = []
        for notification in await store.sentNotifications().map(\.signedPayload) {
            items.append(("notification", notification))
            let verified = try await fixture.verifier.verifyNotification(notification)
            if let data = verified.payload.data {
                if let transaction = data.signedTransactionInfo { items.append(("transaction", transaction)) }
                if let renewal = data.signedRenewalInfo { items.append(("renewal", renewal)) }
            }
        }
        for account in ["alice", "bob", "carol"] {
            items.append(("app-transaction", try await store.signedAppTransaction(account: account)))
            for transaction in await store.deviceTransactions(account: account) {
                items.append(("transaction", transaction.jwsRepresentation))
            }
        }
        // Coffer accepts every item...
        for item in items {
            switch item.kind {
            case "notification": _ = try await fixture.verifier.verifyNotification(item.jws)
            case "transaction": _ = try await fixture.verifier.verifyTransaction(item.jws)
            case "renewal": _ = try await fixture.verifier.verifyRenewalInfo(item.jws)
            default: _ = try await fixture.verifier.verifyAppTransaction(item.jws)
            }
        }
        #expect(items.count > 30)
        // ...and so does Apple's library; a tampered copy is refused by both, so the library really checks.
        let tampered = Self.tamper(try #require(items.first { $0.kind == "transaction" }).jws)
        await #expect(throws: VerificationError.self) { try await fixture.verifier.verifyTransaction(tampered) }
        // Apple's library runs in a child process, waited for on a thread of its own.
        let (root, checked) = (try fixture.pki.rootDER(), items + [("transaction", tampered)])
        let verdicts = try await blockingWork { try Self.appleVerdicts(python: python, root: root, items: checked) }
        #expect(verdicts.count == items.count + 1)
        for (item, verdict) in zip(items, verdicts) {
            #expect(verdict == "OK", "Apple's library refused a \(item.kind): \(verdict)")
        }
        #expect(verdicts.last?.hasPrefix("refused") == true)
    }

    /// The JWS with one payload character changed.
    static func tamper(_ jws: String) -> String {
        var parts = jws.split(separator: ".").map(String.init)
        var payload = Array(parts[1])
        payload[10] = payload[10] == "A" ? "B" : "A"
        parts[1] = String(payload)
        return parts.joined(separator: ".")
    }

    /// Runs Apple's library over the items and returns its verdicts.
    static func appleVerdicts(python: String, root: Data, items: [(kind: String, jws: String)]) throws -> [String] {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "coffer-applelib-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try root.write(to: folder.appendingPathComponent("root.der"))
        let spec: [String: Any] = [
            "bundleId": SimulatorFixture.bundleId, "appAppleId": 1_234, "environment": "Sandbox",
            "items": items.map { ["kind": $0.kind, "jws": $0.jws] },
        ]
        try JSONSerialization.data(withJSONObject: spec).write(to: folder.appendingPathComponent("items.json"))
        let printed = try run(python: python, script: script("verify.py"), argument: folder.path)
        return try #require(JSONSerialization.jsonObject(with: printed) as? [String])
    }
}
