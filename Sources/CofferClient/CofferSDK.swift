import CofferAPI
import CofferCore
import CofferStoreKit
import Foundation

/// How the app uses Coffer.
public struct SDKConfiguration: Sendable {
    /// Who owns the running balance; the server must be configured the same way.
    public var wallet: WalletMode
    /// Sandbox or Production, as the server.
    public var environment: AppStoreEnvironment
    /// The app's products as bundled: used until the server's catalog (`GET /v1/catalog`) was first taken, then only
    /// if the kept copy is lost. Bundle the server's `catalog.json`.
    public var catalog: Catalog
    /// A name for this device, kept with its backups.
    public var deviceName: String
    /// Whether credits delivered after a refund settle the deficit first (the server's setting).
    public var deficitPolicy: DeficitPolicy
    /// Who the customer is: the Apple account (the default) or this install.
    public var identity: SDKIdentity
    /// Device wallet, ``SDKIdentity/appleAccount``: how long a purchase another device of the account made is
    /// left for that device to deliver (StoreKit shows it here too until it is finished there) before this
    /// one delivers it, because the other device may be gone. Seconds; default 10 minutes.
    public var otherDeviceGrace: TimeInterval = 600
    /// Device wallet: the balance a new player starts with (a game's first 1,000 chips). A fresh install holds
    /// it until it backs up, and the backup rule counts it as untouched, so a reinstall still restores the
    /// backup. Default 0.
    public var startingBalance: Int64 = 0
    /// The longest ``CofferSDK/launch()`` keeps the app waiting: past it, launch answers with
    /// ``CofferSDK/LaunchReport/pastDeadline`` and goes on in the background, and the app shows the cached state
    /// (seed 003's "Continue anyway"). Default 10 seconds; `nil` waits for every step.
    public var launchDeadline: TimeInterval? = 10
    /// Device wallet: seconds after a balance change (``CofferSDK/earn(_:key:)``, ``CofferSDK/setBalance(_:expected:reason:)``,
    /// ``CofferSDK/spend(_:key:)``) before it is backed up; changes in between share one backup. Default 2;
    /// `nil` leaves backups to launch, foreground, background and ``CofferSDK/runBackups(every:)``.
    public var backupDelay: TimeInterval? = 2
    /// Moving in from CloudKit: reads the customer's CloudKit user record name on the device (on Apple platforms,
    /// `SDKConfiguration.cloudKitUserRecordName(container:)`): `nil` for no iCloud account, an error when CloudKit
    /// cannot tell now (the SDK asks again later). With it, a first launch claims the customer `coffer import
    /// cloudkit` brought in under that name, once (docs/cloudkit.md), before registering as new.
    public var cloudKitUserRecordName: (@Sendable () async throws -> String?)?
    /// Moving in from CloudKit, the proof: fetches a single-use CloudKit web auth token of the device's iCloud user
    /// (on Apple platforms, `SDKConfiguration.cloudKitWebAuthToken(container:apiToken:)`, with the container's API
    /// token from CloudKit Console), sent with each claim. A server with `cloudkit.api.token` set requires it; an
    /// error is tried again later, `nil` claims without one.
    public var cloudKitWebAuthToken: (@Sendable () async throws -> String?)?
    /// Where the SDK writes each step it takes (launch, purchase, recovery, refund, grant, backup, and each server
    /// call with its request id): os.Logger under the subsystem `Coffer` on Apple platforms unless told otherwise.
    public var log = SDKLog()
    /// The clock the SDK's waits are kept on: the launch deadline, the backup delay, ``CofferSDK/runBackups(every:)``
    /// and the event stream's reconnection. The system's; a test gives one it moves by hand.
    public var timerClock: any TimerClock = SystemTimerClock()

