import CofferAdmin
import CofferAppStore
import CofferCore
import CofferStore
import Foundation
import Logging
import ServiceLifecycle

/// What Coffer's use cases run with: the app and environment served, the wallet, and how the ledger and Apple's
/// notifications are handled. The HTTP edge's own settings (listener, limits, the panel, proxies) are
/// `ServerConfiguration`'s, in `CofferServer`.
public struct ServiceConfiguration: Sendable {
    /// The environment this server serves; data from the other is refused.
    public var environment: CofferCore.AppStoreEnvironment = .sandbox
    /// Whether a Production server also accepts Apple's Sandbox data (App Review and TestFlight buy with sandbox
    /// accounts in the production build): signed data verified as Sandbox against Apple's real roots, and
    /// ProductionSandbox receipts. Default on; off for a separate Sandbox server.
    public var sandboxInProduction = true
    /// The oldest a signed AppTransaction may be (seconds since Apple's `signedDate`) to register a device to
    /// its Apple account (`POST /v1/users`). A copied AppTransaction is a credential for the account: this
    /// bounds how long a copy works. Older ones are answered 422 `stale-app-transaction`, and the SDK asks
    /// StoreKit for a fresh one. Default one day.
    public var appTransactionMaxAge = 86_400
    /// The app's bundle id.
    public var bundleId: String
    /// The app's Apple id (required in Production).
    public var appAppleId: Int64?
    /// Who owns the running balance: the app (`device`, the default) or the server.
    public var wallet: WalletMode = .device
    /// Whether credits delivered after a refund settle the deficit first.
    public var deficitPolicy: DeficitPolicy = .collect
    /// The most ledger requests one group commit takes.
    public var ledgerBatch = 256
    /// How many group commits may be in flight at once: 1 suits SQLite's single writer; PostgreSQL takes
    /// several.
    public var ledgerWriters = 1
    /// How CONSUMPTION_REQUEST notifications are answered.
    public var consumption = ConsumptionConfiguration()
    /// Seconds between notification recovery runs (0 turns recovery off); runs only with an App Store
    /// Server API key.
    public var recoveryInterval = 600
    /// How many days of Notification History the first recovery run reads (Apple keeps 180).
    public var recoveryLookbackDays = 7
    /// Seconds between the scheduled reconciliations of the ledger with Apple's Transaction and Refund History (0
    /// turns them off); they run only with an App Store Server API key. Daily unless set.
    public var reconcileInterval = 86_400
    /// Seconds between the sweeps that end credits whose end has come (``CreditExpiry``; 0 turns them off: the
    /// customer's own reads and spends still end theirs).
    public var expiryInterval = 60
    /// Whether the scheduled reconciliation applies what is missing (Apple's purchases, refunds and reversals) or
    /// only reports it.
    public var reconcileRepair = true
    /// What a CloudKit claim (`POST /v1/users/cloudkit`) must prove: the record name alone, or a CloudKit web auth
    /// token of that iCloud user (with an API token configured, ``ServerDependencies/cloudKitIdentity``).
    public var cloudKitClaimProof = CloudKitClaimProof.recordName
    /// Device tokens one Apple account's customer keeps: registering one more revokes the oldest.
    public var devicesPerAccount = 10
    /// The endpoint the settings name (`webhook.url`, `webhook.secret`), if any; more are added with
    /// `coffer webhooks add` or on the panel.
    public var webhook: WebhookSettings?
    /// `apple.forward.url`: where every notification Apple sent and Coffer verified is posted again, its body
    /// unchanged, with the webhooks' retries.
    public var appleForwardURLs: [String] = []

    /// Creates a configuration for an app.
    public init(bundleId: String) { self.bundleId = bundleId }
}

/// What the server is made of; `buildApplication` wires it.
public struct ServerDependencies: Sendable {
    /// Where users and the ledger live.
    public var store: any CofferStore
    /// Verifies Apple's signed data.
    public var verifier: SignedDataVerifier
    /// The products the app sells.
    public var catalog: Catalog
    /// The App Store Server API, for consumption answers and notification recovery; `nil` when no API
    /// key is configured.
    public var appStoreAPI: AppStoreServerAPIClient?
    /// Reads legacy app receipts (trusting Apple Root CA by default).
    public var receiptReader: AppReceiptReader
    /// The metrics `/metrics` serves.
    public var metrics: ServerMetrics
    /// Where the server logs.
    public var logger: Logger
    /// The clock.
    public var now: @Sendable () -> Date
    /// The clock timed waits are kept on (intervals, pauses): the system's; a test's own to step them.
    public var timerClock: any TimerClock
    /// Hashes and checks admin passwords.
    public var passwordHasher: PasswordHasher
    /// Sends background pushes to the apps (APNs); `nil` when no APNs key is configured.
    public var push: (any PushSender)?
    /// How instances sharing the database hear each other's events (PostgreSQL); `nil` for one instance.
    public var broadcast: (any EventBroadcast)?
    /// Asks CloudKit Web Services whose web auth token a CloudKit claim carries (`cloudkit.api.token`); `nil`
    /// when no API token is configured: then claims trust the record name (``CloudKitClaimProof/recordName``).
    public var cloudKitIdentity: CloudKitUserIdentity?
    /// What the server's service group runs before the server's own services and stops after them: the database's
    /// pool, when the composition root leaves it to the group (`PostgresStore`'s `serviceGroup` runner).
    public var services: [any Service]
    /// How webhooks are posted; `nil` sends none (the outbox still keeps what the endpoints must hear).
    public var webhookSender: (any WebhookSender)?

    /// Creates the dependencies.
    public init(
        store: any CofferStore, verifier: SignedDataVerifier, catalog: Catalog,
        appStoreAPI: AppStoreServerAPIClient? = nil, receiptReader: AppReceiptReader? = nil,
        metrics: ServerMetrics = ServerMetrics(), logger: Logger = Logger(label: "coffer"),
        now: @escaping @Sendable () -> Date = Date.init, passwordHasher: PasswordHasher = PasswordHasher(),
        push: (any PushSender)? = nil, broadcast: (any EventBroadcast)? = nil,
        cloudKitIdentity: CloudKitUserIdentity? = nil, timerClock: any TimerClock = SystemTimerClock(),
        services: [any Service] = [], webhookSender: (any WebhookSender)? = nil
    ) throws {
        self.services = services
        self.webhookSender = webhookSender
        self.timerClock = timerClock
        self.cloudKitIdentity = cloudKitIdentity
        self.push = push
        self.broadcast = broadcast
        self.passwordHasher = passwordHasher
        self.store = store
        self.verifier = verifier
        self.catalog = catalog
        self.appStoreAPI = appStoreAPI
        self.receiptReader = try receiptReader ?? AppReceiptReader(trustedRoots: [AppleRoots.rootCA()], now: now)
        self.metrics = metrics
        self.logger = logger
        self.now = now
    }
}

/// What a CloudKit claim must show before the imported customer is handed over (`cloudkit.claim.proof`).
public enum CloudKitClaimProof: String, Sendable, CaseIterable {
    /// A CloudKit web auth token of the iCloud user the claim names, checked with CloudKit Web Services
    /// (`users/caller`): the default when an API token is configured.
    case webAuthToken = "web-auth-token"
    /// The user record name alone, as the old app trusted it: weaker (the name is public), for apps that cannot
    /// fetch a web auth token.
    case recordName = "record-name"
}
