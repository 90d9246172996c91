import ArgumentParser
import CofferAdmin
import CofferClient
import CofferCore
import CofferStoreKit
import Foundation
import Synchronization

/// `coffer simulate`: a guided run of one customer's life against a running server and App Store simulator,
/// through the real SDK, printed as a timeline a newcomer can follow. Every step is checked; a step that does
/// not hold stops the run with exit code 1.
struct SimulateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "simulate",
        abstract: "A guided customer's life through the SDK: buy, crash, recover, refund, reinstall, grant, loyalty.",
        discussion: """
            Needs a running `coffer serve` (--server) trusting a running `coffer appstore-sim serve` (--simulator), \
            the same catalog for both, and the server's wallet. The support grant uses the admin API with --key-id \
            and --key (from `coffer keys create`); without them that step says so and is left out. Each run uses a \
            new App Store account and a new customer, so it can be repeated against the same server.
            """)

    @Option(help: "The Coffer server's URL.")
    var server = "http://127.0.0.1:8080"

    @Option(help: "The App Store simulator's URL (`coffer appstore-sim serve`).")
    var simulator = "http://127.0.0.1:8090"

    @Option(help: "The catalog the server and the simulator use (JSON).")
    var catalog = "catalog.json"

    @Option(help: "Who owns the balance, as the server is configured: device or server.")
    var wallet = "device"

    @Option(help: "Sandbox or Production, as the server.")
    var environment = "Sandbox"

    @Option(name: .customLong("key-id"), help: "An admin key's id, for the support grant (or COFFER_KEY_ID).")
    var keyId: String?

    @Option(name: .customLong("key"), help: "The admin key's private key file, PEM (or COFFER_KEY_FILE).")
    var keyFile: String?

    @Option(help: "Where the simulated app keeps its files (default: a new temporary folder).")
    var folder: String?

    func run() async throws {
        guard let walletMode = WalletMode(rawValue: wallet) else {
            throw ValidationError("wallet must be device or server, not \(wallet)")
        }
        guard let environment = AppStoreEnvironment(rawValue: environment) else {
            throw ValidationError("environment must be Sandbox or Production, not \(self.environment)")
        }
        guard let serverURL = URL(string: server), let simulatorURL = URL(string: simulator) else {
            throw ValidationError("--server and --simulator must be URLs")
        }
        let products: Catalog
        do {
            products = try Catalog(json: Data(contentsOf: URL(fileURLWithPath: catalog)))
        } catch {
            throw CommandFailure("cannot read the catalog \(catalog): \(error)")
        }
        let variables = ProcessInfo.processInfo.environment
        let keyId = keyId ?? variables["COFFER_KEY_ID"].flatMap { $0.isEmpty ? nil : $0 }
        let keyFile = keyFile ?? variables["COFFER_KEY_FILE"].flatMap { $0.isEmpty ? nil : $0 }
        var support: SupportOptions?
        if let keyId, let keyFile {
            support = try SupportOptions.parse([
                "--server", server, "--key-id", keyId, "--key", keyFile, "--environment", environment.rawValue,
            ])
        }
        let home =
            folder.map { URL(fileURLWithPath: $0) }
            ?? FileManager.default.temporaryDirectory.appendingPathComponent("coffer-simulate-\(UUID().uuidString)")
        let run = try await SimulatedCustomer(
            catalog: products, wallet: walletMode, environment: environment, server: ServerClient(baseURL: serverURL),
            simulator: simulatorURL, home: home, support: support)
        try await run.play()
    }
}

/// The app's clock in a simulated run: the simulator's time, which moves only when told to.
final class SimulatedClock: Sendable {
    /// The simulator's time minus this machine's.
    private let offset = Mutex<TimeInterval>(0)

    /// The simulated time now.
    func now() -> Date { Date().addingTimeInterval(offset.withLock { $0 }) }

    /// Takes the simulator's reading.
    func set(_ simulated: Date) { offset.withLock { $0 = simulated.timeIntervalSinceNow } }
}

/// One customer's life, step by step, printed as it happens.
final class SimulatedCustomer {
    let catalog: Catalog
    let wallet: WalletMode
    let environment: AppStoreEnvironment
    let server: ServerClient
    let storeKit: SimulatorStoreKit
    let home: URL
    let support: SupportOptions?
    /// The app's clock: the simulator's.
    let clock = SimulatedClock()
    private var step = 0