    /// Creates a configuration.
    public init(
        wallet: WalletMode, environment: AppStoreEnvironment, catalog: Catalog, deviceName: String,
        deficitPolicy: DeficitPolicy = .collect, identity: SDKIdentity = .appleAccount,
        backupDelay: TimeInterval? = 2, launchDeadline: TimeInterval? = 10
    ) {
        self.launchDeadline = launchDeadline
        self.wallet = wallet
        self.environment = environment
        self.catalog = catalog
        self.deviceName = deviceName
        self.deficitPolicy = deficitPolicy
        self.identity = identity
        self.backupDelay = backupDelay
    }
}

/// How the SDK finds its customer on the server.
public enum SDKIdentity: String, Sendable, CaseIterable {
    /// Registers with StoreKit's signed AppTransaction (`POST /v1/users {signedAppTransaction}`): every device
    /// and reinstall of one Apple account is one customer, with one Support ID, one balance (server wallet) or
    /// one backup (device wallet). The Keychain item only saves asking again. Where the system gives no
    /// AppTransaction with an `appTransactionId`, the install gets a user of its own.
    case appleAccount
    /// One user per install (`POST /v1/users {}`), found again only through the Keychain item.
    case install
}

/// The steps of the SDK's flows, in order within each flow; tests make the process die after any of them.
public enum SDKStep: String, Sendable, CaseIterable {
    /// Purchase: the purchase's context is on disk, before StoreKit is asked.
    case intentSaved
    /// Purchase: StoreKit answered with a verified transaction.
    case purchased
    /// Purchase: the signed transaction is on disk, in the outbox.
    case remembered
    /// Purchase: the credits are in the local ledger (device wallet) or the server answered (server wallet).
    case delivered
    /// Purchase: the server acknowledged the transaction (before it is finished, in both wallets).
    case posted
    /// Purchase: StoreKit's transaction is finished.
    case finished
    /// Grant: the credits are in the local ledger.
    case grantApplied
    /// Grant: its key is kept with the identity.
    case grantRemembered
    /// Grant: the server marked it claimed.
    case grantClaimed
    /// Mailbox: a refund the server learned of is taken back in the local ledger.
    case adjustmentApplied
    /// Mailbox: its key is kept with the identity.
    case adjustmentRemembered
    /// Backup: the local balance took the server's value (a restore or an admin edit).
    case backupTaken
    /// Backup: the server holds the device's balance.
    case backupPushed

    /// The steps of a purchase.
    public static let purchase: [SDKStep] = [.intentSaved, .purchased, .remembered, .delivered, .posted, .finished]
    /// The steps of claiming a grant (device wallet).
    public static let grant: [SDKStep] = [.grantApplied, .grantRemembered, .grantClaimed]
}

/// How a purchase through the SDK ended.
public enum PurchaseResult: Sendable, Equatable {
    /// Delivered (the credits, once) and finished.
    case delivered(transactionId: String, credits: Int64)
    /// Apple refunded it before it could be delivered.
    case revoked(transactionId: String)
    /// The customer cancelled.
    case cancelled
    /// Waiting for Ask to Buy; it arrives through the updates later.
    case pending
    /// Bought, but the server could not be reached to deliver it (server wallet): the transaction stays
    /// unfinished and is delivered on the next launch or retry.
    case deferred(transactionId: String)
}

