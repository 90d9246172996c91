import CofferCore
import Foundation

/// Everything Coffer keeps: users, the ledger (entries, wallets, receipts), backups, grants and the audit
/// log. Every record is tagged with its environment, and queries never cross environments.
///
/// Each engine (in-memory, SQLite, PostgreSQL) passes the same contract suite. An operation either
/// completes durably or changes nothing.
public protocol CofferStore: Sendable {
    /// One cheap round trip to the database (`SELECT 1`), within its deadline: what `/readyz` asks.
    func ping() async throws

    // MARK: Users

    /// Adds a user. Throws ``StoreError/alreadyExists(_:)`` when the Support ID, token hash, `appAccountToken`
    /// or Apple account is taken.
    func createUser(_ user: User) async throws
    /// The user with this id.
    func user(id: UUID) async throws -> User?
    /// The user with this Support ID in an environment.
    func user(supportId: SupportID, environment: AppStoreEnvironment) async throws -> User?
    /// The user whose token hashes to `tokenHash`: the token the user was created with, or one added for
    /// another device (``addToken(tokenHash:owner:at:)``), unless it was revoked.
    func user(tokenHash: String) async throws -> User?
    /// The user who is this Apple account in an environment.
    func user(appleAccount: AppleAccount, environment: AppStoreEnvironment) async throws -> User?
    /// Gives a user another device's token (its hash), saying how it was issued. Throws
    /// ``StoreError/alreadyExists(_:)`` when the hash is taken, ``StoreError/notFound(_:)`` when the user does not
    /// exist, was deleted or was merged into another.
    func addToken(tokenHash: String, owner: UUID, origin: TokenOrigin, at date: Date) async throws
    /// Revokes a user's oldest live device tokens (``TokenOrigin/device``, the first token included) beyond the
    /// newest `keeping`: what a customer can add by registering devices stays bounded.
    ///
    /// - Returns: How many were revoked.
    func revokeOldTokens(owner: UUID, keeping: Int, at date: Date) async throws -> Int
    /// The live tokens a user holds, by origin: the first token counts as a device's unless an import made the
    /// user (no install ever held it).
    func tokenCounts(owner: UUID) async throws -> TokenCounts
    /// Merges an anonymous user into an account user, once, in one commit: the ledger entries
    /// (``Ledger/merge(from:fromWallet:into:intoWallet:moving:at:)``), the receipts, grants and renewal states,
    /// the tokens of installs that registered themselves (with ``UserMerge/movesTokens`` they now sign in as the
    /// account user, otherwise they end; tokens a claim issued always end), the mark, and the user's imports marked claimed (a merged customer is settled: its
    /// record name claims nothing). Throws ``StoreError/alreadyExists(_:)`` when it was merged already,
    /// ``StoreError/notFound(_:)`` when either user is missing from the environment.
    ///
    /// `audit` is given the result and answers the audit entries that record the merge, written in the same
    /// transaction (an entry whose id is taken is written under an id of its own).
    func mergeUser(_ merge: UserMerge, audit: @escaping @Sendable (UserMergeResult) throws -> [AuditEvent])
        async throws -> UserMergeResult
    /// The users support merged into `user`, oldest first.
    func users(mergedInto user: UUID) async throws -> [User]
    /// Keeps a customer's merge code, replacing the one before (one per customer). Throws
    /// ``StoreError/notFound(_:)`` for an unknown, merged or deleted customer.
    func saveMergeCode(_ code: MergeCode) async throws
    /// Uses up a customer's merge code: `true` once, when `codeHash` is the customer's code and it has not
    /// expired at `date`; a wrong code leaves the right one in place.
    func useMergeCode(owner: UUID, codeHash: String, at date: Date) async throws -> Bool
    /// Deletes a customer at their request, in one transaction: the wallet closed by a ledger entry
    /// (``UserDeletion/closing(owner:wallet:at:)``); the customer and the installs merged into them
    /// anonymised (tokens, push tokens, backups, the Apple account link and the `appAccountToken` replaced or
    /// removed, `deletedAt` set); pending grants cancelled; the reasons support wrote on their grants, grant
    /// entries and adjustments replaced. Receipts, entries and amounts stay, so no transaction is credited twice and totals add up.
    /// Throws ``StoreError/notFound(_:)`` for no such user in the environment, ``StoreError/alreadyExists(_:)``
    /// for one deleted already.
    /// `audit` is given the result and answers the audit entries that record the deletion, written in the same
    /// transaction.
    func deleteUser(
        _ deletion: UserDeletion, audit: @escaping @Sendable (UserDeletionResult) throws -> [AuditEvent]
    ) async throws -> UserDeletionResult
    /// Keeps an install's latest Verify Purchases report, replacing the one before.
    func saveVerifyReport(_ report: VerifyReport) async throws
    /// A user's latest Verify Purchases report.
    func verifyReport(owner: UUID, environment: AppStoreEnvironment) async throws -> VerifyReport?
    /// Revokes one token (its hash): the user's other tokens stay valid.
    ///
    /// - Returns: Whether a valid token was revoked.
    func revokeToken(tokenHash: String, at date: Date) async throws -> Bool
    /// The user who owns this `appAccountToken` in an environment.
    func user(appAccountToken: UUID, environment: AppStoreEnvironment) async throws -> User?
    /// Users of an environment, newest first, optionally whose Support ID starts with `supportIdPrefix`
    /// (case-insensitive).
    func users(environment: AppStoreEnvironment, supportIdPrefix: String?, limit: Int, offset: Int) async throws
        -> [User]
    /// How many users an environment has.
    func userCount(environment: AppStoreEnvironment) async throws -> Int
    /// The Sandbox-marked users of an environment (``SandboxMark``: App Review, TestFlight and sandbox testers on a
    /// Production server), newest first, optionally whose Support ID starts with `supportIdPrefix`.
    func sandboxMarkedUsers(environment: AppStoreEnvironment, supportIdPrefix: String?, limit: Int, offset: Int)
        async throws -> [User]

