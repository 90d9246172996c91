import CofferAppStore
import CofferClient
import CofferCore
import CofferServer
import CofferService
import CofferSimulator
import CofferStore
import CofferStoreKit
import Crypto
import Foundation
import Hummingbird
import HummingbirdTesting
import Synchronization
import Testing

/// The SDK's purchase flow against the simulator (as StoreKit and Apple) and a real Coffer server over
/// loopback, with the app's process dying after every step and launched again.
@Suite("SDK purchase flow", .timeLimit(.minutes(3)))
struct PurchaseFlowTests {
    static let start = Date(timeIntervalSince1970: 1_767_225_600)  // 2026-01-01
    static let bundleId = "com.example.coffer"
    static let product = "com.example.credits"
    static let noAds = "com.example.noads"

    /// Apple (the simulator), a Coffer server on a loopback port, and one customer's devices.
    struct World: Sendable {
        let apple: SimulatedAppStore
        let serverStore: any CofferStore
        let catalog: Catalog
        let wallet: WalletMode
        let server: ServerClient
        let folder: URL
        let clock: SimulatorClock
        /// CloudKit, when the server asks it for the claims' proof (`web-auth-token`): the app's web auth tokens
        /// come from it, as `CKFetchWebAuthTokenOperation` gives them on the user's phone.
        var cloudKit: SimulatedCloudKit?

        /// A fresh launch of the app: new objects over the same files, as after the process died.
        ///
        /// - Parameters:
        ///   - install: Another name is another install of the app on another of the customer's devices (the same
        ///     Apple account), with files and a Keychain of its own: another user with ``SDKIdentity/install``,
        ///     the same customer with ``SDKIdentity/appleAccount``.
        ///   - identity: How the SDK finds its customer.
        ///   - device: The device's StoreKit (a new one of Alice's devices unless given).
        ///   - offline: The server is out of reach.
        ///   - startingBalance: What a new player starts with (device wallet).
        ///   - cloudKitUserRecordName: The CloudKit user record name the device reads (moving in from CloudKit);
        ///     `unavailable` stands for CloudKit not answering.
        ///   - bundled: The catalog the app bundles, when not the server's.
        ///   - configuredWallet: The wallet the app is configured for, when not the server's.
        ///   - log: The SDK's log (none on the platform's logger, to keep the test output short).
        func app(
            crashAfter step: SDKStep? = nil, install: String = "app", identity: SDKIdentity = .install,
            device: (any StoreKitProvider)? = nil, offline: Bool = false, startingBalance: Int64 = 0,
            backupDelay: TimeInterval? = 0.05, cloudKitUserRecordName: String? = nil, bundled: Catalog? = nil,
            configuredWallet: WalletMode? = nil, launchDeadline: TimeInterval? = nil,
            log: SDKLog = SDKLog(toPlatform: false), timerClock: (any TimerClock)? = nil
        ) throws -> CofferSDK {
            let fired = Mutex(false)
            var configuration = SDKConfiguration(
                wallet: configuredWallet ?? wallet, environment: .sandbox, catalog: bundled ?? catalog,
                deviceName: install, identity: identity)
            configuration.startingBalance = startingBalance
            configuration.log = log
            configuration.backupDelay = backupDelay
            configuration.launchDeadline = launchDeadline
            if let timerClock { configuration.timerClock = timerClock }
            if let cloudKitUserRecordName {
                configuration.cloudKitUserRecordName = {
                    guard cloudKitUserRecordName != "unavailable" else { throw URLError(.notConnectedToInternet) }
                    return cloudKitUserRecordName
                }
                if let cloudKit {
                    configuration.cloudKitWebAuthToken = {
                        await cloudKit.webAuthToken(userRecordName: cloudKitUserRecordName)
                    }
                }
            }
            return try CofferSDK(
                configuration: configuration,
                storeKit: device ?? apple.device(account: "alice"),
                server: offline ? ServerClient(baseURL: URL(string: "http://127.0.0.1:1")!) : server,
                folder: folder.appendingPathComponent(install),
                credentials: FileCredentialStore(
                    path: folder.appendingPathComponent(install == "app" ? "credentials.json" : "\(install).json").path),
                now: { [clock] in clock.now() },
                crashAfter: { current in
                    if current == step,
                        fired.withLock({ done in
                            defer { done = true }
                            return !done
                        })
                    {
                        throw ProcessDied(step: current)
                    }
                })
        }

