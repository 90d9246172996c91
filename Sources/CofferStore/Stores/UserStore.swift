import CofferCore
import Foundation

/// The customers: users and their tokens, merges and deletions, Verify Purchases reports, push tokens,
/// milestones and customers imported from another system.
public protocol UserStore: Sendable {
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
    /// The users of `ids` there are, in one read (a list's recipients: at most 1,000), in no order.
    func users(ids: Set<UUID>) async throws -> [User]
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
}

extension UserStore {
    /// Merges users with no audit entry in the same transaction (tests, tools).
    public func mergeUser(_ merge: UserMerge) async throws -> UserMergeResult {
        try await mergeUser(merge) { _ in [] }
    }

    /// Deletes a customer with no audit entry in the same transaction (tests, tools).
    public func deleteUser(_ deletion: UserDeletion) async throws -> UserDeletionResult {
        try await deleteUser(deletion) { _ in [] }
    }

    /// Gives a user the token of an install that registered itself (``TokenOrigin/device``).
    public func addToken(tokenHash: String, owner: UUID, at date: Date) async throws {
        try await addToken(tokenHash: tokenHash, owner: owner, origin: .device, at: date)
    }
}
