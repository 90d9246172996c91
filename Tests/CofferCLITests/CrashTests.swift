import CofferCore
import CofferSimulator
import CofferStore
import CofferStorePostgres
import CofferStoreSQLite
import CofferTestSupport
import Foundation
import Synchronization
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
#if canImport(Glibc)
    import Glibc
#endif

/// `coffer serve` killed with SIGKILL at seeded moments while connections post verified deliveries and
/// Apple's refund notifications, then started again on the same database. Every delivery and refund the
/// server acknowledged must be there exactly once afterwards, and every user's books sound.
///
/// The test command runs a short version (a few kills per engine); `COFFER_CRASH_SECONDS=300
/// COFFER_CRASH_SEED=7 swift test --filter CrashTests` runs longer.
@Suite("Crash test: SIGKILL under load", .serialized, .timeLimit(.minutes(5)))
struct CrashTests {
    let serve = ServeCommandTests()

    enum Engine: String, CaseIterable, CustomTestStringConvertible, Sendable {
        case sqlite
        case postgres

        var testDescription: String { rawValue }

        static var allCases: [Engine] {
            if TestPostgres.url != nil || TestPostgres.required { return [.sqlite, .postgres] }
            FileHandle.standardError.write(Data("warning: \(TestPostgres.missing)\n".utf8))
            return [.sqlite]
        }
    }

    /// What the server acknowledged, shared by the connections.
    final class Acknowledged: Sendable {
        let deliveries = Mutex<[String: String]>([:])  // transaction id -> Support ID
        let refunds = Mutex<Set<String>>([])
        let failures = Mutex(0)
        /// Set when the load should end.
        let stop = Mutex(false)
    }

    @Test("every acknowledged delivery and refund survives SIGKILL exactly once", arguments: Engine.allCases)
    func killedUnderLoad(engine: Engine) async throws {
        let environment = ProcessInfo.processInfo.environment
        let seconds = Double(environment["COFFER_CRASH_SECONDS"] ?? "") ?? 12
        var random = SeededGenerator(state: UInt64(environment["COFFER_CRASH_SEED"] ?? "") ?? 1)
        let folder = try serve.temporaryFolder()
        let now = Date()
        let pki = try SimulatorPKI(
            validFrom: now.addingTimeInterval(-86_400), leafValidUntil: now.addingTimeInterval(86_400))
        try pki.rootDER().write(to: folder.appendingPathComponent("root.der"))
        try Data(#"{"products": [{"id": "com.example.credits", "kind": "consumable", "credits": 100}]}"#.utf8)
            .write(to: folder.appendingPathComponent("crash-catalog.json"))
        let apple = SimulatedAppStore(
            catalog: try Catalog(products: [CatalogProduct(id: "com.example.credits", kind: .consumable, credits: 100)]
            ),
            configuration: .init(bundleId: "com.example.app", appAppleId: 1_234), signer: try pki.signer(),
            clock: SimulatorClock(start: now))
        let databaseURL =
            switch engine {
            case .sqlite: "sqlite:" + folder.appendingPathComponent("crash.sqlite").path
            case .postgres: try await TestPostgres.freshDatabase()
            }
        let port = try LocalPort.free()
        let base = "http://127.0.0.1:\(port)"
        let arguments = [
            "serve", "--bundle-id", "com.example.app", "--apple-root", "root.der", "--catalog", "crash-catalog.json",
            "--port", String(port), "--database-url", databaseURL, "--wallet", "server",
        ]
        let server = Mutex<Process?>(nil)
        func start() async throws {
            let process = try serve.start(arguments, in: folder, environment: ["COFFER_LOG_LEVEL": "error"])
            server.withLock { $0 = process }
            for _ in 0..<200 {
                if (try? await serve.request("GET", base + "/readyz"))?.status == 200 { return }
                try await Task.sleep(for: .milliseconds(50))
            }
            throw Broken(description: "the server did not come back")
        }
        func kill9() {
            server.withLock { process in
                guard let process else { return }
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
            }
        }
        defer { kill9() }
        try await start()

        // Eight customers, each on its own connection.
        var users: [(token: String, supportId: String, accountToken: String)] = []
        for _ in 0..<8 {
            let created = try await serve.request("POST", base + "/v1/users")
            users.append(
                (
                    try #require(created.json["token"] as? String), try #require(created.json["supportId"] as? String),
                    try #require(created.json["appAccountToken"] as? String)
                ))
        }
        let acknowledged = Acknowledged()
        let kills = max(2, Int(seconds / 4))
        let pauses = (0..<kills).map { _ in Double.random(in: 0.5...(seconds / Double(kills)), using: &random) }

        try await withThrowingTaskGroup(of: Void.self) { group in
            for (index, user) in users.enumerated() {
                group.addTask {
                    var count = 0
                    while !acknowledged.stop.withLock({ $0 }) {
                        count += 1
                        let report = try await apple.purchase(
                            account: "customer-\(index)", productId: "com.example.credits",
                            appAccountToken: UUID(uuidString: user.accountToken))
                        let id = try #require(report.transactionIds.first)
                        let signed = try await apple.signedTransaction(id: id)
                        // Posted until the server answers: through kills, a lost answer is retried as a duplicate.
                        try await Self.untilAnswered(acknowledged) {
                            try await Self.post(
                                base + "/v1/transactions", token: user.token, json: ["signedTransaction": signed])
                        }
                        acknowledged.deliveries.withLock { $0[id] = user.supportId }
                        if count % 4 == 0 {
                            let sent = await apple.sentNotifications().count
                            _ = try await apple.refund(transactionId: id)
                            // Other customers' purchases send notifications too: find this refund's.
                            let refund = try #require(
                                await apple.sentNotifications().dropFirst(sent).first {
                                    Self.isRefund(of: id, $0.signedPayload)
                                })
                            try await Self.untilAnswered(acknowledged) {
                                try await Self.post(
                                    base + "/v1/apple/notifications", token: nil,
                                    json: ["signedPayload": refund.signedPayload])
                            }
                            acknowledged.refunds.withLock { _ = $0.insert(id) }
                        }
                    }
                }
            }
            // The killer: SIGKILL at seeded moments, then the server starts again on the same database.
            for pause in pauses {
                try await Task.sleep(for: .seconds(pause))
                kill9()
                // Down for a moment, as a crashed server is, so the customers' requests meet it down even when
                // a loaded machine makes them few (once, under a full parallel test run, none did).
                try await Task.sleep(for: .seconds(1))
                try await start()
            }
            acknowledged.stop.withLock { $0 = true }
            try await group.waitForAll()
        }
        kill9()

        // Read the database the killed servers left.
        let store: any CofferStore =
            switch engine {
            case .sqlite: try SQLiteStore(path: folder.appendingPathComponent("crash.sqlite").path)
            case .postgres: try await PostgresStore(url: databaseURL, maximumConnections: 2)
            }
        defer { (store as? PostgresStore)?.close() }
        let deliveries = acknowledged.deliveries.withLock { $0 }
        let refunds = acknowledged.refunds.withLock { $0 }
        print(
            "crash test (\(engine.rawValue)): \(deliveries.count) deliveries and \(refunds.count) refunds "
                + "acknowledged through \(kills) SIGKILLs; \(acknowledged.failures.withLock { $0 }) requests met a "
                + "server that was down")
        #expect(deliveries.count >= 8, "the load delivered too little to mean anything")
        #expect(acknowledged.failures.withLock { $0 } > 0, "no request ever met a killed server")
        var purchases = 0
        for user in users {
            let supportId = try #require(SupportID(user.supportId))
            let stored = try #require(try await store.user(supportId: supportId, environment: .sandbox))
            let entries = try await store.entries(owner: stored.id, environment: .sandbox)
            let wallet = try await store.wallet(owner: stored.id, environment: .sandbox)
            #expect(LedgerAudit.discrepancies(entries: entries, wallet: wallet) == [])
            purchases += entries.count { $0.key.kind == .purchase }
        }
        #expect(purchases == deliveries.count, "every acknowledged delivery once, and nothing else")
        for (id, _) in deliveries {
            let receipt = try await store.receipt(transactionId: id, environment: .sandbox)
            #expect(receipt?.deliveredAt != nil, "acknowledged delivery \(id) is missing")
            #expect(receipt?.isRevoked == refunds.contains(id), "acknowledged refund of \(id)")
        }
    }

