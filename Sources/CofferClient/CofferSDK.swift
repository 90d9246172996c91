import CofferAPI
import CofferCore
import CofferStore
import CofferStoreKit
import CofferStoreSQLite
import Foundation

/// How the app uses Coffer.
public struct SDKConfiguration: Sendable {
    /// Who owns the running balance; the server must be configured the same way.
    public var wallet: WalletMode
    /// Sandbox or Production, as the server.
    public var environment: Environment
    /// The app's products (the catalog the server has).
    public var catalog: Catalog
    /// A name for this device, kept with its backups.
    public var deviceName: String
    /// Whether credits delivered after a refund settle the deficit first (the server's setting).
    public var deficitPolicy: DeficitPolicy

    /// Creates a configuration.
    public init(
        wallet: WalletMode, environment: Environment, catalog: Catalog, deviceName: String,
        deficitPolicy: DeficitPolicy = .collect
    ) {
        self.wallet = wallet
        self.environment = environment
        self.catalog = catalog
        self.deviceName = deviceName
        self.deficitPolicy = deficitPolicy
    }
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
    let ledger: SQLiteStore
    let state: SDKState
    let now: @Sendable () -> Date
    let crashAfter: @Sendable (SDKStep) throws -> Void
    private var user: User?
    private var identity: DeviceIdentity?

    /// The credentials, once ``launch()`` has run.
    public var credentials: Credentials? { identity?.credentials }

    /// An SDK keeping its files in `folder`.
    ///
    /// - Parameters:
    ///   - crashAfter: Called after each step; a test throws from it to stand for the process dying there.
    public init(
        configuration: SDKConfiguration, storeKit: any StoreKitProvider, server: ServerClient, folder: URL,
        credentials: any CredentialStore, now: @escaping @Sendable () -> Date = Date.init,
        crashAfter: @escaping @Sendable (SDKStep) throws -> Void = { _ in }
    ) throws {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        self.configuration = configuration
        self.storeKit = storeKit
        self.server = server
        self.credentialStore = credentials
        ledger = try SQLiteStore(path: folder.appendingPathComponent("ledger.sqlite").path)
        state = try SDKState(path: folder.appendingPathComponent("sdk.sqlite").path)
        self.now = now
        self.crashAfter = crashAfter
    }

    // MARK: Launch

    /// What ``launch()`` found and did.
    public struct LaunchReport: Sendable, Equatable {
        /// Unfinished transactions delivered (or found delivered) and finished.
        public var recovered: [String]
        /// Transactions posted to the server from the outbox.
        public var posted: Int
        /// Purchases that were in flight when the app last died.
        public var interrupted: Int
        /// Changes from the server's mailbox applied now (device wallet).
        public var adjusted: Int
        /// Credits granted by support and picked up now.
        public var granted: Int64
        /// Whether the server could not be reached (what needs it is retried on the next launch).
        public var offline: Bool
        /// Unfinished transactions the ledger refused, with why (left unfinished; support can look).
        public var refused: [String]
        /// Unfinished transactions another install of the app bought on this Apple account (their account
        /// token names another user): left for that install to deliver and finish.
        public var otherUsers: [String]
    }

    /// Starts the SDK: finds (or creates) the user; in the device wallet takes the server's backup when the
    /// backup rule says so (a fresh install, an admin edit); recovers what a dead process left; posts the
    /// outbox; applies the mailbox and grants; backs the balance up. Without the server it still recovers
    /// locally and says it was offline.
    @discardableResult
    public func launch() async throws -> LaunchReport {
        _ = try await localUser()
        // Steps that need the server are left for the next launch when it is out of reach.
        var offline = false
        if configuration.wallet == .device {
            do { _ = try await syncBackup() } catch ServerClientError.transport { offline = true }
        }
        let interrupted = try state.interruptStartedIntents()
        var recovered: [String] = []
        var refused: [String] = []
        var otherUsers: [String] = []
        for transaction in await storeKit.unfinished() {
            if try await boughtByAnotherUser(transaction) {
                otherUsers.append(transaction.id)
                continue
            }
            do {
                if try await handle(transaction) { recovered.append(transaction.id) }
            } catch let error as LedgerError {
                // One transaction the ledger refuses (a product this catalog does not sell) must not stop
                // the launch; it stays unfinished and is reported.
                refused.append("\(transaction.id): \(error)")
            }
        }
        let caughtUp = try await enteredForeground()
        return LaunchReport(
            recovered: recovered, posted: caughtUp.posted, interrupted: interrupted, adjusted: caughtUp.adjusted,
            granted: caughtUp.granted, offline: offline || caughtUp.offline, refused: refused,
            otherUsers: otherUsers)
    }