    init(
        catalog: Catalog, wallet: WalletMode, environment: AppStoreEnvironment, server: ServerClient, simulator: URL,
        home: URL, support: SupportOptions?
    ) async throws {
        self.catalog = catalog
        self.wallet = wallet
        self.environment = environment
        self.server = server
        let account = "simulate-" + String(UUID().uuidString.lowercased().prefix(8))
        storeKit = SimulatorStoreKit(baseURL: simulator, account: account)
        self.home = home
        self.support = support
        try await syncClock()
    }

    /// Reads the simulator's clock (it moves only when told to).
    func syncClock() async throws {
        let simulated: Date
        do {
            simulated = try await storeKit.clock()
        } catch {
            throw CommandFailure("the App Store simulator is out of reach: \(error)")
        }
        clock.set(simulated)
    }

    /// A launch of the app over its files; `dying` makes the process die after that step.
    func app(dyingAfter dying: SDKStep? = nil) throws -> CofferSDK {
        let clock = clock
        return try CofferSDK(
            configuration: SDKConfiguration(
                wallet: wallet, environment: environment, catalog: catalog, deviceName: "simulated iPhone",
                launchDeadline: nil),
            storeKit: storeKit, server: server, folder: home.appendingPathComponent("app"),
            credentials: FileCredentialStore(path: home.appendingPathComponent("keychain.json").path),
            now: { clock.now() },
            crashAfter: { step in if step == dying { throw AppDied(step: step) } })
    }

    struct AppDied: Error {
        let step: SDKStep
    }

    func title(_ text: String) {
        step += 1
        print("\n\(String(step).leftPadded(to: 2)). \(text)")
    }

    func say(_ text: String) { print("    " + text) }

    /// A check: printed with a tick, or the run stops.
    func check(_ holds: Bool, _ text: String) throws {
        guard holds else { throw CommandFailure("step \(step) does not hold: \(text)") }
        say("✓ " + text)
    }

    func play() async throws {
        guard let credits = catalog.products.first(where: { $0.kind == .consumable }) else {
            throw CommandFailure("the catalog sells no consumable; simulate buys credits")
        }
        let unit = credits.credits
        print(
            """
            Coffer simulate: one customer through the SDK, \(wallet.rawValue) wallet, \(environment.rawValue)
              server     \(server.baseURL.absoluteString)
              simulator  \(storeKit.baseURL.absoluteString) (App Store account \(storeKit.account))
              app files  \(home.path)
            """)

        title("First launch")
        let first = try app()
        try await launch(first)
        let supportId = await first.credentials?.supportId ?? "?"
        say("the app asked the server for a user: Support ID \(supportId) (kept in the keychain)")
        try check(try await first.balance() == 0, "balance 0")

        title("Buy \(credits.id)")
        let bought = try await first.purchase(productId: credits.id)
        guard case .delivered(let firstId, let delivered) = bought else {
            throw CommandFailure("the purchase was not delivered: \(bought)")
        }
        say("StoreKit: transaction \(firstId), verified and signed")
        say(
            wallet == .device
                ? "the app put \(delivered) credits in its ledger, finished the transaction, told the server"
                : "the server verified it and delivered \(delivered) credits; then the app finished it")
        try check(try await first.balance() == unit, "balance \(unit)")

        title("Buy again; the app dies after delivering, before finishing the transaction")
        let dying = try app(dyingAfter: .delivered)
        do {
            _ = try await dying.purchase(productId: credits.id)
            throw CommandFailure("the app was meant to die after delivering")
        } catch is AppDied {
            say("the app's process died after \"delivered\"")
        }
        let unfinished = await storeKit.unfinished()
        try check(
            unfinished.count == 1,
            "StoreKit still holds 1 unfinished transaction: \(unfinished.map(\.id).joined(separator: ", "))")

        title("Relaunch")
        let second = try app()
        let report = try await launch(second)
        say("recovered \(report.recovered.joined(separator: ", ")): finished now, the ledger knew it was delivered")
        try check(await storeKit.unfinished().isEmpty, "nothing unfinished")
        try check(try await second.balance() == 2 * unit, "balance \(2 * unit): the second purchase once")

        title("Apple refunds the first purchase")
        for line in try await storeKit.refund(transactionId: firstId) { say("simulator: " + line) }
        let caughtUp = try await second.enteredForeground()
        say(
            wallet == .device
                ? "the app took back \(unit) credits (\(caughtUp.adjusted) from the server's mailbox, "
                    + "\(caughtUp.refunded) by its own refund check)"
                : "the server took the refund back (from Apple's notification or the app's refund check)")
        try check(try await second.balance() == unit, "balance \(unit)")

        title("Spend, then reinstall the app")
        let spent = unit / 2
        if spent > 0 { try await second.spend(spent) }
        let kept = unit - spent
        say("the customer spent \(spent) credits; balance \(kept)")
        await second.enteredBackground()
        try FileManager.default.removeItem(at: home.appendingPathComponent("app"))
        say("the app's files are deleted; the keychain keeps the identity")
        let reinstalled = try app()
        try await launch(reinstalled)
        try check(await reinstalled.credentials?.supportId == supportId, "same Support ID \(supportId)")
        try check(
            try await reinstalled.balance() == kept,
            wallet == .device ? "balance \(kept), restored from the backup" : "balance \(kept), kept by the server")

        title("Support grants credits")
        var balance = kept
        if let support {
            let grant = try await withSupport(support) { backend in
                try await backend.grant(
                    supportId: supportId, credits: 250, reason: "coffer simulate: goodwill", currency: nil,
                    expiresInDays: nil)
            }
            say(
                "support: coffer grant --recipient \(supportId) --credits 250 (grant \(grant.id.uuidString.lowercased()))"
            )
            let picked = try await reinstalled.enteredForeground()
            say("the app picked up \(picked.granted) credits and claimed the grant")
            balance += 250
            try check(try await reinstalled.balance() == balance, "balance \(balance)")
        } else {
            say("left out: pass --key-id and --key (coffer keys create) to include support's grant")
        }

        try await loyalty(reinstalled)
        print(
            """

            Everything held: the customer got exactly what they paid for, once.
            Support sees this story with `coffer user \(supportId)` or in the panel at /admin/users/\(supportId).
            """)
    }