    // MARK: Ledger

    /// Applies ledger requests in order, all in one durable commit (group commit). A request the ledger
    /// refuses gets its ``LedgerError`` and changes nothing; the others still apply.
    ///
    /// - Returns: One result per request, in order.
    /// - Throws: A storage failure, in which case nothing was applied.
    func apply(_ requests: [LedgerRequest]) async throws -> [Result<LedgerResult, LedgerError>]
    /// A user's wallet (empty for a user with no entries).
    func wallet(owner: UUID, environment: AppStoreEnvironment) async throws -> Wallet
    /// A user's ledger entries, oldest first.
    func entries(owner: UUID, environment: AppStoreEnvironment) async throws -> [LedgerEntry]
    /// A user's ledger entries of some kinds, oldest first (the device wallet's mailbox reads revocations,
    /// reversals and adjustments without the user's purchases).
    func entries(owner: UUID, environment: AppStoreEnvironment, kinds: Set<LedgerEntryKind>) async throws
        -> [LedgerEntry]
    /// The receipt of a transaction.
    func receipt(transactionId: String, environment: AppStoreEnvironment) async throws -> Receipt?
    /// A user's receipts, oldest purchase first.
    func receipts(owner: UUID, environment: AppStoreEnvironment) async throws -> [Receipt]
    /// A user's receipts of the given products, oldest purchase first: what entitlements are computed
    /// from, without reading the user's consumable purchases.
    func receipts(owner: UUID, environment: AppStoreEnvironment, productIds: Set<String>) async throws -> [Receipt]
    /// The receipts of one subscription chain (or one non-renewing transaction), oldest purchase first.
    func receipts(originalTransactionId: String, environment: AppStoreEnvironment) async throws -> [Receipt]

    // MARK: Push tokens

    /// Registers a device's push token for a user, replacing what was on file for the token (a token moves to
    /// the user whose app registered it last); the user keeps the newest ``PushToken/keptPerUser``. Throws ``StoreError/notFound(_:)`` for an unknown user.
    func savePushToken(_ token: PushToken) async throws
    /// A user's push tokens, most recently registered first.
    func pushTokens(owner: UUID, environment: AppStoreEnvironment) async throws -> [PushToken]
    /// Forgets a push token (the app unregistered, or APNs answered that it is no longer valid), only while it
    /// belongs to `owner` (a token that moved to another user meanwhile stays theirs).
    ///
    /// - Returns: Whether it was on file for `owner`.
    @discardableResult
    func deletePushToken(_ token: String, owner: UUID) async throws -> Bool

    // MARK: Milestones

    /// Records that the user reached a milestone (`loyalty:<group>`, the loyalty lifetime earned), once.
    ///
    /// - Returns: Whether this is the first time (the app celebrates only then, on whichever device asks first).
    /// - Throws: ``StoreError/notFound(_:)`` for an unknown user.
    func recordMilestone(owner: UUID, name: String, at date: Date) async throws -> Bool