    /// What ``enteredForeground()`` picked up.
    public struct CatchUp: Sendable, Equatable {
        /// Transactions posted to the server from the outbox.
        public var posted: Int
        /// Changes from the server's mailbox applied now (device wallet).
        public var adjusted: Int
        /// Credits granted by support and picked up now.
        public var granted: Int64
        /// Refunds StoreKit reports that were taken back now.
        public var refunded: Int
        /// Whether the server could not be reached.
        public var offline: Bool
    }

    /// The app came to the foreground (and the end of ``launch()``): posts the outbox, applies the mailbox and
    /// support's grants, runs the refund check, refreshes the entitlements and backs the balance up. Call it
    /// from the scene's `.active` phase.
    @discardableResult
    public func enteredForeground() async throws -> CatchUp {
        let posted = try await postOutbox()
        var offline = false
        var adjusted = 0
        var granted: Int64 = 0
        do { adjusted = try await applyMailbox() } catch ServerClientError.transport { offline = true }
        do { granted = try await refreshGrants() } catch ServerClientError.transport { offline = true }
        let refunded = try await refundCheck()
        try await refreshEntitlements()
        if configuration.wallet == .device {
            do { _ = try await syncBackup() } catch ServerClientError.transport { offline = true }
        }
        return CatchUp(posted: posted, adjusted: adjusted, granted: granted, refunded: refunded, offline: offline)
    }

    /// The app went to the background: backs the balance up now (device wallet), so what changed since the
    /// last backup survives the app being deleted. Call it from the scene's `.background` phase. A failure
    /// is kept in ``lastBackupFailure`` and retried by the next backup.
    public func enteredBackground() async {
        await backUpNow()
    }

    /// Keeps the server in step while the app runs: every `interval` (5 minutes unless told otherwise) posts
    /// what the outbox still holds and backs the balance up, until the calling task is cancelled. Failures
    /// are kept in ``lastBackupFailure`` and retried at the next tick.
    public func runBackups(every interval: Duration = .seconds(300)) async {
        while !Task.isCancelled {
            do { try await Task.sleep(for: interval) } catch { return }
            _ = try? await postOutbox()
            await backUpNow()
        }
    }

    /// Why the last backup did not happen, if it did not (cleared by the next one that does).
    public private(set) var lastBackupFailure: String?

    private func backUpNow() async {
        guard configuration.wallet == .device else { return }
        do {
            _ = try await syncBackup()
            lastBackupFailure = nil
        } catch {
            lastBackupFailure = "\(error)"
        }
    }

    /// The user: from the credential store (which survives reinstalls), else a new one from the server.
    func localUser() async throws -> User {
        if let user { return user }
        let identity: DeviceIdentity
        if let stored = try credentialStore.load() {
            identity = stored
        } else {
            identity = DeviceIdentity(credentials: try await server.createUser())
            try credentialStore.save(identity)
        }
        self.identity = identity
        let credentials = identity.credentials
        guard let supportId = SupportID(credentials.supportId) else {
            throw SDKError.corrupt("the stored Support ID \(credentials.supportId) is not valid")
        }
        let local: User
        if let found = try await ledger.user(supportId: supportId, environment: configuration.environment) {
            local = found
        } else {
            local = User(
                environment: configuration.environment, supportId: supportId, tokenHash: "device:" + supportId.rawValue,
                appAccountToken: credentials.appAccountToken, createdAt: now())
            try await ledger.createUser(local)
        }
        user = local
        return local
    }

    // MARK: Purchases