    /// Twelve paid months of a subscription with a loyalty rule, then the customer stops paying.
    func loyalty(_ app: CofferSDK) async throws {
        let subscription = catalog.products.first { product in
            product.kind == .autoRenewable && catalog.loyalty.contains { $0.group == product.group }
        }
        title("Loyalty")
        guard let subscription, let rule = catalog.loyalty.first(where: { $0.group == subscription.group }) else {
            say("left out: the catalog has no auto-renewable product with a loyalty rule")
            return
        }
        let bought = try await app.purchase(productId: subscription.id)
        guard case .delivered(let id, _) = bought else {
            throw CommandFailure("the subscription was not delivered: \(bought)")
        }
        let names = try await app.refreshEntitlements().names
        say("subscribed to \(subscription.id) (transaction \(id)): entitlements \(names.joined(separator: ", "))")
        let days = Double(subscription.durationDays ?? 30)
        for month in stride(from: 2, through: rule.periods, by: 1) {
            _ = try await storeKit.advanceClock(by: days * 86_400)
            try await syncClock()
            // The renewal reaches the app through StoreKit's updates, as on a phone.
            for transaction in await storeKit.unfinished() { try await app.handle(transaction) }
            if month == rule.periods || month % 4 == 0 {
                let now = try await app.refreshEntitlements().names
                say("month \(month): renewed; entitlements \(now.joined(separator: ", "))")
            }
        }
        let loyal = try await app.refreshEntitlements().names
        try check(
            Set(rule.entitlements).isSubset(of: loyal),
            "after \(rule.periods) paid periods the loyalty rule gives \(rule.entitlements.joined(separator: ", "))")
        let original = await storeKit.all().first { $0.productId == subscription.id }?.originalId ?? id
        _ = try await storeKit.setAutoRenew(originalTransactionId: original, false)
        _ = try await storeKit.advanceClock(by: 2 * days * 86_400)
        try await syncClock()
        let after = try await app.refreshEntitlements().names
        say("the customer turned auto-renew off; two periods later the subscription has expired")
        try check(
            Set(rule.entitlements).isSubset(of: after),
            "entitlements \(after.joined(separator: ", ")): loyalty is for life")
    }

    @discardableResult
    func launch(_ app: CofferSDK) async throws -> CofferSDK.LaunchReport {
        let report = try await app.launch()
        if report.offline { throw CommandFailure("the server at \(server.baseURL.absoluteString) is out of reach") }
        if !report.refused.isEmpty {
            throw CommandFailure("the ledger refused: \(report.refused.joined(separator: "; "))")
        }
        return report
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        String(repeating: " ", count: max(0, width - count)) + self
    }
}