    // MARK: Imported customers

    /// Makes a user with no Apple account that account's (an imported customer claimed by an install that
    /// showed its AppTransaction): from then on the account's other devices register to this user.
    ///
    /// - Returns: Whether it was linked now: `false` for an unknown, merged or deleted user, or one that is an
    ///   Apple account's already.
    /// - Throws: ``StoreError/alreadyExists(_:)`` when another user of its environment is this account.
    func linkAppleAccount(_ account: AppleAccount, to user: UUID) async throws -> Bool

    /// Records a customer brought in from another system, unless one of that source and external id is on file
    /// in its environment already.
    ///
    /// - Returns: The record on file: `customer` when this call wrote it, else the earlier one (an import run
    ///   twice finds the user it made the first time).
    func recordImport(_ customer: ImportedCustomer) async throws -> ImportedCustomer
    /// The imported customer of this source and external id.
    func importedCustomer(source: String, externalId: String, environment: AppStoreEnvironment) async throws
        -> ImportedCustomer?
    /// Claims an imported customer for the app presenting `keyHash`: the first claim keeps its key and time;
    /// a later claim succeeds only with the same key.
    ///
    /// - Returns: The record as claimed, or `nil` when none is on file or another key claimed it.
    func claimImport(
        source: String, externalId: String, environment: AppStoreEnvironment, keyHash: String, at date: Date
    )
        async throws -> ImportedCustomer?

    // MARK: Backups

    /// A user's backup.
    func backup(owner: UUID, environment: AppStoreEnvironment) async throws -> BackupRecord?
    /// Writes a user's backup as `decide` says, in one transaction that holds the user: `decide` is given the
    /// record on file and answers the record to write, or `nil` to leave it; what is written is kept in the
    /// backup history too, and `audit` (given the record before and the one written) answers the audit entries
    /// that record it, written in the same transaction; an error `audit` throws refuses the write, and nothing
    /// changes (support's balance edit refuses a backup that moved since support saw it). Callers use
    /// ``saveBackup(owner:environment:value:deficit:precondition:writer:at:audit:)``.
    ///
    /// - Returns: The record on file before, and the one written (`nil` when `decide` left it).
    /// - Throws: ``StoreError/notFound(_:)`` for an unknown user; what `audit` throws.
    func writeBackup(
        owner: UUID, environment: AppStoreEnvironment, _ decide: @escaping @Sendable (BackupRecord?) -> BackupRecord?,
        audit: @escaping @Sendable (BackupRecord?, BackupRecord) throws -> [AuditEvent]
    ) async throws -> (current: BackupRecord?, written: BackupRecord?)
    /// Sets a user's balance in the server wallet with a ledger adjustment of the difference from the wallet as it
    /// is inside the transaction (nothing when it holds that balance already), and writes the audit entries
    /// `audit` answers for the result in the same transaction. The edit's ``BalanceEdit/expected`` balance is
    /// checked against the wallet inside that transaction.
    ///
    /// - Throws: ``StoreError/notFound(_:)`` for an unknown or merged user; ``BalanceChanged`` when the wallet is
    ///   not at the balance support saw; ``LedgerError`` when the ledger refuses. Nothing changes when it throws.
    func setBalance(_ edit: BalanceEdit, audit: @escaping @Sendable (BalanceEditResult) throws -> [AuditEvent])
        async throws -> BalanceEditResult

    // MARK: Grants

