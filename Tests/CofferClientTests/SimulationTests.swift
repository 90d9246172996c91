import CofferAPI
import CofferAdmin
import CofferAppStore
import CofferCore
import CofferServer
import CofferService
import CofferSimulator
import CofferStore
import CofferStoreKit
import CofferStoreSQLite
import CofferTestSupport
import Foundation
import Hummingbird
import HummingbirdTesting
import Synchronization
import Testing

@testable import CofferClient

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The whole system in one process, driven by a seeded random schedule: Apple (the simulator, its clock),
/// a Coffer server on the in-memory or SQLite store, several customers' devices running the SDK, and support.
/// Purchases with quantities, Ask to Buy and cancels, the app dying after any step, Apple's notifications
/// delayed, duplicated, reordered and failing first, refunds and their reversals, renewals, grants, balance
/// edits, spending, duplicate posts, reinstalls, purchases made outside the app, and two devices of one
/// customer (one Apple account): in the server wallet they share the customer's identity and balance, in the
/// device wallet each install is its own user with its own balance and backup, and StoreKit shows both the
/// account's unfinished transactions. After every step the books must be sound on every ledger; once the
/// system settles, everything Apple charged is delivered once (on the ledger of the user who bought it, and
/// nowhere else), nothing is left unfinished or unposted, the server's entitlements equal a recomputation from
/// Apple's history, and nothing reached Production.
///
/// A failing seed prints itself with the steps it took; `COFFER_SIMULATION_SEEDS=SEED` replays it exactly.
/// More: `COFFER_SIMULATION_SEEDS=1-500 COFFER_SIMULATION_STEPS=200 swift test --filter Simulation`.
@Suite("Deterministic simulation", .timeLimit(.minutes(10)))
struct SimulationTests {
    /// The seeds to run: `COFFER_SIMULATION_SEEDS` as `N`, `A-B` or `A,B,C`; 1-12 by default.
    static let seeds = SeedList.parse(ProcessInfo.processInfo.environment["COFFER_SIMULATION_SEEDS"], fallback: "1-12")

    /// Steps per seed: `COFFER_SIMULATION_STEPS`, 40 by default.
    static let steps = Int(ProcessInfo.processInfo.environment["COFFER_SIMULATION_STEPS"] ?? "") ?? 40

    // One seed at a time: run all at once, hundreds of seeds share the two cores until each one's time limit
    // runs out. Each seed keeps a server, devices and a clock of its own, so nothing is shared between them.
    @Test(
        "a seeded schedule of purchases, crashes, lost notifications, refunds and support keeps every promise",
        .serialized, .tags(.sweep), arguments: seeds)
    func schedule(seed: UInt64) async throws {
        let simulation = try Simulation(seed: seed)
        do {
            try await simulation.run(steps: Self.steps)
        } catch {
            Issue.record(
                Comment(
                    rawValue: "seed \(seed) failed: \(error)\nreplay: COFFER_SIMULATION_SEEDS=\(seed) "
                        + "COFFER_SIMULATION_STEPS=\(Self.steps) swift test --filter Simulation\n"
                        + simulation.log.withLock { $0.joined(separator: "\n") }))
        }
    }
}

/// One run of the simulation.
final class Simulation: @unchecked Sendable {
    static let credits = "com.example.credits"
    static let noAds = "com.example.noads"
    static let pro = "com.example.pro"
    /// The second currency: each pack of credits gives 5 gems too, delivered, refunded and backed up beside them.
    static let gems = Currency(rawValue: "gems")!
    /// The account that reviews the app when the server runs in Production.
    static let reviewer = "bob"

    let seed: UInt64
    var random: SeededGenerator
    let wallet: WalletMode
    let engine: String
    /// Where the server runs: Sandbox, or (one seed in four) Production, where Bob is an App Reviewer buying
    /// in the sandbox from the production build: his purchases must be delivered and stay marked Sandbox.
    let environment: CofferCore.AppStoreEnvironment
    let catalog: Catalog
    let apple: SimulatedAppStore
    let clock: SimulatorClock
    let pki: SimulatorPKI
    let serverStore: any CofferStore
    let folder: URL
    let log = Mutex<[String]>([])
    /// Notifications Apple sent that have not reached the server yet (delayed, or their first post failed).
    var inFlight: [OutgoingNotification] = []
    var sentCount = 0
    /// Transactions Apple has refunded once: the ledger takes a transaction back once, and a refund Apple
    /// reversed stays reversed (a second refund of it is `superseded`), so Apple here refunds each once.
    var refundedOnce: Set<String> = []
    var devices: [Device] = []