        /// The customer's receipts and ledger entries on the server.
        func serverRecords(_ sdk: CofferSDK) async throws -> (receipts: [Receipt], entries: [LedgerEntry]) {
            let supportId = try #require(await sdk.credentials.flatMap { SupportID($0.supportId) })
            let user = try #require(try await serverStore.user(supportId: supportId, environment: .sandbox))
            return (
                try await serverStore.receipts(owner: user.id, environment: .sandbox),
                try await serverStore.entries(owner: user.id, environment: .sandbox)
            )
        }
    }

    struct ProcessDied: Error, Equatable {
        let step: SDKStep
    }

    /// - Parameter serverOnSimulatedTime: The server reads the simulator's clock (signed data as young as the
    ///   simulator made it) instead of the machine's (admin requests signed now).
    /// - Parameter products: More products for the catalog beside the credits and no-ads.
    /// - Parameter simulator: Changes to the simulator's settings (names, prices, offers, offer codes).
    /// - Parameter appStoreOnly: Products the App Store sells that the server's catalog lacks.
    /// - Parameter offerKey: The app's In-App Purchase key: the server signs offers with it (an App Store Server API
    ///   client whose host is never called) and the simulator checks them with its public half.
    static func withWorld(
        wallet: WalletMode, serverOnSimulatedTime: Bool = false, products: [CatalogProduct] = [],
        loyalty: [LoyaltyRule] = [], simulator: (inout SimulatorConfiguration) -> Void = { _ in },
        push: (any PushSender)? = nil, cloudKitProof: Bool = false, appStoreOnly: [CatalogProduct] = [],
        offerKey: P256.Signing.PrivateKey? = nil, currencies: [CurrencyDefinition] = [],
        _ body: @Sendable (World) async throws -> Void
    ) async throws {
        var simulatorConfiguration = SimulatorConfiguration(bundleId: bundleId, appAppleId: 1_234)
        simulator(&simulatorConfiguration)
        var appStoreAPI: AppStoreServerAPIClient?
        if let offerKey {
            let (keyId, issuerId) = ("OFFERKEY01", "57246542-96fe-1a63-e053-0824d011072a")
            simulatorConfiguration.offerKeys = APITokenVerifier(
                keys: [keyId: offerKey.publicKey], issuerId: issuerId, bundleId: bundleId)
            appStoreAPI = AppStoreServerAPIClient(
                httpClient: .shared,
                credentials: .init(keyId: keyId, issuerId: issuerId, bundleId: bundleId, privateKey: offerKey),
                environment: .sandbox, baseURL: "http://127.0.0.1:9")
        }
        let (configured, signing) = (simulatorConfiguration, appStoreAPI)
        guard cloudKitProof else {
            return try await withWorld(
                wallet: wallet, serverOnSimulatedTime: serverOnSimulatedTime, products: products, loyalty: loyalty,
                simulator: configured, push: push, cloudKit: nil, appStoreOnly: appStoreOnly, appStoreAPI: signing,
                currencies: currencies, body)
        }
        // CloudKit Web Services, for a server that wants a web auth token with each claim.
        let cloudKit = SimulatedCloudKit(container: "iCloud.\(bundleId)", keys: [:], apiTokens: ["console-api-token"])
        let router = Router()
        cloudKit.addRoutes(to: router)
        try await Application(router: router).test(.live) { cloudKitClient in
            let cloudKitURL = "http://127.0.0.1:\(try #require(cloudKitClient.port))"
            try await withWorld(
                wallet: wallet, serverOnSimulatedTime: serverOnSimulatedTime, products: products, loyalty: loyalty,
                simulator: configured, push: push, cloudKit: (cloudKit, cloudKitURL), appStoreOnly: appStoreOnly,
                appStoreAPI: signing, currencies: currencies, body)
        }
    }