    /// Buys a product: the intent is saved first, StoreKit is asked, and the transaction is delivered once
    /// and finished only after that is durable.
    public func purchase(productId: String, quantity: Int = 1) async throws -> PurchaseResult {
        let user = try await localUser()
        guard configuration.catalog.product(id: productId) != nil else {
            throw SDKError.unknownProduct(productId)
        }
        let intent = UUID()
        try state.startIntent(id: intent, productId: productId, quantity: quantity, at: now())
        try crashAfter(.intentSaved)
        let result = try await storeKit.purchase(
            productId: productId, quantity: quantity, appAccountToken: user.appAccountToken)
        switch result {
        case .userCancelled:
            try state.endIntent(id: intent, state: "cancelled")
            return .cancelled
        case .pending:
            try state.endIntent(id: intent, state: "pending")
            return .pending
        case .success(let transaction):
            try crashAfter(.purchased)
            let finished = try await handle(transaction)
            try state.endIntent(id: intent, state: finished ? "done" : "deferred")
            if configuration.wallet == .device {
                // Backed up now when the server is reachable, else on the next launch.
                do { _ = try await syncBackup() } catch ServerClientError.transport {}
            }
            if transaction.revocationDate != nil { return .revoked(transactionId: transaction.id) }
            guard finished else { return .deferred(transactionId: transaction.id) }
            let credits: Int64?
            switch configuration.wallet {
            case .device:
                credits = try await ledger.receipt(
                    transactionId: transaction.id, environment: configuration.environment)?.deliveredCredits
            case .server:
                credits = try state.credits(id: transaction.id)
            }
            return .delivered(transactionId: transaction.id, credits: credits ?? 0)
        }
    }

    /// Handles one transaction from a purchase, the updates stream or launch: remembered for the server,
    /// delivered (or taken back, when refunded) once, then finished.
    ///
    /// A transaction whose account token names another user (bought by another install of the app on the same
    /// Apple account: StoreKit shows the account's unfinished transactions on every device) is left alone:
    /// not delivered, posted or finished here, so the install that bought it delivers it, once.
    ///
    /// - Returns: Whether the transaction is finished (the server wallet defers it while the server is
    ///   out of reach).
    @discardableResult
    public func handle(_ transaction: StoreTransaction) async throws -> Bool {
        let user = try await localUser()
        if try await boughtByAnotherUser(transaction) { return false }
        try state.remember(id: transaction.id, jws: transaction.jwsRepresentation, at: now())
        try crashAfter(.remembered)
        switch configuration.wallet {
        case .device:
            try await deliverLocally(transaction, to: user)
            try crashAfter(.delivered)
            // Posted before it is finished: the outbox goes with the app if it is deleted, and an app that dies
            // here and is then deleted leaves the transaction unfinished, so the new install delivers it again
            // from the backup it restores (which the purchase's own backup has not yet changed). Offline it stays
            // in the outbox and is finished all the same: the balance is the device's.
            _ = try await post(id: transaction.id, jws: transaction.jwsRepresentation)
            await storeKit.finish(transactionId: transaction.id)
            try crashAfter(.finished)
            return true
        case .server:
            guard try await post(id: transaction.id, jws: transaction.jwsRepresentation) else { return false }
            try crashAfter(.delivered)
            await storeKit.finish(transactionId: transaction.id)
            try crashAfter(.finished)
            return true
        }
    }

    /// Whether the transaction's account token names another user than this install's.
    func boughtByAnotherUser(_ transaction: StoreTransaction) async throws -> Bool {
        guard let token = transaction.appAccountToken else { return false }
        return token != (try await localUser()).appAccountToken
    }

    /// Applies a transaction to the local ledger: a purchase delivers, a refunded one takes back.
    func deliverLocally(_ transaction: StoreTransaction, to user: User) async throws {
        let event = try Delivery.event(for: Self.fact(transaction), catalog: configuration.catalog)
        _ = try await ledger.apply(
            LedgerRequest(
                owner: user.id, environment: configuration.environment, event: event,
                policy: configuration.deficitPolicy, at: now()))
        // The server lists the same refund in the mailbox under the same key; kept with the identity, so an
        // app reinstalled and restored from a backup that already has it taken back never takes it twice.
        if case .revocation = event { try remember(event.key.rawValue) }
    }

    /// Posts the outbox: every remembered transaction the server has not acknowledged.
    ///
    /// - Returns: How many the server acknowledged now.
    @discardableResult
    public func postOutbox() async throws -> Int {
        var acknowledged = 0
        for item in try state.outbox() where try await post(id: item.id, jws: item.jws) {
            acknowledged += 1
        }
        return acknowledged
    }