    /// Adds a grant with the audit entries that record it, in one transaction (an entry whose id is taken is
    /// written under an id of its own). Throws ``StoreError/alreadyExists(_:)`` for a grant id taken.
    func createGrant(_ grant: Grant, audit: [AuditEvent]) async throws
    /// The grant with this id in an environment.
    func grant(id: UUID, environment: AppStoreEnvironment) async throws -> Grant?
    /// Grants of an environment, newest first, optionally for one recipient and one status.
    func grants(environment: AppStoreEnvironment, recipient: UUID?, status: GrantStatus?, limit: Int) async throws
        -> [Grant]
    /// The credits of the grants one admin made at or after `since` and did not see cancelled: those whose
    /// `createdBy` is `holder` or starts with `holder from ` (the panel and the admin API add the address).
    func grantedCredits(environment: AppStoreEnvironment, holder: String, since: Date) async throws -> Int64
    /// Claims a grant as `claim` says (``Grant/claim(by:crediting:at:)``), in one transaction that holds the
    /// grant: `claim` is given the grant on file and answers it claimed, with the ledger request that credits
    /// it (applied in the same commit), or `nil` to leave it. Callers use
    /// ``claimGrant(id:recipient:environment:crediting:at:)``.
    ///
    /// - Returns: The grant as it is after.
    /// - Throws: ``StoreError/notFound(_:)``, or what `claim` throws.
    func claimGrant(
        id: UUID, environment: AppStoreEnvironment, _ claim: @escaping @Sendable (Grant) throws -> GrantClaim?
    )
        async throws -> Grant
    /// Cancels a grant as `cancel` says (``Grant/cancel(by:at:)``), in one transaction that holds the grant, so
    /// a claim and a cancellation never both happen: `cancel` is given the grant on file and answers it
    /// cancelled, or `nil` to leave it.
    ///
    /// - Returns: The grant as it is after.
    /// - Throws: ``StoreError/notFound(_:)``.
    func cancelGrant(id: UUID, environment: AppStoreEnvironment, _ cancel: @escaping @Sendable (Grant) -> Grant?)
        async throws -> Grant

    // MARK: Notifications

    /// Records a notification unless one with its `notificationUUID` is recorded in its environment.
    ///
    /// - Returns: `true` when recorded, `false` when it was already there (nothing changed).
    func recordNotification(_ record: NotificationRecord) async throws -> Bool
    /// The notification with this `notificationUUID`.
    func notification(uuid: String, environment: AppStoreEnvironment) async throws -> NotificationRecord?
    /// Notifications of an environment, latest received first, optionally about one transaction
    /// (matching `transactionId` or `originalTransactionId`) or with one outcome.
    func notifications(
        environment: AppStoreEnvironment, transactionId: String?, outcome: NotificationOutcome?, limit: Int
    ) async throws -> [NotificationRecord]
    /// How many notifications of each type an environment received at or after `since`.
    func notificationCounts(environment: AppStoreEnvironment, since: Date) async throws -> [String: Int]
    /// Saves a subscription chain's renewal state unless the stored one was signed later.
    ///
    /// - Returns: `true` when saved.
    func saveRenewalState(_ state: RenewalState) async throws -> Bool
    /// The renewal states of a user's subscription chains.
    func renewalStates(owner: UUID, environment: AppStoreEnvironment) async throws -> [RenewalState]
    /// A named position of a background service (the notification recovery cursor, say).
    func cursor(_ name: String, environment: AppStoreEnvironment) async throws -> String?
    /// Saves a named position.
    func saveCursor(_ name: String, value: String, environment: AppStoreEnvironment) async throws

    // MARK: Audit

    /// Appends an audit event.
    func recordAudit(_ event: AuditEvent) async throws
    /// Audit events of an environment that `query` matches (``AuditQuery/matches(_:)``), newest first.
    func auditEvents(environment: AppStoreEnvironment, query: AuditQuery, limit: Int) async throws -> [AuditEvent]

    // MARK: Support

    /// The backups a user's devices and admins wrote, newest first.
    func backupHistory(owner: UUID, environment: AppStoreEnvironment, limit: Int) async throws -> [BackupHistoryItem]
    /// The dashboard's figures: totals, and purchases and refunds per UTC day over the `days` days ending
    /// with the day of `now`.
    func dashboard(environment: AppStoreEnvironment, days: Int, now: Date) async throws -> DashboardFigures
    /// Deletes every grant of an environment (ledger entries of claimed grants stay).
    ///
    /// - Returns: How many were deleted.
    func deleteGrants(environment: AppStoreEnvironment) async throws -> Int
    /// The grants of an environment to its Sandbox-marked users (as ``sandboxMarkedUsers(environment:supportIdPrefix:limit:offset:)``
    /// says), newest first, optionally of one status.
    func sandboxMarkedGrants(environment: AppStoreEnvironment, status: GrantStatus?, limit: Int) async throws
        -> [Grant]
    /// Deletes the grants of an environment to its Sandbox-marked users: the test grants of a Production server
    /// (ledger entries of claimed grants stay).
    ///
    /// - Returns: How many were deleted.
    func deleteSandboxMarkedGrants(environment: AppStoreEnvironment) async throws -> Int

    // MARK: Admins