    private static func withWorld(
        wallet: WalletMode, serverOnSimulatedTime: Bool, products: [CatalogProduct], loyalty: [LoyaltyRule],
        simulator simulatorConfiguration: SimulatorConfiguration, push: (any PushSender)?,
        cloudKit: (SimulatedCloudKit, url: String)?, appStoreOnly: [CatalogProduct],
        appStoreAPI: AppStoreServerAPIClient?, currencies: [CurrencyDefinition],
        _ body: @Sendable (World) async throws -> Void
    ) async throws {
        let pki = try SimulatorPKI(
            validFrom: start.addingTimeInterval(-86_400), leafValidUntil: start.addingTimeInterval(400 * 86_400))
        let catalog = try Catalog(
            products: [
                CatalogProduct(id: product, kind: .consumable, credits: 100),
                CatalogProduct(id: noAds, kind: .nonConsumable, entitlements: ["adFree"]),
            ] + products, loyalty: loyalty, currencies: currencies)
        let clock = SimulatorClock(start: start)
        let apple = SimulatedAppStore(
            catalog: try Catalog(products: catalog.products + appStoreOnly, loyalty: loyalty, currencies: currencies),
            configuration: simulatorConfiguration, signer: try pki.signer(), clock: clock)
        let verifier = try SignedDataVerifier(
            rootCertificates: [pki.rootDER()], bundleId: bundleId, appAppleId: nil, environment: .sandbox)
        let serverStore = InMemoryStore()
        var configuration = ServerConfiguration(bundleId: bundleId)
        configuration.port = 0
        configuration.wallet = wallet
        configuration.recoveryInterval = 0
        configuration.reconcileInterval = 0
        var identity: CloudKitUserIdentity?
        if let cloudKit {
            configuration.cloudKitClaimProof = .webAuthToken
            identity = try CloudKitUserIdentity(
                httpClient: .shared, container: "iCloud.\(bundleId)", environment: "production",
                apiToken: "console-api-token", baseURL: cloudKit.url)
        }
        let app = try buildApplication(
            configuration: configuration,
            dependencies: try ServerDependencies(
                store: serverStore, verifier: verifier, catalog: catalog, appStoreAPI: appStoreAPI,
                now: { serverOnSimulatedTime ? clock.now() : Date() }, push: push, cloudKitIdentity: identity))
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("coffer-sdk-\(UUID().uuidString)")
        try await app.test(.live) { client in
            let port = try #require(client.port)
            let base = try #require(URL(string: "http://127.0.0.1:\(port)"))
            try await body(
                World(
                    apple: apple, serverStore: serverStore, catalog: catalog, wallet: wallet,
                    server: ServerClient(baseURL: base), folder: folder, clock: clock, cloudKit: cloudKit?.0))
        }
        try? FileManager.default.removeItem(at: folder)
    }