    /// Posts one transaction; `true` once the server answered (delivered, duplicate or revoked).
    func post(id: String, jws: String) async throws -> Bool {
        let credentials = try await credentials()
        let answer: TransactionResponse
        do {
            answer = try await server.post(signedTransaction: jws, token: credentials.token)
        } catch .transport {
            return false
        } catch .refused(403, Self.wrongUser, _) {
            // Another user's install presented it first (a purchase without an account token, made outside the
            // app): it is theirs. What this install delivered is taken back, and it leaves the outbox; the server
            // holds it delivered, so it may be finished.
            try await takeBack(id)
            try state.posted(id: id, outcome: Self.wrongUser, credits: 0, at: now())
            return true
        } catch .refused(let status, let code, _) {
            // Kept in the outbox and retried on each launch: a refusal (forged data, an unknown product) is
            // support's to look at. In the server wallet the transaction also stays unfinished with Apple.
            try state.set("refused:\(id)", "\(status) \(code)")
            return false
        }
        try crashAfter(.posted)
        try state.posted(id: id, outcome: answer.outcome.rawValue, credits: answer.credits, at: now())
        return true
    }

    /// The server's code for a transaction that belongs to another user, kept as its outcome.
    static let wrongUser = "wrong-user"

    /// Takes back what the local ledger delivered for a transaction (device wallet), once.
    func takeBack(_ id: String) async throws {
        guard configuration.wallet == .device,
            let receipt = try await ledger.receipt(transactionId: id, environment: configuration.environment),
            receipt.revokedAt == nil
        else { return }
        var fact = receipt.transaction
        fact.revocationDate = now()
        _ = try await ledger.apply(
            LedgerRequest(
                owner: try await localUser().id, environment: configuration.environment, event: .revocation(fact),
                policy: configuration.deficitPolicy, at: now()))
    }

    func credentials() async throws -> Credentials {
        _ = try await localUser()
        guard let credentials else { throw SDKError.corrupt("no credentials") }
        return credentials
    }

    // MARK: Grants, the mailbox, the backup

    /// Picks up support's grants: each is applied once (its key is kept with the identity, so not even a
    /// server that lists it again, or a reinstall, applies it twice), then claimed.
    ///
    /// - Returns: The credits added.
    @discardableResult
    public func refreshGrants() async throws -> Int64 {
        let user = try await localUser()
        let token = try await credentials().token
        var added: Int64 = 0
        for grant in try await server.pendingGrants(token: token) {
            let id = grant.id.uuidString.lowercased()
            let key = "grant:" + id
            if configuration.wallet == .device, try !applied(key) {
                let result = try await ledger.apply(
                    LedgerRequest(
                        owner: user.id, environment: configuration.environment,
                        event: .grant(id: id, credits: grant.credits, reason: grant.reason),
                        policy: configuration.deficitPolicy, at: now()))
                if result.outcome == .applied { added += grant.credits }
                try crashAfter(.grantApplied)
                try remember(key)
                try crashAfter(.grantRemembered)
            }
            let claimed = try await server.claim(grant: grant.id, token: token)
            if configuration.wallet == .server, claimed.grant.claimedAt != nil { added += grant.credits }
            try crashAfter(.grantClaimed)
        }
        return added
    }

    /// Applies the device wallet's mailbox: refunds, revocations and reversals the server learned from Apple,
    /// and admin edits, each once by its key. A refund of a purchase this install delivered takes back what
    /// it delivered (a deficit for what was spent); one this install never saw (bought before a reinstall)
    /// takes back what the balance allows.
    ///
    /// - Returns: How many were applied now.
    @discardableResult
    public func applyMailbox() async throws -> Int {
        guard configuration.wallet == .device else { return 0 }
        let user = try await localUser()
        var count = 0
        for item in try await server.adjustments(token: try await credentials().token) where try !applied(item.key) {
            var receipt: Receipt?
            if let id = item.transactionId {
                receipt = try await ledger.receipt(transactionId: id, environment: configuration.environment)
            }
            let wallet = try await ledger.wallet(owner: user.id, environment: configuration.environment)
            var event: LedgerEvent?
            switch (item.kind, receipt) {
            case ("revocation", let receipt?):
                var fact = receipt.transaction
                fact.revocationDate = fact.revocationDate ?? item.createdAt
                event = .revocation(fact)
            case ("reversal", let receipt?) where receipt.isRevoked:
                // Dated as the server applied it (after the refund it reverses, by Apple's dates), not by this
                // device's clock, so a later refund in the same mailbox still takes back.
                event = .reversal(receipt.transaction, at: item.createdAt)
            default:
                let delta = item.amount < 0 ? max(item.amount, -wallet.balance) : item.amount
                if delta != 0 { event = .adjustment(id: item.key, delta: delta, reason: item.reason ?? item.kind) }
            }
            if let event {
                _ = try await ledger.apply(
                    LedgerRequest(
                        owner: user.id, environment: configuration.environment, event: event,
                        policy: configuration.deficitPolicy, at: now()))
            }
            if case .reversal(var fact, _) = event, receipt?.deliveredCredits == nil {
                // Refunded before it was ever delivered, and now paid again: deliver it (once, by its key).
                fact.revocationDate = nil
                let credits = try configuration.catalog.credits(for: fact)
                _ = try await ledger.apply(
                    LedgerRequest(
                        owner: user.id, environment: configuration.environment,
                        event: .purchase(fact, credits: credits),
                        policy: configuration.deficitPolicy, at: now()))
            }
            try crashAfter(.adjustmentApplied)
            try remember(item.key)
            try crashAfter(.adjustmentRemembered)
            count += 1
        }
        return count
    }