/// The app side of Coffer: buys through StoreKit, delivers each purchase exactly once, and never finishes
/// a transaction before its delivery is durable. In the device wallet the balance lives in a local ledger
/// (the same ledger rules as the server, on SQLite) and the server is told through a durable outbox; in the
/// server wallet the server delivers and the transaction is finished once it answers.
///
/// Every step is written down before the next one starts, so a process that dies anywhere (``SDKStep``)
/// is recovered by ``launch()``: unfinished transactions are delivered (once; the ledger knows them by
/// transaction id) and finished, and the outbox is posted (the server answers `duplicate` to what it has).
public actor CofferSDK {
    /// The configuration.
    public let configuration: SDKConfiguration
    let storeKit: any StoreKitProvider
    let server: ServerClient
    let credentialStore: any CredentialStore
    let ledger: DeviceLedger
    /// Where the balance lives: every step that differs between the wallets asks it.
    let wallet: any WalletKeeper
    let state: SDKState
    let now: @Sendable () -> Date
    let crashAfter: @Sendable (SDKStep) throws -> Void
    var user: LocalUser?
    var identity: DeviceIdentity?
    /// When a provisional install last tried to register (a first launch offline).
    var registrationTriedAt: Date?
    /// When this install last registered again after the server refused its token (``signedIn(_:)``).
    var registeredAgainAt: Date?
    /// The registration under way after the server refused this install's token, which other flows wait for.
    var registration: Task<Bool, any Error>?

    /// The credentials, once ``launch()`` has run.
    public var credentials: Credentials? { identity?.credentials }

    /// The catalog the SDK works with: the server's (`GET /v1/catalog`, taken at each launch and kept for an
    /// offline one), else the one the app bundles (``SDKConfiguration/catalog``) until the server was first reached.
    /// A new product or a new number of credits then needs no app release.
    public internal(set) var catalog: Catalog
    /// Whether the server said it keeps the wallet this app is configured for (once per process).
    var walletChecked = false
    /// Why the server's catalog was not taken at the last launch, when the server answered but it could not be
    /// (an unreadable catalog, a refusal); the catalog held before stays.
    public internal(set) var lastCatalogFailure: String?
    /// What the app showed when it last ran, read as the SDK starts: a screen's first frame (``CofferModel``) shows
    /// it, so an entitlement gate never flashes and the balance never starts at zero.
    public nonisolated let cachedStart: CachedStart
    /// The wallet last kept in ``cachedStart``'s store, so an unchanged one is not written again.
    var keptWallet: Wallet?

    /// An SDK keeping its files in `folder`.
    ///
    /// - Parameters:
    ///   - configuration: The wallet, the environment, the catalog and the device's settings.
    ///   - storeKit: StoreKit: `AppleStoreKit` on a device, ``SimulatorStoreKit`` against the simulator.
    ///   - server: The Coffer server.
    ///   - folder: Where the device ledger and the SDK's state live (Application Support on a device).
    ///   - credentials: Where the identity survives reinstalling the app (``KeychainCredentialStore``).
    ///   - now: The clock.
    ///   - crashAfter: Called after each step; a test throws from it to stand for the process dying there.
    public init(
        configuration: SDKConfiguration, storeKit: any StoreKitProvider, server: ServerClient, folder: URL,
        credentials: any CredentialStore, now: @escaping @Sendable () -> Date = Date.init,
        crashAfter: @escaping @Sendable (SDKStep) throws -> Void = { _ in }
    ) throws {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        self.configuration = configuration
        self.storeKit = storeKit
        self.server = server.logging(to: configuration.log)
        self.credentialStore = credentials
        ledger = try DeviceLedger(path: folder.appendingPathComponent("ledger.sqlite").path)
        wallet = configuration.wallet == .device ? DeviceWallet() : ServerWallet()
        state = try SDKState(path: folder.appendingPathComponent("sdk.sqlite").path)
        catalog = Self.keptCatalog(state) ?? configuration.catalog
        cachedStart = Self.cachedStart(state)
        // The install's first start: what StoreKit holds from before it was bought before Coffer.
        if (try? state.value(Self.firstStartKey)) == nil {
            try state.set(Self.firstStartKey, String(now().timeIntervalSince1970))
        }
        self.now = now
        self.crashAfter = crashAfter
    }

    /// Whether ``processUpdates()`` is subscribed to StoreKit's updates.
    public internal(set) var isListening = false

    /// Why the last update could not be handled, if one could not.
    public internal(set) var lastUpdateFailure: String?

    var watchers: [UUID: AsyncStream<[String]>.Continuation] = [:]

    var changeWatchers: [UUID: AsyncStream<CofferChange>.Continuation] = [:]

    var lastPublished: [String]?

    /// Whether ``listenForServerEvents(retry:)`` has the stream open.
    public internal(set) var isConnectedToEvents = false

    /// Why the last event could not be acted on, or why the stream last dropped.
    public internal(set) var lastEventFailure: String?

    /// Why the last backup did not happen, if it did not (cleared by the next one that does).
    public internal(set) var lastBackupFailure: String?

    var backupInFlight: Task<BackupDecision, any Error>?
    /// The launch whose steps run now (``launch()``): another launch meanwhile waits for it.
    var launchInFlight: Task<LaunchReport, any Error>?
    /// The launch ``launchInFlight`` is.
    var launchId: UUID?
    /// The latest debounced backup after a balance change.
    var scheduledBackup: Task<Void, Never>?
    /// Whether that backup is still waiting (it will take any change made meanwhile).
    var backupWaiting = false
    /// Tests: called after each backup read, before the write (another device writing there makes a 412).
    var beforeBackupWrite: (@Sendable () async -> Void)?

    func setBeforeBackupWrite(_ hook: (@Sendable () async -> Void)?) { beforeBackupWrite = hook }

    // MARK: Reading

    /// The balance: the local ledger's in the device wallet, the server's in the server wallet.
    public func balance() async throws -> Int64 {
        let balance = try await wallet.balance(self)
        if configuration.wallet == .server { keepWallet(Wallet(balance: balance, deficit: 0)) }
        return balance
    }

    /// This install's receipt of a transaction in the local ledger.
    func localReceipt(_ transactionId: String) async throws -> Receipt? {
        try await ledger.receipt(transactionId: transactionId, environment: configuration.environment)
    }

    /// Applies an event to the local ledger for this install's user, with the app's deficit policy, in `currency`
    /// (`nil`: the default's; an event about a transaction then reaches every currency it gives or gave,
    /// ``applyInEveryCurrency(_:)``). A change made in play (``earn(_:key:)``, ``spend(_:key:)``,
    /// ``setBalance(_:expected:reason:)``) to the default currency is announced with the wallet it left
    /// (``CofferChange/balance(_:)``), so a screen updates without asking the server; with `expectedBalance` it
    /// applies only while that currency's balance is that.
    ///
    /// - Returns: The result in `currency`.
    @discardableResult
    func applyLocally(
        _ event: LedgerEvent, currency: Currency? = nil, inPlay: Bool = false, expectedBalance: Int64? = nil
    ) async throws -> LedgerResult {
        var request = LedgerRequest(
            owner: try await localUser().id, environment: configuration.environment, event: event,
            policy: configuration.deficitPolicy, at: now())
        request.currency = currency
        let result =
            if let expectedBalance {
                try await ledger.apply(request, ifBalanceIs: expectedBalance)
            } else {
                try await applyInEveryCurrency(request)
            }
        // A hand's change is kept for the next launch's first frame with the coalesced backup, not one write a hand.
        if currency == nil, !inPlay { keepWallet(result.wallet) }
        publish(inPlay && currency == nil ? .balance(result.wallet) : .wallet)
        // Every change to the balance is backed up (debounced): a refund taken back, a grant, a purchase, a
        // spend. Taking the server's backup changes nothing to back up.
        if case .restore = event {} else if result.outcome == .applied { scheduleBackup() }
        return result
    }

    /// Applies a request to the local ledger in one commit, a request about a transaction in every currency its
    /// product gives (``Catalog/inEveryCurrency(_:allowances:)``: the device keeps no allowance) and, for a refund or
    /// a reversal, every currency that delivered it (``Catalog/reaching(_:of:delivered:)``): each currency or none.
    ///
    /// - Returns: The request's result, with the wallet its currency's requests left.
    /// - Throws: ``LedgerError`` when the ledger refuses one (nothing changes then).
    func applyInEveryCurrency(_ request: LedgerRequest) async throws -> LedgerResult {
        var requests = try catalog.inEveryCurrency(request, allowances: false)
        if request.currency == nil, request.event.isWord, let fact = request.event.transaction {
            requests = Catalog.reaching(
                requests, of: request,
                delivered: try await ledger.receiptCurrencies(
                    transactionId: fact.transactionId, environment: request.environment))
        }
        guard requests.count > 1 else { return try await ledger.apply(request) }
        let results = try await ledger.apply(requests)
        var answer = results[0]
        for (each, result) in zip(requests, results) where each.currency == request.currency {
            answer.wallet = result.wallet
        }
        return answer
    }

    /// The local ledger's wallet (balance and deficit) in the device wallet.
    public func localWallet() async throws -> Wallet {
        let user = try await localUser()
        return try await ledger.wallet(owner: user.id, environment: configuration.environment)
    }

    /// The local ledger's wallets of every currency the catalog lists, by id, the default's included (an empty
    /// wallet for one it has not written).
    func localWallets() async throws -> [Currency: Wallet] {
        let user = try await localUser()
        var wallets = try await ledger.currencyWallets(owner: user.id, environment: configuration.environment)
        wallets[catalog.defaultCurrency] = try await ledger.wallet(
            owner: user.id, environment: configuration.environment)
        for currency in catalog.currencies.map(\.id) where wallets[currency] == nil { wallets[currency] = .empty }
        return wallets
    }

    /// Whether the local ledger holds nothing for the user but the starting balance, in any currency (a fresh
    /// install's).
    func holdsOnlyStartingBalance(_ user: LocalUser) async throws -> Bool {
        let environment = configuration.environment
        let entries = try await ledger.entries(owner: user.id, environment: environment)
        guard entries.allSatisfy({ $0.key == Self.startingKey }) else { return false }
        // Another currency's ledger writes its wallet with anything it records.
        return try await ledger.currencyWallets(owner: user.id, environment: environment).isEmpty
    }

    /// Transactions the server has not acknowledged yet.
    public func pendingPosts() throws -> [String] { try state.outbox().map(\.id) }

    /// A StoreKit transaction as the ledger's facts.
    static func fact(_ transaction: StoreTransaction) -> TransactionFact {
        TransactionFact(
            transactionId: transaction.id, originalTransactionId: transaction.originalId,
            productId: transaction.productId, quantity: transaction.quantity, purchaseDate: transaction.purchaseDate,
            expiresDate: transaction.expirationDate, revocationDate: transaction.revocationDate,
            isFamilyShared: transaction.isFamilyShared, isTrial: transaction.isTrial,
            isUpgraded: transaction.isUpgraded,
            revocationPercentage: transaction.revocationPercentage)
    }
}

