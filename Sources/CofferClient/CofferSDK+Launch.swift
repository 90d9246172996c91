import CofferAPI
import CofferCore
import CofferStoreKit
import Foundation
import Synchronization

extension CofferSDK {
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
        /// Unfinished transactions StoreKit could not verify that the server refused too, with why: finished now,
        /// nothing delivered (a forged or tampered transaction; support may want to know).
        public var unverified: [String] = []
        /// Whether the launch went past ``SDKConfiguration/launchDeadline``: its steps go on in the background (the
        /// other fields are empty), and the app shows its cached state.
        public var pastDeadline = false
        /// A report of a launch past its deadline.
        static let pastDeadline = LaunchReport(
            recovered: [], posted: 0, interrupted: 0, adjusted: 0, granted: 0, offline: false, refused: [],
            otherUsers: [], pastDeadline: true)
    }

    /// Starts the SDK: finds (or creates) the user; takes the server's catalog when it changed and checks the server
    /// keeps the wallet this app is configured for (``SDKError/walletMismatch(_:)`` otherwise); in the device wallet
    /// takes the server's backup when the backup rule says so (a fresh install, an admin edit); recovers what a dead
    /// process left; posts the outbox; applies the mailbox and grants; backs the balance up. Without the server it
    /// still recovers locally and says it was offline.
    func launchSteps() async throws -> LaunchReport {
        configuration.log(
            .info, .launch,
            "launch: \(configuration.wallet.rawValue) wallet, \(configuration.environment.rawValue), identity \(configuration.identity.rawValue)"
        )
        // What StoreKit says now, before any server step (registering included): the cached entitlements a screen
        // shows first give way at once to StoreKit's, however long the server takes.
        try await evaluateEntitlements()
        _ = try await localUser()
        // Steps that need the server are left for the next launch when it is out of reach.
        var offline = false
        // The server's catalog: out of reach or refused, the one the SDK holds stays (and the refusal is kept).
        do {
            try await refreshCatalog()
            lastCatalogFailure = nil
        } catch ServerClientError.transport {
            offline = true
        } catch {
            lastCatalogFailure = "\(error)"
        }
        // Only a server keeping the other wallet stops the launch; anything else is asked again next launch.
        do {
            try await checkWallet()
        } catch ServerClientError.transport {
            offline = true
        } catch SDKError.walletMismatch(let why) {
            throw SDKError.walletMismatch(why)
        } catch {}
        do {
            _ = try await syncBackup()
        } catch ServerClientError.transport {
            offline = true
        } catch SDKError.conflict(let why) {
            lastBackupFailure = why  // Tried again by the next backup.
        }
        // The first launch with Coffer: what the app delivered before is recorded, never delivered again.
        try await recordDeliveredBeforeCoffer()
        let interrupted = try state.interruptStartedIntents()
        var recovered: [String] = []
        var refused: [String] = []
        var otherUsers: [String] = []
        var unverified: [String] = []
        for transaction in await storeKit.unfinished() {
            if !transaction.isVerified {
                if try await handle(transaction) {
                    if let why = try unverifiedRefusal(transaction.id) {
                        unverified.append("\(transaction.id): \(why)")
                    } else {
                        recovered.append(transaction.id)
                    }
                }
                continue
            }
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
        let report = LaunchReport(
            recovered: recovered, posted: caughtUp.posted, interrupted: interrupted, adjusted: caughtUp.adjusted,
            granted: caughtUp.granted, offline: offline || caughtUp.offline, refused: refused,
            otherUsers: otherUsers, unverified: unverified)
        Self.log(report, configuration.log)
        return report
    }

    /// The launch's lines: what it recovered, what was refused, and a summary.
    static func log(_ report: LaunchReport, _ log: SDKLog) {
        for id in report.recovered { log(.info, .recovery, "recovered transaction \(id): delivered once and finished") }
        if report.interrupted > 0 {
            log(.info, .recovery, "\(report.interrupted) purchases were in flight when the app last died")
        }
        for line in report.refused { log(.notice, .recovery, "left unfinished, the ledger refused it: \(line)") }
        for line in report.unverified {
            log(.notice, .recovery, "StoreKit could not verify it and the server refused it; finished: \(line)")
        }
        log(
            .info, .launch,
            "launch done: \(report.recovered.count) recovered, \(report.posted) posted, \(report.adjusted) adjusted, \(report.granted) credits granted\(report.offline ? ", the server out of reach" : "")"
        )
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
        if refunded > 0 { configuration.log(.info, .refund, "refund check: \(refunded) refunds taken back") }
        await refreshGrantedEntitlements()
        try await refreshEntitlements()
        do {
            _ = try await syncBackup()
        } catch ServerClientError.transport {
            offline = true
        } catch SDKError.conflict(let why) {
            lastBackupFailure = why
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
            do { try await configuration.timerClock.sleep(for: interval) } catch { return }
            _ = try? await postOutbox()
            await backUpNow()
        }
    }

    func backUpNow() async {
        do {
            _ = try await syncBackup()
            lastBackupFailure = nil
        } catch {
            lastBackupFailure = "\(error)"
            configuration.log(.warning, .backup, "backup failed, tried again with the next one: \(error)")
        }
        // The balance the next launch shows first (device wallet): kept with each backup, and as the app goes away.
        if configuration.wallet == .device, let wallet = try? await localWallet() { keepWallet(wallet) }
    }

    /// This device's credentials from the server: the Apple account's user (``SDKIdentity/appleAccount``) with the
    /// AppTransaction StoreKit holds (`AppTransaction.shared`); a user of the install's own when the system has no
    /// AppTransaction the server takes, or with ``SDKIdentity/install``.
    ///
    /// A cached AppTransaction the server finds too old is never refreshed here: `AppTransaction.refresh()` asks
    /// the customer to sign in to the App Store, which Apple allows only on the customer's own action. The install
    /// then starts as a customer of its own, and Restore Purchases (``restorePurchases()``, a button the customer
    /// taps) refreshes it and joins the Apple account's customer while the install holds nothing of its own.
    func register() async throws(ServerClientError) -> CreateUserResponse {
        if let imported = try await claimImportedCustomer() { return imported }
        guard configuration.identity == .appleAccount, let cached = await storeKit.appTransaction(refresh: false)
        else { return try await server.createUser() }
        do {
            return try await server.register(signedAppTransaction: cached)
        } catch .refused(422, "stale-app-transaction", _) {
            try? state.set(Self.joinPendingKey, "stale")
            configuration.log(
                .notice, .launch,
                "the AppTransaction StoreKit holds is too old for the server: this install starts as a customer of its own; Restore Purchases joins the Apple account's"
            )
        } catch .refused(422, _, _) {
            // No appTransactionId (an older system), or an AppTransaction this server does not take.
        }
        return try await server.createUser()
    }

    static let cloudKitClaimKey = "import.cloudkit.claimKey"
    static let cloudKitClaimDone = "import.cloudkit.done"

    /// The customer `coffer import cloudkit` brought in under the device's CloudKit user record name, claimed by
    /// this install: `nil` when there is no reader, no iCloud account, or the server has no such customer for this
    /// install (none imported, or another install claimed it: then the install registers as new, and support can
    /// merge). The claim's key is kept before asking, so a claim whose answer was lost is asked again with it;
    /// CloudKit or the server not answering now is a transport failure, tried again later, never a new customer.
    func claimImportedCustomer() async throws(ServerClientError) -> CreateUserResponse? {
        guard let read = configuration.cloudKitUserRecordName, (try? state.value(Self.cloudKitClaimDone)) == nil
        else { return nil }
        let name: String?
        do {
            name = try await Self.within(.seconds(10), on: configuration.timerClock, read)
        } catch {
            throw .transport("CloudKit did not give the user record name: \(error)")
        }
        guard let name, !name.isEmpty else { return nil }  // no iCloud account: nothing to claim
        let key: String
        do {
            if let kept = try state.value(Self.cloudKitClaimKey), !kept.isEmpty {
                key = kept
            } else {
                key = UUID().uuidString + UUID().uuidString
                try state.set(Self.cloudKitClaimKey, key)
            }
        } catch {
            return nil  // no place to keep the key: a lost answer could not be asked again, so do not ask
        }
        // Each claim carries a web auth token of its own (they are single-use), when the app fetches them.
        func claim(_ signed: String?) async throws(ServerClientError) -> CreateUserResponse {
            try await server.claimCloudKit(
                userRecordName: name, claimKey: key, signedAppTransaction: signed,
                ckWebAuthToken: try await cloudKitWebAuthToken())
        }
        do {
            // With the Apple account identity, the customer becomes the account's: its other devices find them. A
            // stale AppTransaction is refused before the claim is used: asked again with a fresh one, or without.
            let cached = configuration.identity == .appleAccount ? await storeKit.appTransaction(refresh: false) : nil
            do {
                return try await claim(cached)
            } catch .refused(422, let code, _) where cached != nil && !code.hasPrefix("cloudkit-") {
                // Never `AppTransaction.refresh()` here (it asks the customer to sign in): claimed without one.
                return try await claim(nil)
            }
        } catch .refused(let status, let code, _)
            where [400, 403, 404, 409].contains(status) || code == "cloudkit-proof-required"
        {
            // Not this install's to claim (none imported, claimed, another iCloud user's token, or a server that
            // wants a proof this app does not fetch): it registers as new, and support can merge.
            try? state.set(Self.cloudKitClaimDone, "none")
            return nil
        }
    }

    /// A fresh CloudKit web auth token for one claim, `nil` when the app fetches none (or the device has no iCloud
    /// account); CloudKit not answering within 10 s is a transport failure, tried again later.
    func cloudKitWebAuthToken() async throws(ServerClientError) -> String? {
        guard let fetch = configuration.cloudKitWebAuthToken else { return nil }
        do {
            return try await Self.within(.seconds(10), on: configuration.timerClock, fetch)
        } catch {
            throw .transport("CloudKit did not give a web auth token: \(error)")
        }
    }

    /// Once the credentials are saved, the claim is over: its key is forgotten and never asked again.
    func endCloudKitClaim() {
        guard configuration.cloudKitUserRecordName != nil, (try? state.value(Self.cloudKitClaimDone)) != "ended"
        else { return }
        try? state.set(Self.cloudKitClaimDone, "ended")
        try? state.set(Self.cloudKitClaimKey, "")
    }

    /// `body`'s answer, or a timeout error once `limit` has passed on `clock`, even when `body` ignores
    /// cancellation (it is cancelled and left to finish on its own).
    static func within<T: Sendable>(
        _ limit: Duration, on clock: any TimerClock, _ body: @escaping @Sendable () async throws -> T
    )
        async throws -> T
    {
        let waiting = Waiting<T>()
        return try await withCheckedThrowingContinuation { continuation in
            waiting.continuation.withLock { $0 = continuation }
            let work = Task {
                let result: Result<T, any Error>
                do {
                    result = .success(try await body())
                } catch {
                    result = .failure(error)
                }
                waiting.take()?.resume(with: result)
            }
            Task {
                try? await clock.sleep(for: limit)
                guard let late = waiting.take() else { return }
                work.cancel()
                late.resume(throwing: CancellationError())
            }
        }
    }

    /// The user: from the credential store (which survives reinstalls), else from the server. On a first
    /// launch with the server out of reach, the device wallet starts with a provisional user of its own
    /// (purchases are delivered locally and wait in the outbox) and registers on a later call; the server
    /// wallet cannot work without the server and says so (``SDKError/serverRequired(_:)``).
    func localUser() async throws -> LocalUser {
        // An install registering again (its token refused) finds its new local user once; the others wait for it.
        if let registration, !Self.replacingCredentials { _ = try? await registration.value }
        if let user, identity != nil { return user }
        var identity = try self.identity ?? credentialStore.load()
        if identity == nil, let user, let tried = registrationTriedAt, now().timeIntervalSince(tried) < 30 {
            return user  // provisional, and the server was out of reach a moment ago
        }
        if identity == nil {
            registrationTriedAt = now()
            do {
                identity = DeviceIdentity(credentials: try await register())
            } catch .transport(let why) {
                guard configuration.wallet == .device, let provisional = try await provisionalUser() else {
                    throw SDKError.serverRequired(why)
                }
                user = provisional
                return provisional
            }
        }
        guard let identity else { throw SDKError.corrupt("no identity") }
        try credentialStore.save(identity)
        endCloudKitClaim()
        self.identity = identity
        let credentials = identity.credentials
        guard let supportId = SupportID(credentials.supportId) else {
            throw SDKError.corrupt("the stored Support ID \(credentials.supportId) is not valid")
        }
        let local: LocalUser
        if let found = try await ledger.user(supportId: supportId, environment: configuration.environment) {
            local = found
        } else if let provisional = try await provisionalUser(create: false) {
            // Registered at last: the provisional user's ledger is the customer's, under the server's ids; what it
            // bought with its own account token stays this install's.
            local = LocalUser(id: provisional.id, supportId: supportId, appAccountToken: credentials.appAccountToken)
            try await ledger.adopt(local, environment: configuration.environment)
            try state.set(Self.formerToken, provisional.appAccountToken.uuidString)
            try state.set(Self.provisionalKey, "")
        } else {
            local = LocalUser(id: UUID(), supportId: supportId, appAccountToken: credentials.appAccountToken)
            try await createLocalUser(local)
        }
        user = local
        return local
    }

    /// The key of the starting balance's entry in the local ledger.
    static let startingKey = IdempotencyKey(.adjustment, "start")

    /// Records a new local user, holding the starting balance (device wallet).
    func createLocalUser(_ local: LocalUser) async throws {
        try await ledger.createUser(local, environment: configuration.environment, at: now())
        guard configuration.wallet == .device, configuration.startingBalance > 0 else { return }
        _ = try await ledger.apply(
            LedgerRequest(
                owner: local.id, environment: configuration.environment,
                event: .adjustment(
                    id: Self.startingKey.id, delta: configuration.startingBalance, reason: "starting balance"),
                at: now()))
    }

    static let provisionalKey = "provisional.supportId"
    static let formerToken = "provisional.appAccountToken"

    /// The install's provisional user (device wallet, before the server was ever reached): made on first use.
    @discardableResult
    func provisionalUser(create: Bool = true) async throws -> LocalUser? {
        let environment = configuration.environment
        if let text = try state.value(Self.provisionalKey), let supportId = SupportID(text),
            let found = try await ledger.user(supportId: supportId, environment: environment)
        {
            return found
        }
        guard create else { return nil }
        var generator = SystemRandomNumberGenerator()
        let local = LocalUser(id: UUID(), supportId: SupportID.random(using: &generator), appAccountToken: UUID())
        try await createLocalUser(local)
        try state.set(Self.provisionalKey, local.supportId.rawValue)
        return local
    }

    /// Whether an account token is this install's: its user's, or the provisional one it bought with before it
    /// first reached the server.
    func isOwnToken(_ token: UUID) async throws -> Bool {
        if token == (try await localUser()).appAccountToken { return true }
        return try state.value(Self.formerToken) == token.uuidString
    }
}

/// The continuation ``CofferSDK/within(_:on:_:)`` resumes once: with the answer, or at the deadline.
private final class Waiting<T: Sendable>: Sendable {
    let continuation = Mutex<CheckedContinuation<T, any Error>?>(nil)

    func take() -> CheckedContinuation<T, any Error>? { continuation.withLock { $0.take() } }
}