    /// Backs the device wallet's balance up, or takes the server's value, by the backup rule: a fresh install
    /// with the default balance restores a higher backup; an admin edit newer than this device's last backup
    /// is accepted; otherwise the device's value is written (with its version, retried on a conflict).
    /// One sync runs at a time (the periodic backup, a purchase and an event may ask at once); a caller that
    /// finds one running waits for it and then runs its own, so its own change is backed up.
    @discardableResult
    public func syncBackup() async throws -> BackupDecision {
        guard configuration.wallet == .device else { return .upToDate }
        // Each sync in flight is waited for once: a finished one stays recorded until its caller resumes, and
        // waiting on it again would spin on the actor.
        var waited: Task<BackupDecision, any Error>?
        while let running = backupInFlight, running != waited {
            waited = running
            _ = try? await running.value
        }
        let task = Task { try await self.syncBackupOnce() }
        backupInFlight = task
        defer { if backupInFlight == task { backupInFlight = nil } }
        return try await task.value
    }

    private var backupInFlight: Task<BackupDecision, any Error>?

    private func syncBackupOnce() async throws -> BackupDecision {
        let user = try await localUser()
        let token = try await credentials().token
        for _ in 0..<3 {
            let local = try await ledger.wallet(owner: user.id, environment: configuration.environment).balance
            let remote = try await server.backup(token: token)
            let record = remote.map {
                BackupRecord(
                    value: $0.value, lastUpdated: $0.lastUpdated, version: $0.version,
                    writer: $0.writer == "admin" ? .admin("") : .device(""))
            }
            let lastBackupAt = try state.value("lastBackupAt").flatMap(Double.init).map(
                Date.init(timeIntervalSince1970:))
            // The restore rule is for a fresh install: a device that has backed up or has ledger entries can
            // reach the default balance (0) by spending or a refund, and must not "restore" then. A default
            // no balance can equal (-1) keeps the rule's other two branches for it.
            var fresh = lastBackupAt == nil
            if fresh {
                fresh = try await ledger.entries(owner: user.id, environment: configuration.environment).isEmpty
            }
            let decision = BackupRule.decide(
                localBalance: local, defaultBalance: fresh ? 0 : -1, lastBackupAt: lastBackupAt,
                lastVersion: try state.value("lastBackupVersion").flatMap(Int64.init), server: record)
            switch decision {
            case .restore(let value), .acceptServer(let value):
                guard let remote else { return decision }
                if value != local {
                    _ = try await ledger.apply(
                        LedgerRequest(
                            owner: user.id, environment: configuration.environment,
                            event: .adjustment(
                                id: "backup:\(remote.version)", delta: value - local,
                                reason: remote.writer == "admin" ? "admin edit" : "restored from backup"),
                            at: now()))
                }
                try crashAfter(.backupTaken)
                try rememberBackup(remote)
                return decision
            case .upToDate:
                if let remote { try rememberBackup(remote) }
                return decision
            case .push(let value):
                do {
                    let written = try await server.saveBackup(
                        value: value, device: configuration.deviceName, version: remote?.version, token: token)
                    try crashAfter(.backupPushed)
                    try rememberBackup(written)
                    return decision
                } catch ServerClientError.refused(412, _, _) {
                    continue  // Another device wrote first: decide again with its record.
                }
            }
        }
        throw SDKError.conflict("the backup kept changing under this device")
    }