    init(seed: UInt64) throws {
        self.seed = seed
        random = SeededGenerator(state: seed)
        wallet = seed % 2 == 0 ? .device : .server
        engine = seed % 3 == 0 ? "sqlite" : "memory"
        environment = seed % 4 == 3 ? .production : .sandbox
        catalog = try Catalog(
            products: [
                CatalogProduct(id: Self.credits, kind: .consumable, credits: 100, otherCredits: [Self.gems: 5]),
                CatalogProduct(id: Self.noAds, kind: .nonConsumable, entitlements: ["adFree"]),
                CatalogProduct(id: Self.pro, kind: .autoRenewable, entitlements: ["premium"], group: "pro"),
            ],
            loyalty: [LoyaltyRule(group: "pro", periods: 3, entitlements: ["premium", "lifetime"])],
            currencies: [
                CurrencyDefinition(id: .credits, name: "Credits"), CurrencyDefinition(id: Self.gems, name: "Gems"),
            ])
        let start = PurchaseFlowTests.start
        // A Production server refuses the simulator's root: in Production seeds the chain stands in for Apple's.
        var options = SimulatorPKI.Options()
        options.simulatorMarker = environment == .sandbox
        pki = try SimulatorPKI(
            validFrom: start.addingTimeInterval(-86_400), leafValidUntil: start.addingTimeInterval(4_000 * 86_400),
            options: options)
        clock = SimulatorClock(start: start)
        var appleConfiguration = SimulatorConfiguration(
            bundleId: PurchaseFlowTests.bundleId, appAppleId: 1_234,
            environment: environment == .production ? .production : .sandbox)
        if environment == .production { appleConfiguration.reviewers = [Self.reviewer] }
        apple = SimulatedAppStore(
            catalog: catalog, configuration: appleConfiguration, signer: try pki.signer(), clock: clock)
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("coffer-simulation-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        if engine == "sqlite" {
            serverStore = try SQLiteStore(path: folder.appendingPathComponent("server.sqlite").path)
        } else {
            serverStore = InMemoryStore()
        }
    }

    /// The server wallet registers every device with its Apple account (one customer, one balance). In the
    /// device wallet Bob, one device at a time, does too (his new phones restore the backup); Alice's two
    /// devices keep a user per install: two devices of one account running at once would each hold a balance,
    /// which the device wallet's backup cannot join yet.
    func identity(of device: Device) -> SDKIdentity {
        wallet == .server || device.account == "bob" ? .appleAccount : .install
    }

    func note(_ line: String) { log.withLock { $0.append(line) } }

    func chance(_ percent: Int) -> Bool { Int.random(in: 0..<100, using: &random) < percent }

    func pick<T>(_ items: [T]) -> T? { items.isEmpty ? nil : items[Int.random(in: 0..<items.count, using: &random)] }

    // MARK: The run

    func run(steps: Int) async throws {
        note("seed \(seed): \(wallet.rawValue) wallet, \(engine) store, \(environment.rawValue) server")
        defer { try? FileManager.default.removeItem(at: folder) }
        let verifier = try SignedDataVerifier(
            rootCertificates: [pki.rootDER()], bundleId: PurchaseFlowTests.bundleId, appAppleId: 1_234,
            environment: environment == .production ? .production : .sandbox,
            acceptsSandbox: true)
        var configuration = ServerConfiguration(bundleId: PurchaseFlowTests.bundleId)
        configuration.port = 0
        configuration.environment = environment
        configuration.wallet = wallet
        configuration.recoveryInterval = 0
        configuration.reconcileInterval = 0
        let clock = clock
        let server = try buildApplication(
            configuration: configuration,
            dependencies: try ServerDependencies(
                store: serverStore, verifier: verifier, catalog: catalog, now: { clock.now() }))
        try await server.test(.live) { client in
            let port = try #require(client.port)
            let base = try #require(URL(string: "http://127.0.0.1:\(port)"))
            try await self.play(server: ServerClient(baseURL: base), steps: steps)
        }
    }

    func play(server: ServerClient, steps: Int) async throws {
        // Two customers; the first has a second device. In the server wallet it shares the customer's identity
        // (one balance on the server); in the device wallet its install is a user of its own.
        devices = [
            Device(
                name: "alice-phone", account: "alice", folder: folder.appendingPathComponent("alice-phone"),
                credentials: folder.appendingPathComponent("alice.json"), apple: apple),
            Device(
                name: "bob-phone", account: "bob", folder: folder.appendingPathComponent("bob-phone"),
                credentials: folder.appendingPathComponent("bob.json"), apple: apple),
        ]
        devices.append(
            Device(
                name: "alice-pad", account: "alice", folder: folder.appendingPathComponent("alice-pad"),
                credentials: folder.appendingPathComponent("alice-pad.json"),
                apple: apple))
        for device in devices { try await launch(device, server: server) }
        for step in 1...steps {
            try await act(step: step, server: server)
            try await checkBooks(after: "step \(step)")
        }
        try await settle(server: server)
    }

