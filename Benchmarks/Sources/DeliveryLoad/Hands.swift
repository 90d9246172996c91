// `DeliveryLoad hands`: a game's hands in the device wallet, through the real SDK, against `coffer serve`.
//
// Each hand takes a bet (`spend(_:key:)`) and, every other hand, pays a win (`earn(_:key:)`), with `CofferModel`
// watching as a game's screen does. It reports the time per hand and the requests the SDK sent to the server while
// the hands ran (the aim: none per hand; backups coalesce to one per `backupDelay`), then checks that the model and
// the server's backup end with the balance the hands left. Benchmarks/hands.sh runs it.
import CofferClient
import CofferSimulator
import Foundation

enum Hands {
    static func run(_ options: Options) async throws -> Int32 {
        let hands = options.int("hands", 10_000)
        let backupDelay = options.double("backup-delay", 2)
        let fixture = try Fixture()
        defer { fixture.remove() }
        let databaseURL = try options.databaseURL(in: fixture.folder)
        let http = HTTP(connections: 1)
        let result: Result<Int32, any Error>
        do {
            let server = try await Child.serve(fixture, databaseURL: databaseURL, wallet: "device", http: http)
            defer { server.stop(grace: 0) }
            result = .success(try await play(hands, backupDelay: backupDelay, fixture: fixture, port: server.port))
        } catch {
            result = .failure(error)
        }
        try await http.shutdown()
        return try result.get()
    }

    /// The hands, against the server on `port`.
    static func play(_ hands: Int, backupDelay: Double, fixture: Fixture, port: Int) async throws -> Int32 {

        let catalog = try Catalog(json: Data(contentsOf: fixture.folder.appendingPathComponent("catalog.json")))
        // The device's StoreKit: the App Store simulator in this process (the hands buy nothing).
        let apple = SimulatedAppStore(
            catalog: catalog, configuration: SimulatorConfiguration(bundleId: Fixture.bundleId, appAppleId: 1_234),
            signer: fixture.signer, clock: SimulatorClock(start: fixture.now))
        guard let base = URL(string: "http://127.0.0.1:\(port)") else { throw LoadFailure("no server URL") }
        let client = ServerClient(baseURL: base)
        var configuration = SDKConfiguration(
            wallet: .device, environment: .sandbox, catalog: catalog, deviceName: "benchmark", identity: .install,
            backupDelay: backupDelay, launchDeadline: nil)
        configuration.startingBalance = 1_000_000
        let sdk = try CofferSDK(
            configuration: configuration, storeKit: apple.device(account: "player"), server: client,
            folder: fixture.folder.appendingPathComponent("app"),
            credentials: FileCredentialStore(path: fixture.folder.appendingPathComponent("keychain.json").path))
        try await sdk.launch()
        let model = await CofferModel(sdk: sdk)
        let watching = Task { await model.run() }
        defer { watching.cancel() }
        while await !Self.settled(model, at: 1_000_000) { try await Task.sleep(for: .milliseconds(10)) }

        let before = client.requestsSent
        let started = ContinuousClock.now
        var balance: Int64 = 0
        for hand in 0..<hands {
            let bet = Int64(10 + hand % 40)
            balance = try await sdk.spend(bet, key: "bet-\(hand)")
            if hand % 2 == 0 { balance = try await sdk.earn(bet * 2, key: "win-\(hand)") }
        }
        let elapsed = ContinuousClock.now - started
        let during = client.requestsSent - before

        // What the game's screen and the server's backup end with.
        var waited = 0
        while await !Self.settled(model, at: balance), waited < 500 {
            try await Task.sleep(for: .milliseconds(10))
            waited += 1
        }
        let shown = await model.balance
        await sdk.backupSettled()
        _ = try await sdk.syncBackup()
        let token = await sdk.credentials?.token ?? ""
        let backedUp = try await client.backup(token: token)?.value
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        print(
            String(
                format: "hands: %d hands in %.2f s, %.3f ms per hand; %d requests to the server while they ran "
                    + "(%.4f per hand, backups every %.1f s); the model shows %lld, the backup holds %lld, the hands "
                    + "left %lld",
                hands, seconds, seconds * 1_000 / Double(hands), during, Double(during) / Double(hands), backupDelay,
                shown, backedUp ?? -1, balance))
        guard shown == balance, backedUp == balance else {
            progress("FAILED: the model or the backup does not hold the balance the hands left")
            return 1
        }
        return 0
    }

    /// Whether the model shows `balance` and is not refreshing.
    @MainActor
    static func settled(_ model: CofferModel, at balance: Int64) -> Bool {
        model.balance == balance && !model.isRefreshing
    }
}