    /// Keeps which record of the server's backup this device last wrote or took.
    private func rememberBackup(_ record: BackupBody) throws {
        try state.set("lastBackupVersion", String(record.version))
        try state.set("lastBackupAt", String(record.lastUpdated.timeIntervalSince1970))
    }

    /// What a Settings screen says about the backup.
    public enum BackupStatus: Sendable, Equatable {
        /// The server holds the device's balance, written at this time.
        case matches(since: Date)
        /// The server holds another value: a backup not yet made, or a change from another device or support
        /// not yet taken (the next sync settles it).
        case differs(device: Int64, server: Int64)
        /// Nothing is backed up yet.
        case none
        /// The server wallet keeps the balance on the server: there is nothing to back up.
        case notNeeded
    }

    /// Whether the server's backup holds the device's balance, for a Settings screen; throws
    /// ``ServerClientError/transport(_:)`` when the server is out of reach.
    public func backupStatus() async throws -> BackupStatus {
        guard configuration.wallet == .device else { return .notNeeded }
        let token = try await credentials().token
        guard let remote = try await server.backup(token: token) else { return .none }
        let local = try await localWallet().balance
        return remote.value == local
            ? .matches(since: remote.lastUpdated) : .differs(device: local, server: remote.value)
    }

    func applied(_ key: String) throws -> Bool { identity?.appliedKeys.contains(key) ?? false }

    func remember(_ key: String) throws {
        guard var identity, !identity.appliedKeys.contains(key) else { return }
        identity.appliedKeys.insert(key)
        try credentialStore.save(identity)
        self.identity = identity
    }

    // MARK: Updates, entitlements, history

    /// Handles StoreKit's updates (renewals, Ask to Buy approvals, refunds, purchases on other devices) until
    /// the calling task is cancelled. A transaction that cannot be handled now stays unfinished with Apple
    /// and comes back on the next launch; the last failure is kept in ``lastUpdateFailure``.
    public func processUpdates() async {
        let updates = await storeKit.updates()
        isListening = true
        defer { isListening = false }
        for await transaction in updates {
            do {
                try await handle(transaction)
                _ = try await refreshEntitlements()
            } catch {
                lastUpdateFailure = "\(transaction.id): \(error)"
            }
        }
    }

    /// Whether ``processUpdates()`` is subscribed to StoreKit's updates.
    public private(set) var isListening = false

    /// Why the last update could not be handled, if one could not.
    public private(set) var lastUpdateFailure: String?

    /// The entitlements now, by the core's rules over every transaction StoreKit reports for the account: the
    /// latest transaction of each product counts, refunds and revocations clear what is no longer paid,
    /// subscriptions lapse, paid periods build loyalty. Kept on disk, so the next launch shows them before
    /// StoreKit answers (``cachedEntitlements()``), and sent to ``entitlementUpdates()``.
    @discardableResult
    public func refreshEntitlements() async throws -> EntitlementState {
        let facts = await storeKit.all().map(Self.fact)
        let entitlements = Entitlements.evaluate(facts, catalog: configuration.catalog, at: now())
        let names = entitlements.names
        try state.set("entitlements", names.joined(separator: "\n"))
        if names != lastPublished {
            lastPublished = names
            for continuation in watchers.values { continuation.yield(names) }
        }
        return entitlements
    }

    /// The refund check: every refunded or revoked transaction StoreKit reports is taken back once, whether
    /// or not its update was heard: in the device wallet by the local ledger (which knows what it took), in
    /// the server wallet by posting it to the server (which takes it back once and says `revoked`).
    ///
    /// - Returns: How many were taken back now.
    @discardableResult
    public func refundCheck() async throws -> Int {
        var count = 0
        for transaction in await storeKit.all() where transaction.revocationDate != nil {
            switch configuration.wallet {
            case .device:
                let receipt = try await ledger.receipt(
                    transactionId: transaction.id, environment: configuration.environment)
                guard let receipt, receipt.revokedAt == nil else { continue }
            case .server:
                guard try state.outcome(id: transaction.id) != TransactionOutcome.revoked.rawValue else { continue }
            }
            if try await handle(transaction) { count += 1 }
        }
        return count
    }

