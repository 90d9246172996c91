import AsyncHTTPClient
import CofferAPI
import CofferCore
import CofferStore
import Foundation
import Hummingbird
import HummingbirdTesting
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
import Synchronization
import Testing

@testable import CofferClient

/// A balance a game can use: credits won in play, a bankroll set in play, a starting balance, and a backup
/// after every change.
@Suite("SDK: a balance a game can use", .timeLimit(.minutes(2)))
struct GameBalanceTests {
    /// The server's backup of the app's customer.
    static func backup(_ world: PurchaseFlowTests.World, _ app: CofferSDK) async throws -> Int64? {
        let token = try #require(await app.credentials?.token)
        return try await world.server.backup(token: token)?.value
    }

    @Test("earn adds credits once per key and backs them up; the server wallet refuses it")
    func earn() async throws {
        try await PurchaseFlowTests.withWorld(wallet: .device) { world in
            let app = try world.app()
            try await app.launch()
            #expect(try await app.earn(50, key: "round-1") == 50)
            #expect(try await app.earn(50, key: "round-1") == 50)
            await #expect(throws: LedgerError.keyReused(IdempotencyKey(.adjustment, "earn:round-1"))) {
                try await app.earn(60, key: "round-1")
            }
            #expect(try await app.earn(25, key: "round-2") == 75)
            await #expect(throws: LedgerError.invalidAmount(0)) { try await app.earn(0, key: "round-3") }
            await app.backupSettled()
            #expect(try await Self.backup(world, app) == 75)
        }
        try await PurchaseFlowTests.withWorld(wallet: .server) { world in
            let app = try world.app()
            try await app.launch()
            await #expect {
                try await app.earn(50, key: "round-1")
            } throws: { error in
                if case SDKError.deviceWalletOnly = error { true } else { false }
            }
        }
    }

    @Test("setBalance is a compare-and-set: a grant applied since the game read the balance is never undone")
    func setBalance() async throws {
        try await PurchaseFlowTests.withWorld(wallet: .device) { world in
            let app = try world.app()
            try await app.launch()
            #expect(try await app.setBalance(1_234, expected: 0, reason: "hand won") == 1_234)
            #expect(try await app.setBalance(1_000, expected: 1_234, reason: "hand lost") == 1_000)
            await #expect(throws: LedgerError.invalidAmount(-1)) {
                try await app.setBalance(-1, expected: 1_000, reason: "x")
            }
            // The game read 1,000; support's grant of 500 is applied before the game sets 900.
            let user = try #require(
                try await world.serverStore.user(supportId: try app.localUser().supportId, environment: .sandbox))
            try await world.serverStore.createGrant(
                Grant(
                    environment: .sandbox, recipient: user.id, credits: 500, reason: "Ticket #8", createdBy: "support",
                    createdAt: Date()))
            #expect(try await app.refreshGrants() == 500)
            await #expect(throws: SDKError.balanceMoved(expected: 1_000, actual: 1_500)) {
                try await app.setBalance(900, expected: 1_000, reason: "hand lost")
            }
            await #expect(throws: SDKError.balanceMoved(expected: 1_000, actual: 1_500)) {
                try await app.setBalance(1_000, expected: 1_000, reason: "no change")
            }
            #expect(try await app.setBalance(1_400, expected: 1_500, reason: "hand lost") == 1_400)
            let entries = try await app.ledger.entries(owner: try await app.localUser().id, environment: .sandbox)
            #expect(entries.map(\.reason) == ["hand won", "hand lost", "Ticket #8", "hand lost"])
            #expect(entries.map(\.amount) == [1_234, -234, 500, -100])
            await app.backupSettled()
            #expect(try await Self.backup(world, app) == 1_400)
        }
        try await PurchaseFlowTests.withWorld(wallet: .server) { world in
            let app = try world.app()
            try await app.launch()
            await #expect {
                try await app.setBalance(5, expected: 0, reason: "x")
            } throws: { error in
                if case SDKError.deviceWalletOnly = error { true } else { false }
            }
        }
    }

    @Test("a hand (a bet, a win) makes no request: the model takes the balance from the change itself")
    @MainActor
    func handsMakeNoRequest() async throws {
        try await PurchaseFlowTests.withWorld(wallet: .device) { world in
            // Backups left to the app's own moments (launch, foreground, background): what a hand asks is counted.
            let app = try world.app(startingBalance: 1_000, backupDelay: nil)
            try await app.launch()
            let model = await CofferModel(sdk: app)
            let running = Task { await model.run() }
            defer { running.cancel() }
            #expect(try await CofferModelTests.eventually { model.balance == 1_000 })
            #expect(try await CofferModelTests.eventually { !model.isRefreshing })
            let launched = await model.backup
            if case .matches = launched {} else { Issue.record("the launch's backup: \(launched)") }
            let before = world.server.requestsSent
            var expected: Int64 = 1_000
            for hand in 0..<200 {
                let bet = Int64(10 + hand % 7)
                expected = try await app.spend(bet, key: "bet-\(hand)")
                if hand % 3 == 0 { expected = try await app.earn(bet * 2, key: "win-\(hand)") }
            }
            let settled = expected
            #expect(try await CofferModelTests.eventually { model.balance == settled })
            #expect(world.server.requestsSent == before, "a hand asked the server")
            #expect(await model.backup == .differs(device: settled, server: 1_000))
            // The app goes to the background: one backup for all 200 hands.
            await app.enteredBackground()
            #expect(world.server.requestsSent - before == 2)  // the backup read, and its write
            #expect(try await CofferModelTests.eventually { model.backup != .differs(device: settled, server: 1_000) })
            #expect(try await Self.backup(world, app) == settled)
        }
    }

    @Test("a starting balance is the untouched one: a new player gets it, a reinstall restores the backup instead")
    func startingBalance() async throws {
        try await PurchaseFlowTests.withWorld(wallet: .device) { world in
            let app = try world.app(startingBalance: 1_000)
            try await app.launch()
            #expect(try await app.balance() == 1_000)
            #expect(try await app.spend(300) == 700)
            await app.backupSettled()
            #expect(try await Self.backup(world, app) == 700)
            // Reinstalled (the files gone, the Keychain kept): the backup, not a new 1,000.
            try FileManager.default.removeItem(at: world.folder.appendingPathComponent("app"))
            let again = try world.app(startingBalance: 1_000)
            try await again.launch()
            #expect(try await again.balance() == 700)
            // A backup above the starting balance comes back too.
            #expect(try await again.earn(800, key: "jackpot") == 1_500)
            await again.backupSettled()
            try FileManager.default.removeItem(at: world.folder.appendingPathComponent("app"))
            let third = try world.app(startingBalance: 1_000)
            try await third.launch()
            #expect(try await third.balance() == 1_500)
        }
    }

    @Test("the backup carries the deficit: a reinstall restores what a refund left owed, with the balance")
    func deficitBackedUp() async throws {
        try await PurchaseFlowTests.withWorld(wallet: .device) { world in
            let app = try world.app()
            try await app.launch()
            guard
                case .delivered(let id, 300) = try await app.purchase(productId: PurchaseFlowTests.product, quantity: 3)
            else {
                Issue.record("not delivered")
                return
            }
            #expect(try await app.spend(250) == 50)
            try await world.apple.refund(transactionId: id)
            #expect(try await app.refundCheck() == 1)
            #expect(try await app.localWallet() == Wallet(balance: 0, deficit: 250))
            _ = try await app.syncBackup()
            let token = try #require(await app.credentials?.token)
            #expect(try await world.server.backup(token: token)?.deficit == 250)
            // The backups the spend and the refund scheduled run before the files go, as the other reinstalls here
            // wait: one firing while they are removed failed the reinstall's first commit (SQLite's disk I/O error).
            await app.backupSettled()
            try FileManager.default.removeItem(at: world.folder.appendingPathComponent("app"))
            let again = try world.app()
            try await again.launch()
            #expect(try await again.localWallet() == Wallet(balance: 0, deficit: 250))
        }
    }

    @Test("a backup that loses to another device's write (412) reads again and takes the newer backup, no error")
    func conflict() async throws {
        try await PurchaseFlowTests.withWorld(wallet: .device) { world in
            let app = try world.app()
            try await app.launch()
            let token = try #require(await app.credentials?.token)
            let server = world.server
            // Another device of the customer writes the backup between this one's read and write, once.
            let wrote = Mutex(false)
            await app.setBeforeBackupWrite {
                guard
                    !wrote.withLock({ done in
                        defer { done = true }
                        return done
                    })
                else { return }
                let current = try? await server.backup(token: token)
                _ = try? await server.saveBackup(
                    value: 5, device: "other phone", version: current?.version, token: token)
            }
            _ = try await app.earn(10, key: "win")
            await app.backupSettled()
            #expect(wrote.withLock { $0 })
            #expect(await app.lastBackupFailure == nil)
            // The other device's backup is the newer one: this device takes it, and launch goes on.
            #expect(try await app.balance() == 5)
            #expect(try await Self.backup(world, app) == 5)
            let report = try await app.launch()
            #expect(!report.offline)
            guard case .delivered = try await app.purchase(productId: PurchaseFlowTests.product) else {
                Issue.record("the purchase did not deliver")
                return
            }
            #expect(try await Self.backup(world, app) == 105)
        }
    }

    @Test(
        "a backup that keeps losing (412 three times) is kept in lastBackupFailure and never fails launch or purchase")
    func conflictNeverEscapes() async throws {
        try await PurchaseFlowTests.withWorld(wallet: .device) { world in
            // Between the app and the server, a proxy that answers every backup write 412 with the record on
            // file, as when other devices keep writing first: the app reads again, decides again, loses again.
            let http = HTTPClient.shared
            let target = world.server.baseURL.absoluteString
            let losses = Mutex(0)
            let router = Router()
            router.on("**", method: .get) { request, _ in try await Self.forward(request, to: target, http) }
            router.on("**", method: .post) { request, _ in try await Self.forward(request, to: target, http) }
            router.on("**", method: .put) { request, _ -> Response in
                guard request.uri.path == "/v1/me/backup" else {
                    return try await Self.forward(request, to: target, http)
                }
                losses.withLock { $0 += 1 }
                let current = try await Self.forward(request, to: target, http, method: .GET)
                return Response(status: .preconditionFailed, headers: current.headers, body: current.body)
            }
            let proxy = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
            try await proxy.test(.live) { client in
                let port = try #require(client.port)
                let behind = PurchaseFlowTests.World(
                    apple: world.apple, serverStore: world.serverStore, catalog: world.catalog, wallet: .device,
                    server: ServerClient(baseURL: try #require(URL(string: "http://127.0.0.1:\(port)"))),
                    folder: world.folder, clock: world.clock)
                let app = try behind.app(backupDelay: nil)
                let report = try await app.launch()  // no backup yet: the first write loses three times
                #expect(!report.offline)
                // Each sync of the launch (it syncs first and last) lost three times, and gave up.
                let afterLaunch = losses.withLock { $0 }
                #expect(afterLaunch >= 3 && afterLaunch % 3 == 0)
                #expect(await app.lastBackupFailure == "the backup kept changing under this device")
                guard case .delivered(_, 100) = try await app.purchase(productId: PurchaseFlowTests.product) else {
                    Issue.record("the purchase did not deliver")
                    return
                }
                #expect(losses.withLock { $0 } == afterLaunch + 3)
                #expect(try await app.balance() == 100)
                #expect(try await app.launch().recovered.isEmpty)
            }
        }
    }

    /// Sends `request` on to the server at `target` (as `method`, when given, without a body) and answers what
    /// it answered.
    static func forward(
        _ request: Request, to target: String, _ http: HTTPClient, method: NIOHTTP1.HTTPMethod? = nil
    ) async throws -> Response {
        var outgoing = HTTPClientRequest(url: target.trimmingCharacters(in: ["/"]) + request.uri.description)
        outgoing.method = method ?? .init(rawValue: request.method.rawValue)
        if let authorization = request.headers[.authorization] {
            outgoing.headers.add(name: "Authorization", value: authorization)
        }
        for name in ["If-Match", "Idempotency-Key", "Content-Type"] {
            if let field = request.headers.first(where: { $0.name.canonicalName == name.lowercased() }) {
                outgoing.headers.add(name: name, value: field.value)
            }
        }
        if method == nil {
            let body = try await request.body.collect(upTo: 1 << 20)
            if body.readableBytes > 0 { outgoing.body = .bytes(body) }
        }
        let answer = try await http.execute(outgoing, timeout: .seconds(10))
        var headers: HTTPFields = [:]
        if let type = answer.headers.first(name: "content-type") { headers[.contentType] = type }
        if let tag = answer.headers.first(name: "etag") { headers[.eTag] = tag }
        return Response(
            status: .init(code: Int(answer.status.code)), headers: headers,
            body: .init(byteBuffer: try await answer.body.collect(upTo: 1 << 20)))
    }
}