    /// Adds an admin; ``StoreError/alreadyExists(_:)`` when the name is taken.
    func createAdmin(_ admin: Admin) async throws
    /// The admin with this name.
    func admin(name: String) async throws -> Admin?
    /// Every admin, by name.
    func admins() async throws -> [Admin]
    /// Sets an admin's password hash and ends the admin's sessions.
    ///
    /// - Returns: `false` when there is no such admin.
    func setAdminPassword(name: String, passwordHash: String, at: Date) async throws -> Bool
    /// Changes an admin as `change` says (``Admin/using(step:)``, a role, two-factor on or off, disabled or not),
    /// in one transaction that holds the admin: `change` is given the admin on file and answers the admin changed,
    /// or `nil` to leave it. The name, id, password and creation date stay. An admin disabled after the change has
    /// no session left.
    ///
    /// - Returns: The admin as changed, or `nil` when there is no such admin or `change` left it.
    func updateAdmin(name: String, _ change: @escaping @Sendable (Admin) -> Admin?) async throws -> Admin?
    /// Ends an admin's sessions but the one `kept` (after two-factor is turned on, every other session must sign
    /// in with a code).
    ///
    /// - Returns: How many ended.
    func deleteSessions(adminId: UUID, except kept: String?) async throws -> Int
    /// Stores a new session.
    func createSession(_ session: AdminSession) async throws
    /// The session with this token hash, expired or not.
    func session(tokenHash: String) async throws -> AdminSession?
    /// Switches a session's environment.
    func setSessionEnvironment(tokenHash: String, environment: AppStoreEnvironment) async throws
    /// Ends a session.
    func deleteSession(tokenHash: String) async throws
    /// Ends sessions that expired before `date`.
    ///
    /// - Returns: How many were removed.
    func deleteSessions(expiredBefore date: Date) async throws -> Int
    /// Adds a request-signing key; ``StoreError/alreadyExists(_:)`` when the id is taken.
    func createAdminKey(_ key: AdminKey) async throws
    /// The key with this id, revoked or not.
    func adminKey(id: String) async throws -> AdminKey?
    /// Every key, oldest first.
    func adminKeys() async throws -> [AdminKey]
    /// Revokes a key.
    ///
    /// - Returns: `false` when there is no such key or it was revoked already.
    func revokeAdminKey(id: String, at: Date) async throws -> Bool
    /// Counts a failure against something an attacker guesses at (an admin's password from one address, an
    /// admin's two-factor codes from anywhere), shared by every instance on the database. Failures of any key
    /// older than a day are forgotten on the way.
    ///
    /// - Returns: The failures of `key` at or after `since`, this one included.
    func recordFailure(_ key: String, at date: Date, since: Date) async throws -> Int
    /// The failures of `key` at or after `since`.
    func failures(_ key: String, since: Date) async throws -> Int
    /// Forgets the failures of `key` (a right password from that address).
    func clearFailures(_ key: String) async throws

    /// Remembers a signed request's signature so it is accepted once, across every server on the database,
    /// and forgets signatures seen before `forgetBefore` (older requests are refused by their date).
    ///
    /// - Returns: `false` when the signature was seen before.
    func recordSignature(_ digest: String, at: Date, forgetBefore: Date) async throws -> Bool
}

extension CofferStore {
    /// Merges users with no audit entry in the same transaction (tests, tools).
    public func mergeUser(_ merge: UserMerge) async throws -> UserMergeResult {
        try await mergeUser(merge) { _ in [] }
    }

    /// Deletes a customer with no audit entry in the same transaction (tests, tools).
    public func deleteUser(_ deletion: UserDeletion) async throws -> UserDeletionResult {
        try await deleteUser(deletion) { _ in [] }
    }

    /// Adds a grant with no audit entry (tests, the import, which audits per customer).
    public func createGrant(_ grant: Grant) async throws {
        try await createGrant(grant, audit: [])
    }

    /// Gives a user the token of an install that registered itself (``TokenOrigin/device``).
    public func addToken(tokenHash: String, owner: UUID, at date: Date) async throws {
        try await addToken(tokenHash: tokenHash, owner: owner, origin: .device, at: date)
    }

    /// Applies one ledger request in its own commit.
    ///
    /// - Returns: The result once durable.
    /// - Throws: ``LedgerError`` when the ledger refuses it, or a storage failure.
    public func apply(_ request: LedgerRequest) async throws -> LedgerResult {
        let results = try await apply([request])
        guard let result = results.first else { throw StoreError.storage("no result for the request") }
        return try result.get()
    }
}