    /// The entitlements as last computed, for the first frame after launch (so a gate does not flash).
    public func cachedEntitlements() throws -> [String] {
        guard let text = try state.value("entitlements"), !text.isEmpty else { return [] }
        return text.split(separator: "\n").map(String.init)
    }

    /// The entitlements each time they change, starting with the cached ones: an observable value for the UI.
    public func entitlementUpdates() throws -> AsyncStream<[String]> {
        let (stream, continuation) = AsyncStream.makeStream(of: [String].self)
        let id = UUID()
        watchers[id] = continuation
        continuation.yield(try lastPublished ?? cachedEntitlements())
        continuation.onTermination = { _ in Task { await self.stopWatching(id) } }
        return stream
    }

    private var watchers: [UUID: AsyncStream<[String]>.Continuation] = [:]
    private var lastPublished: [String]?

    private func stopWatching(_ id: UUID) { watchers[id] = nil }

    /// One line of the purchase history a Settings screen shows.
    public struct HistoryItem: Sendable, Equatable {
        /// The transaction.
        public var transactionId: String
        /// The product.
        public var productId: String
        /// When it was bought.
        public var purchaseDate: Date
        /// Credits it delivered (0 for what only unlocks something).
        public var credits: Int64
        /// `delivered`, `refunded`, `waiting` (not yet delivered), `not delivered` (finished elsewhere) or
        /// `another device` (bought by the app on another of the customer's devices, another user: delivered
        /// there).
        public var status: String
    }

    /// Every transaction of the account, newest first, with what it delivered here.
    public func history() async throws -> [HistoryItem] {
        _ = try await localUser()
        let unfinished = Set(await storeKit.unfinished().map(\.id))
        var items: [HistoryItem] = []
        for transaction in await storeKit.all() {
            let receipt = try await ledger.receipt(
                transactionId: transaction.id, environment: configuration.environment)
            let serverCredits = try state.credits(id: transaction.id)
            var credits = receipt?.deliveredCredits ?? serverCredits ?? 0
            let status: String
            if try await boughtByAnotherUser(transaction) || state.outcome(id: transaction.id) == Self.wrongUser {
                status = "another device"
                credits = 0
            } else if transaction.revocationDate != nil {
                status = "refunded"
            } else if receipt?.deliveredAt != nil || serverCredits != nil {
                status = "delivered"
            } else {
                status = unfinished.contains(transaction.id) ? "waiting" : "not delivered"
            }
            items.append(
                HistoryItem(
                    transactionId: transaction.id, productId: transaction.productId,
                    purchaseDate: transaction.purchaseDate, credits: credits, status: status))
        }
        return items.sorted { ($0.purchaseDate, $0.transactionId) > ($1.purchaseDate, $1.transactionId) }
    }

    /// "Verify Purchases": unfinished transactions are delivered now (Apple says they were never fulfilled);
    /// ones delivered but left unfinished are finished; finished ones this device has no record of are
    /// reported as could-not-be-verified (contact support with the Support ID). What the app bought on
    /// another of the customer's devices (another user) is that install's to deliver and is left out.
    public func verifyPurchases() async throws -> [ReconciliationItem] {
        let user = try await localUser()
        let unfinished = Set(await storeKit.unfinished().map(\.id))
        var all: [StoreTransaction] = []
        for transaction in await storeKit.all() where try await !boughtByAnotherUser(transaction) {
            all.append(transaction)
        }
        var recorded = Set<String>()
        for transaction in all {
            switch configuration.wallet {
            case .device:
                if try await ledger.receipt(transactionId: transaction.id, environment: configuration.environment)?
                    .owner == user.id
                {
                    recorded.insert(transaction.id)
                }
            case .server:
                if try state.credits(id: transaction.id) != nil { recorded.insert(transaction.id) }
            }
        }
        let items = Reconciliation.classify(
            all.map {
                DeviceTransaction(
                    transactionId: $0.id, productId: $0.productId, isFinished: !unfinished.contains($0.id))
            }, recorded: recorded)
        for item in items where item.verdict == .deliverNow || item.verdict == .finishOnly {
            if let transaction = all.first(where: { $0.id == item.transaction.transactionId }) {
                try await handle(transaction)
            }
        }
        return items
    }

    // MARK: Spending