    /// A launch of the app on a device: a new SDK over its files, launched.
    func launch(_ device: Device, server: ServerClient) async throws {
        let dying = device.dying
        device.dying = nil
        let fired = Mutex(false)
        let app = try CofferSDK(
            configuration: SDKConfiguration(
                wallet: wallet, environment: environment, catalog: catalog, deviceName: device.name,
                identity: identity(of: device), backupDelay: nil, launchDeadline: nil),
            storeKit: device.storeKit, server: server, folder: device.folder,
            credentials: FileCredentialStore(path: device.credentials.path), now: { [clock] in clock.now() },
            crashAfter: { step in
                if step == dying,
                    fired.withLock({ done in
                        defer { done = true }
                        return !done
                    })
                {
                    throw PurchaseFlowTests.ProcessDied(step: step)
                }
            })
        device.app = app
        try await run(device) { _ = try await $0.launch() }
    }

    /// Runs an action in the app; if the app dies, the device is relaunched next time it is used.
    func run(_ device: Device, _ action: (CofferSDK) async throws -> Void) async throws {
        guard let app = device.app else { return }
        do {
            try await action(app)
        } catch let died as PurchaseFlowTests.ProcessDied {
            note("  \(device.name): the app died after \(died.step.rawValue)")
            device.app = nil
        }
    }

    func app(_ device: Device, server: ServerClient) async throws -> CofferSDK? {
        if device.app == nil { try await launch(device, server: server) }
        return device.app
    }

    func act(step: Int, server: ServerClient) async throws {
        guard let device = pick(devices) else { return }
        // Sometimes the app is set to die after a step of whatever it does next.
        if chance(15), device.app != nil {
            device.dying = pick(SDKStep.allCases)
            if let dying = device.dying {
                note("step \(step): \(device.name) relaunched, set to die after \(dying.rawValue)")
                try await launch(device, server: server)
            }
        }
        switch Int.random(in: 0..<100, using: &random) {
        case 0..<4:
            // Bought outside the app (an offer code, a promoted purchase): no account token; whichever install
            // presents it first owns it.
            let quantity = Int.random(in: 1...10, using: &random)
            note("step \(step): \(device.account) buys \(Self.credits) ×\(quantity) outside the app")
            _ = try? await apple.purchase(account: device.account, productId: Self.credits, quantity: quantity)
        case 4..<28:
            let productId =
                pick([Self.credits, Self.credits, Self.credits, Self.noAds, Self.pro]) ?? Self.credits
            let quantity = productId == Self.credits ? Int.random(in: 1...10, using: &random) : 1
            let outcome = pick([PurchaseOutcome.success, .success, .success, .success, .userCancelled, .askToBuy])
            note("step \(step): \(device.name) buys \(productId) ×\(quantity) (\(outcome?.rawValue ?? ""))")
            guard try await app(device, server: server) != nil else { return }
            device.storeKit.nextOutcome = outcome ?? .success
            do {
                try await run(device) { _ = try await $0.purchase(productId: productId, quantity: quantity) }
            } catch let refusal as SimulatorError {
                note("  Apple refused: \(refusal)")  // already owned, already subscribed
            }
        case 28..<36:
            note("step \(step): \(device.name) relaunches")
            device.app = nil
            try await launch(device, server: server)
        case 36..<50:
            await deliverNotifications(step: step)
            try await postDelivered(server: server)
        case 50..<57:
            let paid = await apple.accountTransactions(account: device.account).filter {
                $0.revocationDate == nil && !$0.isFamilyShared && !refundedOnce.contains($0.id)
            }
            if let transaction = pick(paid) {
                refundedOnce.insert(transaction.id)
                note("step \(step): Apple refunds \(transaction.id) (\(transaction.productId))")
                _ = try? await apple.refund(transactionId: transaction.id)
            }
        case 57..<61:
            let refunded = await apple.accountTransactions(account: device.account).filter {
                $0.revocationDate != nil && !$0.isFamilyShared
            }
            if let transaction = pick(refunded) {
                note("step \(step): Apple reverses the refund of \(transaction.id)")
                _ = try? await apple.reverseRefund(transactionId: transaction.id)
            }
        case 61..<67:
            let days = Double(Int.random(in: 1...40, using: &random))
            note("step \(step): the clock moves \(Int(days)) days")
            _ = try await apple.advanceClock(by: days * 86_400)
        case 67..<73:
            guard let user = try await user(of: device) else { return }
            let credits = Int64(Int.random(in: 1...500, using: &random))
            note("step \(step): support grants \(credits) to \(device.account)")
            _ = try await support().createGrant(
                environment: environment, supportId: user.supportId.rawValue, credits: credits, reason: "simulation",
                actor: "support")
        case 73..<76:
            guard let user = try await user(of: device) else { return }
            let balance = Int64(Int.random(in: 0...2_000, using: &random))
            note("step \(step): support sets \(device.account)'s balance to \(balance)")
            do {
                _ = try await support().setBalance(
                    environment: environment, supportId: user.supportId.rawValue, balance: balance,
                    reason: "simulation", actor: "support")
            } catch AdminError.invalid(let why) where wallet == .device {
                note("  refused: \(why)")  // before the app's first backup, with two currencies
            }
        case 76..<86:
            guard let app = try await app(device, server: server) else { return }
            // The default currency, or one time in three the gems.
            let currency = chance(33) ? Self.gems.rawValue : Currency.credits.rawValue
            let balance = (try? await app.balances())?[currency] ?? 0
            guard balance > 0 else { return }
            let amount = Int64.random(in: 1...balance, using: &random)
            note("step \(step): \(device.name) spends \(amount) of \(balance) \(currency)")
            try await run(device) { _ = try await $0.spend(amount, of: currency) }
        case 86..<92:
            note("step \(step): \(device.name) comes to the foreground")
            guard try await app(device, server: server) != nil else { return }
            try await run(device) { _ = try await $0.enteredForeground() }
        case 92..<96:
            // A duplicate post: a signed transaction the server already has from this user, sent again.
            guard let app = try await app(device, server: server), let token = await app.credentials?.token,
                let user = try await user(of: device),
                let id = pick(try await serverStore.receipts(owner: user.id, environment: environment))?.transaction
                    .transactionId
            else { return }
            note("step \(step): \(device.name)'s transaction \(id) is posted again")
            let signed = try await apple.signedTransaction(id: id)
            _ = try? await server.post(signedTransaction: signed, token: token)
        default:
            guard wallet == .device else {
                // A new phone, or a reinstall that lost the Keychain item: the app registers again with the
                // Apple account and must find the same customer.
                let before = await device.app?.credentials?.supportId
                note("step \(step): \(device.name) is replaced by a new phone (nothing kept on it)")
                device.app = nil
                device.installAnew()
                try? FileManager.default.removeItem(at: device.folder)
                try? FileManager.default.removeItem(at: device.credentials)
                try await launch(device, server: server)
                let after = await device.app?.credentials?.supportId
                if let before, let after, before != after {
                    throw Broken(description: "\(device.name): the new phone is \(after), the account was \(before)")
                }
                return
            }
            // With the Apple account as its identity, half the time the Keychain item goes too (a new phone).
            let newPhone = identity(of: device) == .appleAccount && chance(50)
            let before = await device.app?.credentials?.supportId
            note("step \(step): \(device.name) " + (newPhone ? "is replaced by a new phone" : "reinstalls the app"))
            device.app = nil
            device.installAnew()
            try? FileManager.default.removeItem(at: device.folder)
            if newPhone { try? FileManager.default.removeItem(at: device.credentials) }
            device.beforeReinstall = Set(await apple.accountTransactions(account: device.account).map(\.id))
            try await launch(device, server: server)
            let after = await device.app?.credentials?.supportId
            if let before, let after, before != after {
                throw Broken(description: "\(device.name): the reinstalled app is \(after), the account was \(before)")
            }
        }
    }

