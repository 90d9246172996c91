import CofferAPI
import CofferAdmin
import CofferAppStore
import CofferClient
import CofferCore
import CofferSimulator
import CofferStore
import CofferStoreKit
import CofferTestSupport
import Foundation
import Hummingbird
import HummingbirdTesting
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What keeps the app in step while it runs: the server's event stream, the periodic and background backup,
/// spending, and StoreKit from a simulator in another process.
@Suite("SDK live sync", .timeLimit(.minutes(3)))
struct LiveSyncTests {
    typealias World = PurchaseFlowTests.World

    /// Waits, polling, until `condition` holds; records an issue if it never does within `seconds`.
    static func eventually(
        _ what: String, within seconds: Int = 20, _ condition: @Sendable () async throws -> Bool
    ) async throws {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while ContinuousClock.now < deadline {
            if try await condition() { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        Issue.record(Comment(rawValue: "never happened: \(what)"))
    }

    /// Sends an admin API request signed with a key made on the server for it; answers the status.
    static func admin(_ world: World, _ path: String, body: some Encodable) async throws -> Int {
        let key = NewAdminKey(name: "support laptop", at: Date())
        try await world.serverStore.createAdminKey(key.record)
        let signer = try AdminRequestSigner(keyId: key.record.id, privateKeyPEM: key.privateKeyPEM)
        let bytes = try JSONEncoder().encode(body)
        var request = URLRequest(url: try #require(URL(string: path, relativeTo: world.server.baseURL)))
        request.httpMethod = "POST"
        request.httpBody = bytes
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        let url = try #require(request.url)
        let host = try #require(url.host).appending(url.port.map { ":\($0)" } ?? "")
        for header in try signer.headers(method: "POST", host: host, body: bytes, path: path, at: Date()) {
            request.setValue(header.value, forHTTPHeaderField: header.name)
        }
        let (_, response) = try await URLSession.shared.data(for: request)
        return (response as? HTTPURLResponse)?.statusCode ?? 0
    }

    /// Whether the app says its backup matches the server's record (written at the record's time, to the
    /// second the wire carries).
    static func matches(_ app: CofferSDK, _ stored: BackupRecord) async throws -> Bool {
        guard case .matches(let since) = try await app.backupStatus() else { return false }
        return abs(since.timeIntervalSince(stored.lastUpdated)) < 1
    }

    /// Runs `body` with the app listening to the server's events, once the stream is open.
    ///
    /// The stream is closed, and its end waited for, before this returns: the server a test stops next then
    /// never closes a connection the app is cancelling at the same moment (FoundationNetworking on Linux can
    /// trap when a data task is cancelled while it completes).
    static func listening(_ app: CofferSDK, _ body: () async throws -> Void) async throws {
        let listener = Task { await app.listenForServerEvents(retry: .milliseconds(100)) }
        do {
            try await eventually("the event stream opens") { await app.isConnectedToEvents }
            try await body()
        } catch {
            listener.cancel()
            await listener.value
            throw error
        }
        listener.cancel()
        await listener.value
    }

    @Test("a grant support makes reaches a listening app through the event stream", arguments: WalletMode.allCases)
    func grantFromEvents(wallet: WalletMode) async throws {
        try await PurchaseFlowTests.withWorld(wallet: wallet) { world in
            let app = try world.app()
            try await app.launch()
            let supportId = try #require(await app.credentials?.supportId)
            let user = try await SupportFlowTests.serverUser(world, app)
            try await Self.listening(app) {
                let status = try await Self.admin(
                    world, "/v1/admin/grants?environment=Sandbox",
                    body: GrantRequest(supportId: supportId, credits: 400, reason: "Ticket #7"))
                #expect(status == 201)
                try await Self.eventually("the grant is claimed") {
                    try await world.serverStore.grants(
                        environment: .sandbox, recipient: user.id, status: .claimed, limit: 10
                    ).count == 1
                }
                try await Self.eventually("the balance holds the grant") { try await app.balance() == 400 }
                if wallet == .device {
                    try await Self.eventually("the backup holds the grant") {
                        try await world.serverStore.backup(owner: user.id, environment: .sandbox)?.value == 400
                    }
                }
            }
            #expect(await app.lastEventFailure == nil)
            // Picked up once: a launch afterwards finds nothing more.
            let report = try await world.app().launch()
            #expect(report.granted == 0)
            #expect(try await app.balance() == 400)
        }
    }

    @Test("device wallet: support's balance edit reaches a listening app through the event stream")
    func adminEditFromEvents() async throws {
        try await PurchaseFlowTests.withWorld(wallet: .device) { world in
            let app = try world.app()
            try await app.launch()
            _ = try await app.purchase(productId: PurchaseFlowTests.product, quantity: 3)
            let supportId = try #require(await app.credentials?.supportId)
            try await Self.listening(app) {
                let status = try await Self.admin(
                    world, "/v1/admin/users/\(supportId)/balance?environment=Sandbox",
                    body: BalanceRequest(balance: 1_000, reason: "fix"))
                #expect(status == 200)
                try await Self.eventually("the app takes the edit") { try await app.balance() == 1_000 }
            }
            #expect(try await world.app().launch().adjusted == 0)
            #expect(try await app.balance() == 1_000)
        }
    }

    @Test("device wallet: the backup follows spending every few moments and on going to the background")
    func backupSchedule() async throws {
        try await PurchaseFlowTests.withWorld(wallet: .device) { world in
            // No backup after each change here: the periodic and background ones are what is tested, the period
            // on a clock the test moves.
            let clock = TestClock()
            let app = try world.app(backupDelay: nil, timerClock: clock)
            try await app.launch()
            _ = try await app.purchase(productId: PurchaseFlowTests.product, quantity: 3)
            let user = try await SupportFlowTests.serverUser(world, app)
            #expect(try await app.spend(50) == 250)
            #expect(try await app.backupStatus() == .differs(device: 250, server: 300))

            let schedule = Task { await app.runBackups(every: .seconds(300)) }
            await clock.waitForSleepers()
            clock.advance(299)
            #expect(clock.sleepers == 1)  // not yet five minutes: nothing was backed up
            #expect(try await world.serverStore.backup(owner: user.id, environment: .sandbox)?.value == 300)
            clock.advance(1)
            try await Self.eventually("the periodic backup holds 250") {
                try await world.serverStore.backup(owner: user.id, environment: .sandbox)?.value == 250
            }
            schedule.cancel()
            await schedule.value
            let stored = try #require(try await world.serverStore.backup(owner: user.id, environment: .sandbox))
            #expect(try await LiveSyncTests.matches(app, stored))

            #expect(try await app.spend(100) == 150)
            await app.enteredBackground()
            #expect(await app.lastBackupFailure == nil)
            #expect(try await world.serverStore.backup(owner: user.id, environment: .sandbox)?.value == 150)

            // Syncs asked for at once (the schedule, a purchase, an event) run one after another.
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<4 {
                    group.addTask {
                        _ = try await app.spend(10)
                        _ = try await app.syncBackup()
                    }
                }
                try await group.waitForAll()
            }
            #expect(try await world.serverStore.backup(owner: user.id, environment: .sandbox)?.value == 110)
            #expect(try await app.balance() == 110)
        }
    }

    @Test(
        "device wallet: a balance change is backed up backupDelay later on the SDK's clock; changes meanwhile share it")
    func delayedBackup() async throws {
        try await PurchaseFlowTests.withWorld(wallet: .device) { world in
            let clock = TestClock()
            let app = try world.app(backupDelay: 2, timerClock: clock)
            try await app.launch()
            _ = try await app.purchase(productId: PurchaseFlowTests.product, quantity: 3)
            let user = try await SupportFlowTests.serverUser(world, app)
            try await Self.eventually("the purchase's backup holds 300") {
                if clock.sleepers > 0 { clock.advance(2) }
                return try await world.serverStore.backup(owner: user.id, environment: .sandbox)?.value == 300
            }
            #expect(try await app.spend(50) == 250)
            await clock.waitForSleepers()
            #expect(try await app.spend(25) == 225)
            #expect(clock.sleepers == 1)  // one backup waits, for both changes
            clock.advance(1.9)
            #expect(try await world.serverStore.backup(owner: user.id, environment: .sandbox)?.value == 300)
            clock.advance(0.1)
            try await Self.eventually("the delayed backup holds 225") {
                try await world.serverStore.backup(owner: user.id, environment: .sandbox)?.value == 225
            }
        }
    }

    @Test("with the server out of reach the background backup says why and the next one catches up")
    func backupOffline() async throws {
        try await PurchaseFlowTests.withWorld(wallet: .device) { world in
            let app = try world.app()
            try await app.launch()
            _ = try await app.purchase(productId: PurchaseFlowTests.product)
            let offline = try CofferSDK(
                configuration: SDKConfiguration(
                    wallet: .device, environment: .sandbox, catalog: world.catalog, deviceName: "iPhone"),
                storeKit: world.apple.device(account: "alice"),
                server: ServerClient(baseURL: try #require(URL(string: "http://127.0.0.1:9")), timeout: 2),
                folder: world.folder.appendingPathComponent("app"),
                credentials: FileCredentialStore(path: world.folder.appendingPathComponent("credentials.json").path))
            #expect(try await offline.spend(30) == 70)
            await offline.enteredBackground()
            #expect(await offline.lastBackupFailure != nil)
            await #expect(throws: ServerClientError.self) { try await offline.backupStatus() }
            // Back in reach: the next backup writes what the offline one could not.
            await app.enteredBackground()
            let user = try await SupportFlowTests.serverUser(world, app)
            #expect(try await world.serverStore.backup(owner: user.id, environment: .sandbox)?.value == 70)
        }
    }

    @Test("spending: once per key, never more than the balance, in either wallet", arguments: WalletMode.allCases)
    func spending(wallet: WalletMode) async throws {
        try await PurchaseFlowTests.withWorld(wallet: wallet) { world in
            let app = try world.app()
            try await app.launch()
            _ = try await app.purchase(productId: PurchaseFlowTests.product, quantity: 3)
            #expect(try await app.spend(120, key: "level-7") == 180)
            #expect(try await app.spend(120, key: "level-7") == 180, "a retry of the same spend spends nothing")
            await #expect(throws: LedgerError.insufficientBalance(balance: 180, requested: 500)) {
                try await app.spend(500)
            }
            await #expect(throws: LedgerError.keyReused(IdempotencyKey(.spend, "level-7"))) {
                try await app.spend(5, key: "level-7")
            }
            await #expect(throws: LedgerError.invalidAmount(0)) { try await app.spend(0) }
            #expect(try await app.balance() == 180)
            if wallet == .server {
                #expect(try await app.backupStatus() == .notNeeded)
                let entries = try await world.serverRecords(app).entries
                #expect(entries.filter { $0.key.kind == .spend }.map(\.amount) == [-120])
            }
        }
    }

    @Test("server wallet: the refund check posts refunds the server has not heard of, once")
    func serverRefundCheck() async throws {
        try await PurchaseFlowTests.withWorld(wallet: .server) { world in
            let app = try world.app()
            try await app.launch()
            guard case .delivered(let id, _) = try await app.purchase(productId: PurchaseFlowTests.product) else {
                Issue.record("not delivered")
                return
            }
            // Apple refunds it; its notification never reaches the server.
            try await world.apple.refund(transactionId: id)
            #expect(try await app.refundCheck() == 1)
            #expect(try await app.balance() == 0)
            #expect(try await world.serverRecords(app).receipts.first?.revokedAt != nil)
            #expect(try await app.refundCheck() == 0)
        }
    }

    @Test("StoreKit from a simulator in another process: buy, die, recover, refund, updates")
    func simulatorOverHTTP() async throws {
        try await PurchaseFlowTests.withWorld(wallet: .device) { world in
            let router = SimulatorServer.router(
                store: world.apple, tokens: APITokenVerifier(keys: [:], issuerId: "none", bundleId: "none"))
            let simulator = Application(
                router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
            try await simulator.test(.live) { client in
                let port = try #require(client.port)
                let base = try #require(URL(string: "http://127.0.0.1:\(port)"))
                let storeKit = SimulatorStoreKit(baseURL: base, account: "bob", pollInterval: .milliseconds(100))
                #expect(try await storeKit.clock() == world.apple.clock.now())
                func app(dyingAfter step: SDKStep? = nil) throws -> CofferSDK {
                    try CofferSDK(
                        configuration: SDKConfiguration(
                            wallet: .device, environment: .sandbox, catalog: world.catalog, deviceName: "Linux"),
                        storeKit: storeKit, server: world.server, folder: world.folder.appendingPathComponent("bob"),
                        credentials: FileCredentialStore(path: world.folder.appendingPathComponent("bob.json").path),
                        crashAfter: { if $0 == step { throw PurchaseFlowTests.ProcessDied(step: $0) } })
                }
                let first = try app()
                try await first.launch()
                let bought = try await first.purchase(productId: PurchaseFlowTests.product, quantity: 2)
                guard case .delivered(let id, 200) = bought else {
                    Issue.record("not delivered: \(bought)")
                    return
                }
                let dying = try app(dyingAfter: .delivered)
                await #expect(throws: PurchaseFlowTests.ProcessDied(step: .delivered)) {
                    try await dying.purchase(productId: PurchaseFlowTests.product)
                }
                #expect(await storeKit.unfinished().count == 1)
                let second = try app()
                #expect(try await second.launch().recovered.count == 1)
                #expect(await storeKit.unfinished().isEmpty)
                #expect(try await second.balance() == 300)

                #expect(try await storeKit.refund(transactionId: id).isEmpty == false)
                #expect(try await second.refundCheck() == 1)
                #expect(try await second.balance() == 100)

                // A purchase on another device arrives through the updates.
                let updates = Task { () -> String? in
                    for await transaction in await storeKit.updates() where transaction.id != id {
                        return transaction.id
                    }
                    return nil
                }
                let token = await second.credentials?.appAccountToken
                let other = try await world.apple.purchase(
                    account: "bob", productId: PurchaseFlowTests.product, appAccountToken: token)
                let heard = await updates.value
                #expect(heard != nil && other.transactionIds.contains(heard ?? ""))

                // The sheets and the products, over the simulator's HTTP controls.
                let products = try await storeKit.products(ids: [PurchaseFlowTests.product, "com.example.gone"])
                #expect(products.map(\.id) == [PurchaseFlowTests.product] && products.first?.price == Decimal(0.99))
                let sent = await world.apple.sentNotifications().count
                #expect(try await storeKit.beginRefundRequest(transactionId: other.transactionIds[0]) == .success)
                #expect(await world.apple.sentNotifications().count == sent + 1)
                #expect(storeKit.lastFailure == nil)
                await #expect(throws: SimulatorStoreKitError.self) {
                    try await storeKit.beginRefundRequest(transactionId: "2999999999")
                }
                #expect(storeKit.lastFailure?.contains("unknown-transaction") == true)
                try await storeKit.presentOfferCodeRedeemSheet()  // closed: nothing bought
                try await storeKit.showManageSubscriptions()
                #expect(storeKit.sheetChoices.manageSubscriptionsShown == 1)

                // A purchase StoreKit cannot verify (`POST /simulator/forge`): unfinished and marked, never in the
                // history; the server refuses it, and the launch finishes and reports it.
                var forge = URLRequest(url: base.appendingPathComponent("simulator/forge"))
                forge.httpMethod = "POST"
                forge.httpBody = Data(#"{"account":"bob","productId":"\#(PurchaseFlowTests.product)"}"#.utf8)
                let (answer, response) = try await URLSession.shared.data(for: forge)
                #expect((response as? HTTPURLResponse)?.statusCode == 200)
                let forged = try #require(
                    try JSONDecoder().decode(SimulatorReport.self, from: answer).transactionIds.first)
                #expect(
                    await storeKit.unfinished().filter { $0.id == forged }.map(\.verificationFailure) == [
                        "invalidSignature"
                    ])
                #expect(await storeKit.all().allSatisfy { $0.id != forged })
                let third = try await app().launch()
                #expect(third.unverified.count == 1 && third.unverified[0].hasPrefix(forged))
                #expect(await storeKit.unfinished().allSatisfy { $0.id != forged })
            }
        }
    }
}