extension CofferStore {
    /// Writes a user's backup if `precondition` holds (``BackupPrecondition/write(over:value:deficit:writer:at:applied:)``); the
    /// version goes up by one on every write.
    ///
    /// - Throws: ``StoreError/notFound(_:)`` for an unknown user.
    public func saveBackup(
        owner: UUID, environment: AppStoreEnvironment, value: Int64, deficit: Int64 = 0,
        precondition: BackupPrecondition,
        writer: BackupWriter, at: Date, applied: [String]? = nil,
        audit: @escaping @Sendable (BackupRecord?, BackupRecord) throws -> [AuditEvent] = { _, _ in [] }
    ) async throws -> BackupSaveResult {
        let (current, written) = try await writeBackup(
            owner: owner, environment: environment,
            { current in
                precondition.write(
                    over: current, value: value, deficit: deficit, writer: writer, at: at, applied: applied)
            },
            audit: audit)
        return written.map(BackupSaveResult.saved) ?? .conflict(current: current)
    }

    /// Writes a user's backup as `decide` says, with no audit entry.
    public func writeBackup(
        owner: UUID, environment: AppStoreEnvironment, _ decide: @escaping @Sendable (BackupRecord?) -> BackupRecord?
    ) async throws -> (current: BackupRecord?, written: BackupRecord?) {
        try await writeBackup(owner: owner, environment: environment, decide) { _, _ in [] }
    }

    /// Marks a grant claimed by its recipient; claiming again returns it unchanged. With a `policy`, the
    /// grant's credits are applied to the ledger (`grant:<id>`) in the same commit (server wallet).
    ///
    /// - Throws: ``StoreError/notFound(_:)``, ``StoreError/wrongUser(_:)``, or ``StoreError/cancelled(_:)`` for a
    ///   grant support cancelled.
    public func claimGrant(
        id: UUID, recipient: UUID, environment: AppStoreEnvironment, crediting policy: DeficitPolicy?, at: Date
    ) async throws -> Grant {
        try await claimGrant(id: id, environment: environment) { grant in
            try grant.claim(by: recipient, crediting: policy, at: at)
        }
    }

    /// Audit events of an environment, newest first; with a `subject`, only those about it.
    public func auditEvents(environment: AppStoreEnvironment, subject: String?, limit: Int) async throws -> [AuditEvent]
    {
        try await auditEvents(environment: environment, query: AuditQuery(subject: subject), limit: limit)
    }

    /// Sets the time zone an admin's pages show beside UTC; `nil` for UTC only.
    ///
    /// - Returns: `false` when there is no such admin.
    public func setAdminTimeZone(name: String, timeZone: String?) async throws -> Bool {
        try await updateAdmin(name: name) { admin in
            var changed = admin
            changed.timeZone = timeZone
            return changed
        } != nil
    }

    /// Cancels a pending grant; a claimed one, or one cancelled before, is returned unchanged.
    ///
    /// - Throws: ``StoreError/notFound(_:)``.
    public func cancelGrant(id: UUID, environment: AppStoreEnvironment, by actor: String, at: Date) async throws
        -> Grant
    {
        try await cancelGrant(id: id, environment: environment) { $0.cancel(by: actor, at: at) }
    }

    /// A user's entitlements now, by the core's rules: computed from the receipts of products that can unlock
    /// something (so the cost does not grow with consumable purchases) and the grace periods of their chains.
    public func entitlements(of user: User, catalog: Catalog, at now: Date) async throws -> [String] {
        try await entitlementState(of: user, catalog: catalog, at: now).names
    }

    /// A user's entitlements now with the paid periods counted per subscription group (what loyalty lifetimes
    /// are earned by), by the core's rules.
    public func entitlementState(of user: User, catalog: Catalog, at now: Date) async throws -> EntitlementState {
        let products = Set(catalog.products.filter { $0.kind != .consumable }.map(\.id))
        guard !products.isEmpty else { return EntitlementState() }
        let receipts = try await receipts(owner: user.id, environment: user.environment, productIds: products)
        var grace: [String: Date] = [:]
        if catalog.products.contains(where: { $0.kind == .autoRenewable }) {
            for state in try await renewalStates(owner: user.id, environment: user.environment) {
                grace[state.originalTransactionId] = state.gracePeriodExpiresDate
            }
        }
        return Entitlements.evaluate(receipts.map(\.transaction), catalog: catalog, gracePeriods: grace, at: now)
    }
}