/// What the SDK refuses.
public enum SDKError: Error, Equatable, Sendable {
    /// The product is not in the catalog.
    case unknownProduct(String)
    /// Stored data cannot be read.
    case corrupt(String)
    /// Another writer kept changing the same record.
    case conflict(String)
    /// The server wallet needs the server, which could not be reached (why); try again when online.
    case serverRequired(String)
    /// The call is the device wallet's (its balance is the app's to change); the server wallet's balance
    /// changes only through the server.
    case deviceWalletOnly(String)
    /// The server keeps the other wallet than ``SDKConfiguration/wallet`` says (its `wallet` setting): set the
    /// configuration to match, or the app would run half of each.
    case walletMismatch(String)
    /// ``CofferSDK/setBalance(_:expected:reason:)`` found the balance moved since the game read it (a grant, a
    /// refund or support's edit came in between): nothing changed; read the balance again.
    case balanceMoved(expected: Int64, actual: Int64)
    /// StoreKit could not verify the purchase on the device, and the server refused its signed form too (why): a
    /// forged or tampered transaction. Nothing was delivered; it is finished, so it is not met again.
    case unverifiedPurchase(transactionId: String, reason: String)
    /// The server would not sign the promotional offer (why: a product that is not a subscription, an offer the
    /// catalog does not list, a customer with nothing to tie it to): nothing was bought.
    case offerRefused(String)
    /// A currency the catalog does not list (why). Nothing changed.
    case currencyNotKept(String)
}