    /// Retries `call` until the server answers 200; connection failures and 5xx (a server being killed or
    /// starting) are counted and retried.
    static func untilAnswered(_ acknowledged: Acknowledged, _ call: () async throws -> Int) async throws {
        for _ in 0..<2_000 {
            let status = (try? await call()) ?? 0
            if status == 200 { return }
            guard status == 0 || status >= 500 else { throw Broken(description: "the server refused: \(status)") }
            acknowledged.failures.withLock { $0 += 1 }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw Broken(description: "the server never answered")
    }

    /// Whether a signed notification is the REFUND of transaction `id` (read without verifying: the test
    /// only picks which of Apple's notifications to send).
    static func isRefund(of id: String, _ signed: String) -> Bool {
        func payload(_ jws: String) -> [String: Any]? {
            let parts = jws.split(separator: ".")
            guard parts.count == 3 else { return nil }
            var text = parts[1].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
            text += String(repeating: "=", count: (4 - text.count % 4) % 4)
            guard let data = Data(base64Encoded: text) else { return nil }
            return try? JSONSerialization.jsonObject(with: data) as? [String: Any]
        }
        guard let notification = payload(signed), notification["notificationType"] as? String == "REFUND",
            let info = (notification["data"] as? [String: Any])?["signedTransactionInfo"] as? String
        else { return false }
        return payload(info)?["transactionId"] as? String == id
    }

    static func post(_ url: String, token: String?, json: [String: String]) async throws -> Int {
        var request = URLRequest(url: try #require(URL(string: url)))
        request.httpMethod = "POST"
        request.timeoutInterval = 10
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        request.httpBody = try JSONSerialization.data(withJSONObject: json)
        let (_, response) = try await URLSession.shared.data(for: request)
        return (response as? HTTPURLResponse)?.statusCode ?? 0
    }
}