    @Test(
        "the app dies after each step of a purchase; the next launch leaves exactly what was paid for, once",
        arguments: WalletMode.allCases, SDKStep.purchase)
    func deathAfterEachStep(wallet: WalletMode, step: SDKStep) async throws {
        try await Self.withWorld(wallet: wallet) { world in
            let first = try world.app(crashAfter: step)
            try await first.launch()
            await #expect(throws: ProcessDied(step: step)) {
                try await first.purchase(productId: Self.product, quantity: 3)
            }
            // The process is gone; the next launch recovers from what is on disk and with Apple.
            let second = try world.app()
            let report = try await second.launch()
            let bought = step != .intentSaved
            #expect(report.interrupted == 1)
            #expect(await world.apple.unfinishedTransactions(account: "alice").isEmpty)
            #expect(try await second.pendingPosts().isEmpty)
            #expect(try await second.balance() == (bought ? 300 : 0))
            let records = try await world.serverRecords(second)
            #expect(records.receipts.count == (bought ? 1 : 0))
            #expect(records.entries.count == (bought ? 1 : 0))

            // Launching again changes nothing; the next purchase is delivered once too.
            let third = try world.app()
            try await third.launch()
            #expect(try await third.balance() == (bought ? 300 : 0))
            let next = try await third.purchase(productId: Self.product)
            guard case .delivered(_, let credits) = next else {
                Issue.record("the next purchase was not delivered: \(next)")
                return
            }
            #expect(credits == 100)
            #expect(try await third.balance() == (bought ? 400 : 100))
            #expect(try await world.serverRecords(third).entries.count == (bought ? 2 : 1))
        }
    }

    @Test("server wallet: with the server out of reach a purchase stays unfinished and is delivered later")
    func serverOutOfReach() async throws {
        try await Self.withWorld(wallet: .server) { world in
            let nowhere = ServerClient(baseURL: URL(string: "http://127.0.0.1:9")!, timeout: 2)
            let online = try world.app()
            try await online.launch()
            let offline = try CofferSDK(
                configuration: SDKConfiguration(
                    wallet: .server, environment: .sandbox, catalog: world.catalog, deviceName: "iPhone"),
                storeKit: world.apple.device(account: "alice"), server: nowhere,
                folder: world.folder.appendingPathComponent("app"),
                credentials: FileCredentialStore(path: world.folder.appendingPathComponent("credentials.json").path))
            let result = try await offline.purchase(productId: Self.product, quantity: 2)
            guard case .deferred(let id) = result else {
                Issue.record("expected deferred, got \(result)")
                return
            }
            #expect(await world.apple.unfinishedTransactions(account: "alice").map(\.id) == [id])
            #expect(try await offline.pendingPosts() == [id])
            let back = try world.app()
            let report = try await back.launch()
            #expect(report.recovered == [id])
            #expect(try await back.balance() == 200)
            #expect(await world.apple.unfinishedTransactions(account: "alice").isEmpty)
        }
    }

    @Test("device wallet: a refund from the updates stream takes the credits back once")
    func refundFromUpdates() async throws {
        try await Self.withWorld(wallet: .device) { world in
            let app = try world.app()
            try await app.launch()
            let bought = try await app.purchase(productId: Self.product, quantity: 5)
            guard case .delivered(let id, 500) = bought else {
                Issue.record("not delivered: \(bought)")
                return
            }
            // Apple refunds the purchase; the device hears it (twice, as a stream may repeat itself).
            try await world.apple.refund(transactionId: id)
            let refunded = try #require(
                await world.apple.deviceTransactions(account: "alice").first { $0.id == id && $0.revocationDate != nil }
            )
            for _ in 0..<2 { try await app.handle(refunded) }
            let wallet = try await app.localWallet()
            #expect(wallet.balance == 0 && wallet.deficit == 0)
            #expect(try await world.serverRecords(app).receipts.first?.revokedAt != nil)
        }
    }

    @Test(
        "another install on the customer's Apple account leaves a purchase the first install has not finished to it",
        arguments: WalletMode.allCases)
    func otherInstallLeavesPurchase(wallet: WalletMode) async throws {
        try await Self.withWorld(wallet: wallet) { world in
            let phone = try world.app(crashAfter: .delivered)
            try await phone.launch()
            await #expect(throws: ProcessDied(step: .delivered)) {
                try await phone.purchase(productId: Self.product, quantity: 3)
            }
            let id = try #require(await world.apple.unfinishedTransactions(account: "alice").first?.id)
            // StoreKit shows the account's unfinished purchase on the pad too; its account token names the phone's
            // user, so the pad neither delivers, posts nor finishes it.
            let pad = try world.app(install: "pad")
            let report = try await pad.launch()
            #expect(report.otherUsers == [id])
            #expect(report.recovered.isEmpty)
            #expect(try await pad.balance() == 0)
            #expect(try await pad.pendingPosts().isEmpty)
            #expect(try await world.serverRecords(pad).receipts.isEmpty)
            #expect(await world.apple.unfinishedTransactions(account: "alice").map(\.id) == [id])
            // Its Settings screen says where it went, and "Verify Purchases" leaves it to the phone.
            #expect(try await pad.history().map(\.status) == ["another device"])
            #expect(try await pad.verifyPurchases().isEmpty)
            #expect(await world.apple.unfinishedTransactions(account: "alice").map(\.id) == [id])
            // The phone's next launch delivers it (once) and finishes it.
            let again = try world.app()
            #expect(try await again.launch().recovered == [id])
            #expect(try await again.balance() == 300)
            #expect(try await world.serverRecords(again).receipts.map(\.transaction.transactionId) == [id])
            #expect(await world.apple.unfinishedTransactions(account: "alice").isEmpty)
        }
    }

    @Test(
        "a purchase made outside the app is the first presenter's; another install that delivered it takes it back",
        arguments: WalletMode.allCases)
    func purchaseOutsideTheApp(wallet: WalletMode) async throws {
        try await Self.withWorld(wallet: wallet) { world in
            // An offer code redeemed in the App Store: no account token.
            try await world.apple.purchase(account: "alice", productId: Self.product, quantity: 2)
            let phone = try world.app(crashAfter: .delivered)
            await #expect(throws: ProcessDied(step: .delivered)) { try await phone.launch() }
            let pad = try world.app(install: "pad")
            let report = try await pad.launch()
            let id = try #require(report.recovered.first)
            #expect(await world.apple.unfinishedTransactions(account: "alice").isEmpty)
            let again = try world.app()
            try await again.launch()
            #expect(try await again.pendingPosts().isEmpty)
            #expect(try await pad.pendingPosts().isEmpty)
            switch wallet {
            case .device:
                // The phone delivered it (200 on its ledger) and died before posting; the pad posted first and
                // owns it. The phone takes back what it delivered, so the customer has it once.
                #expect(try await pad.balance() == 200)
                #expect(try await again.localWallet() == Wallet(balance: 0, deficit: 0))
                #expect(try await again.history().map(\.status) == ["another device"])
                #expect(try await pad.history().map(\.status) == ["delivered"])
                #expect(try await world.serverRecords(pad).receipts.map(\.transaction.transactionId) == [id])
                #expect(try await world.serverRecords(again).receipts.isEmpty)
            case .server:
                // The phone's post delivered it on the server before it died; the pad is told it is another
                // user's and finishes it, since the server holds it delivered.
                #expect(try await again.balance() == 200)
                #expect(try await pad.balance() == 0)
                #expect(try await world.serverRecords(again).receipts.map(\.transaction.transactionId) == [id])
                #expect(try await world.serverRecords(pad).receipts.isEmpty)
            }
        }
    }

    @Test("a reinstalled app finds its user again through the credential store")
    func reinstall() async throws {
        try await Self.withWorld(wallet: .device) { world in
            let app = try world.app()
            try await app.launch()
            let supportId = await app.credentials?.supportId
            let file = world.folder.appendingPathComponent("credentials.json").path
            let permissions = try FileManager.default.attributesOfItem(atPath: file)[.posixPermissions] as? Int
            #expect(permissions == 0o600, "only the app's user reads the credentials")
            try FileManager.default.removeItem(at: world.folder.appendingPathComponent("app"))
            let again = try world.app()
            try await again.launch()
            #expect(await again.credentials?.supportId == supportId)
            #expect(try await world.serverStore.userCount(environment: .sandbox) == 1)
        }
    }

    @Test(
        "a product the App Store sells that neither the bundled nor the server's catalog has is reported and does not stop the launch"
    )
    func unknownProduct() async throws {
        // A sticker pack on the App Store that neither the app's bundled catalog nor the server's sells yet.
        let stickers = CatalogProduct(id: "com.example.stickers", kind: .nonConsumable, entitlements: ["stickers"])
        try await Self.withWorld(wallet: .device, appStoreOnly: [stickers]) { world in
            let older = try CofferSDK(
                configuration: SDKConfiguration(
                    wallet: .device, environment: .sandbox,
                    catalog: try Catalog(products: [CatalogProduct(id: Self.product, kind: .consumable, credits: 100)]),
                    deviceName: "iPhone"),
                storeKit: world.apple.device(account: "alice"), server: world.server,
                folder: world.folder.appendingPathComponent("app"),
                credentials: FileCredentialStore(path: world.folder.appendingPathComponent("credentials.json").path))
            try await older.launch()
            let token = try #require(await older.credentials?.appAccountToken)
            _ = try await world.apple.purchase(account: "alice", productId: stickers.id, appAccountToken: token)
            _ = try await world.apple.purchase(account: "alice", productId: Self.noAds, appAccountToken: token)
            _ = try await world.apple.purchase(account: "alice", productId: Self.product, appAccountToken: token)
            let report = try await older.launch()
            // No-ads is in the server's catalog, which the app took at launch: delivered without an app release.
            #expect(report.refused.count == 1 && report.refused.first?.contains(stickers.id) == true)
            #expect(report.recovered.count == 2)
            #expect(try await older.balance() == 100)
            #expect(await world.apple.unfinishedTransactions(account: "alice").map(\.productId) == [stickers.id])
        }
    }
}