    /// Moves Apple's new notifications in flight, then posts some: one at a time, out of order, twice, or
    /// failing the first time (Apple retries it later).
    func deliverNotifications(step: Int) async {
        await takeSent()
        note("step \(step): \(inFlight.count) notifications in flight")
    }

    /// Apple's notifications sent since the last look, now in flight.
    func takeSent() async {
        let sent = await apple.sentNotifications()
        inFlight += sent.dropFirst(sentCount)
        sentCount = sent.count
    }

    func postDelivered(server: ServerClient) async throws {
        var remaining: [OutgoingNotification] = []
        for notification in inFlight.shuffled(using: &random) {
            if chance(30) {
                remaining.append(notification)  // delayed, or the post failed: Apple retries it
                continue
            }
            try await post(notification, to: server)
            if chance(15) { try await post(notification, to: server) }  // Apple sends it twice
        }
        inFlight = remaining
    }

    func post(_ notification: OutgoingNotification, to server: ServerClient) async throws {
        let status = try await SupportFlowTests.post(notification, to: server)
        guard status == 200 else { throw Broken(description: "a notification was answered \(status)") }
    }

    func support() -> AdminService {
        let clock = clock
        return AdminService(store: serverStore, catalog: catalog, walletMode: wallet, now: { clock.now() })
    }

    /// The server's user of a device, once its app has made one.
    func user(of device: Device) async throws -> User? {
        guard let data = try? Data(contentsOf: device.credentials),
            let identity = try? JSONDecoder().decode(DeviceIdentity.self, from: data),
            let supportId = SupportID(identity.credentials.supportId)
        else { return nil }
        return try await serverStore.user(supportId: supportId, environment: environment)
    }
}