    /// Spends credits, once per `key` (give the same key when retrying the same spend): from the local
    /// ledger in the device wallet, through the server in the server wallet.
    ///
    /// - Returns: The balance after the spend.
    /// - Throws: `LedgerError.insufficientBalance` when the balance holds less; ``ServerClientError`` when
    ///   the server wallet's server is out of reach (nothing was spent unless it answered).
    @discardableResult
    public func spend(_ amount: Int64, key: String = UUID().uuidString.lowercased()) async throws -> Int64 {
        guard amount > 0 else { throw LedgerError.invalidAmount(amount) }
        switch configuration.wallet {
        case .device:
            let user = try await localUser()
            let result = try await ledger.apply(
                LedgerRequest(
                    owner: user.id, environment: configuration.environment, event: .spend(key: key, amount: amount),
                    at: now()))
            return result.wallet.balance
        case .server:
            let token = try await credentials().token
            do {
                return try await server.spend(amount: amount, key: key, token: token).balance
            } catch .refused(_, "insufficient-balance", _) {
                let balance = try await server.me(token: token).balance
                throw LedgerError.insufficientBalance(balance: balance, requested: amount)
            } catch .refused(_, "key-reused", _) {
                throw LedgerError.keyReused(IdempotencyKey(.spend, key))
            }
        }
    }

    // MARK: The server's events

    /// Listens to the server's event stream until the calling task is cancelled: a grant is picked up as
    /// soon as support makes it, a refund the server learned of is taken back, support's edit of the backup
    /// is accepted, the entitlements refresh. Each time the stream opens, everything is looked at once
    /// (events sent while it was closed are not replayed); when it drops it is opened again after `retry`.
    /// Failures are kept in ``lastEventFailure``.
    public func listenForServerEvents(retry: Duration = .seconds(5)) async {
        while !Task.isCancelled {
            do {
                let token = try await credentials().token
                for try await signal in server.events(token: token) {
                    switch signal {
                    case .connected:
                        isConnectedToEvents = true
                        await react(to: nil)
                    case .event(let event):
                        await react(to: event.type)
                    }
                }
            } catch {
                lastEventFailure = "\(error)"
            }
            isConnectedToEvents = false
            do { try await Task.sleep(for: retry) } catch { return }
        }
    }

    /// Whether ``listenForServerEvents(retry:)`` has the stream open.
    public private(set) var isConnectedToEvents = false

    /// Why the last event could not be acted on, or why the stream last dropped.
    public private(set) var lastEventFailure: String?

    /// Acts on one event (`nil`: look at everything).
    private func react(to kind: ServerEventKind?) async {
        do {
            switch kind {
            case nil:
                _ = try await enteredForeground()
            case .grant:
                if try await refreshGrants() != 0 { _ = try await syncBackup() }
            case .adjustment:
                if try await applyMailbox() != 0 { _ = try await syncBackup() }
            case .backup:
                _ = try await syncBackup()
            case .entitlements:
                _ = try await refreshEntitlements()
            }
        } catch {
            lastEventFailure = "\(error)"
        }
    }

    // MARK: Reading

    /// The balance: the local ledger's in the device wallet, the server's in the server wallet.
    public func balance() async throws -> Int64 {
        switch configuration.wallet {
        case .device:
            let user = try await localUser()
            return try await ledger.wallet(owner: user.id, environment: configuration.environment).balance
        case .server:
            return try await server.me(token: try await credentials().token).balance
        }
    }

    /// The local ledger's wallet (balance and deficit) in the device wallet.
    public func localWallet() async throws -> Wallet {
        let user = try await localUser()
        return try await ledger.wallet(owner: user.id, environment: configuration.environment)
    }

    /// Transactions the server has not acknowledged yet.
    public func pendingPosts() throws -> [String] { try state.outbox().map(\.id) }

    /// A StoreKit transaction as the ledger's facts.
    static func fact(_ transaction: StoreTransaction) -> TransactionFact {
        TransactionFact(
            transactionId: transaction.id, originalTransactionId: transaction.originalId,
            productId: transaction.productId, quantity: transaction.quantity, purchaseDate: transaction.purchaseDate,
            expiresDate: transaction.expirationDate, revocationDate: transaction.revocationDate,
            isFamilyShared: transaction.isFamilyShared, isUpgraded: transaction.isUpgraded)
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
}
