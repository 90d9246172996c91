import CofferCore
import Foundation

/// Support deleting a customer at their request (App Store guideline 5.1.1(v)), with the installs support
/// merged into them (``UserStore/deleteUser(_:)``).
public struct UserDeletion: Sendable, Hashable {
    /// The customer.
    public var user: UUID
    /// Their environment.
    public var environment: AppStoreEnvironment
    /// The admin, for the grants it cancels.
    public var actor: String
    /// When.
    public var at: Date

    /// Creates a deletion.
    public init(user: UUID, environment: AppStoreEnvironment, actor: String, at: Date) {
        self.user = user
        self.environment = environment
        self.actor = actor
        self.at = at
    }

    /// The text that replaces every free-text reason on the customer's grants and ledger entries.
    public static let removedReason = "removed at the customer's request"
    /// The reason of the entry that closes the wallet.
    public static let closingReason = "customer deleted at their request"
    /// The id of the adjustment that closes the wallet (`adjustment:customer-deleted`).
    public static let closingId = "customer-deleted"

    /// An audit event's JSON with its `reason` replaced by ``removedReason``; anything else unchanged.
    public static func anonymised(_ json: String?) -> String? {
        guard let json, var object = try? JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any],
            object["reason"] != nil
        else { return json }
        object["reason"] = removedReason
        guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]) else {
            return json
        }
        return String(decoding: data, as: UTF8.self)
    }

    /// What closing a wallet writes to the ledger: an entry taking the balance and the deficit to zero, so
    /// the entries still sum to the wallet; `nil` for an empty wallet.
    public static func closing(owner: UUID, wallet: Wallet, at: Date) throws -> LedgerDecision? {
        guard wallet != .empty else { return nil }
        return try Ledger.decide(
            .restore(id: closingId, wallet: .empty, reason: closingReason), owner: owner, wallet: wallet,
            receipt: nil, existing: nil, policy: .collect, at: at)
    }
}

/// What deleting a customer did.
public struct UserDeletionResult: Sendable, Hashable, Codable {
    /// The balance and deficit the closing entry took to zero.
    public var closed: Wallet
    /// User records anonymised: the customer and the installs merged into them.
    public var users: Int
    /// Pending grants cancelled.
    public var cancelledGrants: Int

    /// Creates the result.
    public init(closed: Wallet, users: Int, cancelledGrants: Int) {
        self.closed = closed
        self.users = users
        self.cancelledGrants = cancelledGrants
    }
}

/// What a merge finds inside its transaction before it writes anything: the engine reads it (locking the
/// wallets) and ``UserMerge/plan(_:audit:)`` decides.
public struct UserMergeState: Sendable {
    /// The anonymous user, as stored.
    public var from: User?
    /// The account user, as stored.
    public var into: User?
    /// The anonymous user's wallet (empty for a user with no entries).
    public var fromWallet: Wallet
    /// The account user's wallet.
    public var intoWallet: Wallet
    /// The balance the anonymous install last backed up.
    public var backup: Int64?
    /// The anonymous user's live tokens.
    public var tokens: TokenCounts
    /// The anonymous user's receipts in the environment.
    public var receipts: Int
    /// The grants to the anonymous user.
    public var grants: Int
    /// The two users' wallets of the currencies other than the default (``LedgerStore/currencyWallets(owner:environment:)``).
    public var currencyWallets: (from: [Currency: Wallet], into: [Currency: Wallet]) = ([:], [:])
    /// The other currencies the anonymous install last backed up (``BackupRecord/currencies``): what moves of each in
    /// the device wallet.
    public var backupCurrencies: [Currency: Wallet] = [:]

    /// Creates the state.
    public init(
        from: User?, into: User?, fromWallet: Wallet, intoWallet: Wallet, backup: Int64?, tokens: TokenCounts,
        receipts: Int, grants: Int
    ) {
        self.from = from
        self.into = into
        self.fromWallet = fromWallet
        self.intoWallet = intoWallet
        self.backup = backup
        self.tokens = tokens
        self.receipts = receipts
        self.grants = grants
    }
}

/// What a merge writes, decided once for every engine.
public struct UserMergePlan: Sendable {
    /// The ledger's decision for the anonymous user's wallet.
    public var from: LedgerDecision
    /// The ledger's decision for the account user's wallet.
    public var into: LedgerDecision
    /// The ledger's decisions for the two users' wallets of each other currency the anonymous user holds (the
    /// server's ledger of it moves whole), in the currencies' order.
    public var otherCurrencies: [(currency: Currency, from: LedgerDecision, into: LedgerDecision)] = []
    /// What the merge moved.
    public var result: UserMergeResult
    /// The audit entries that record it, written in the same transaction.
    public var audit: [AuditEvent]
}

extension UserMerge {
    /// Decides a merge from what its transaction found: a customer missing from the environment or deleted is
    /// not found, one merged already is not merged again, and the wallet that moves is the ledger's or, for the
    /// device wallet, the last backup's balance with the ledger's deficit.
    ///
    /// - Throws: ``StoreError/notFound(_:)``, ``StoreError/alreadyExists(_:)``, a ``LedgerError``, or what `audit`
    ///   throws; the engine then writes nothing.
    public func plan(_ state: UserMergeState, audit: (UserMergeResult) throws -> [AuditEvent]) throws
        -> UserMergePlan
    {
        guard let from = state.from, from.environment == environment, let into = state.into,
            into.environment == environment
        else { throw StoreError.notFound("user") }
        guard from.mergedInto == nil else { throw StoreError.alreadyExists("merge of \(from.supportId)") }
        guard from.isLive, into.isOwnCustomer else {
            throw StoreError.notFound("user")
        }
        let moving =
            movesBackup ? Wallet(balance: state.backup ?? 0, deficit: state.fromWallet.deficit) : state.fromWallet
        let decisions = try Ledger.merge(
            from: from.id, fromSupportId: from.supportId, fromWallet: state.fromWallet, into: into.id,
            intoWallet: state.intoWallet, moving: moving, at: at)
        let result = UserMergeResult(
            moved: moving, wallet: decisions.into.wallet, receipts: state.receipts, grants: state.grants,
            tokensMoved: movesTokens ? state.tokens.devices : 0, claimTokensEnded: state.tokens.claims,
            tokensEnded: movesTokens ? 0 : state.tokens.devices)
        var plan = UserMergePlan(from: decisions.from, into: decisions.into, result: result, audit: try audit(result))
        // Each other currency likewise: the ledger's wallet, or in the device wallet the backup's balance with the
        // ledger's deficit (the app spends and earns on the device; the server's ledger sees purchases and refunds).
        var currencies = Set(state.currencyWallets.from.keys)
        if movesBackup { currencies.formUnion(state.backupCurrencies.keys) }
        for currency in currencies.sorted() {
            let wallet = state.currencyWallets.from[currency] ?? .empty
            let moving =
                movesBackup
                ? Wallet(balance: state.backupCurrencies[currency]?.balance ?? 0, deficit: wallet.deficit) : wallet
            guard wallet != .empty || moving != .empty else { continue }
            var moved = try Ledger.merge(
                from: from.id, fromSupportId: from.supportId, fromWallet: wallet, into: into.id,
                intoWallet: state.currencyWallets.into[currency] ?? .empty, moving: moving, at: at)
            moved.from.entry?.currency = currency
            moved.into.entry?.currency = currency
            plan.otherCurrencies.append((currency, moved.from, moved.into))
        }
        return plan
    }
}

/// What a deletion finds inside its transaction before it writes anything: the engine reads it (locking the
/// wallet) and ``UserDeletion/plan(_:audit:)`` decides.
public struct UserDeletionState: Sendable {
    /// The customer, as stored.
    public var user: User?
    /// Their wallet.
    public var wallet: Wallet?
    /// The installs support merged into them.
    public var merged: [UUID]
    /// Their pending grants (the customer's and the merged installs').
    public var pendingGrants: Int
    /// Their wallets of the currencies other than the default.
    public var currencyWallets: [Currency: Wallet] = [:]

    /// Creates the state.
    public init(user: User?, wallet: Wallet?, merged: [UUID], pendingGrants: Int) {
        self.user = user
        self.wallet = wallet
        self.merged = merged
        self.pendingGrants = pendingGrants
    }
}

/// What a deletion writes, decided once for every engine.
public struct UserDeletionPlan: Sendable {
    /// The customer and the installs merged into them: every record the deletion anonymises.
    public var owners: [UUID]
    /// The entry that closes the wallet (`nil` for an empty one).
    public var closing: LedgerDecision?
    /// The entries that close the wallets of the other currencies that are not empty, in the currencies' order.
    public var closingCurrencies: [(currency: Currency, decision: LedgerDecision)] = []
    /// What the deletion did.
    public var result: UserDeletionResult
    /// The audit entries that record it, written in the same transaction.
    public var audit: [AuditEvent]
}

extension UserDeletion {
    /// Decides a deletion from what its transaction found: a customer missing from the environment, or merged
    /// into another (delete that one), is not found; one deleted already is not deleted again.
    ///
    /// - Throws: ``StoreError/notFound(_:)``, ``StoreError/alreadyExists(_:)``, a ``LedgerError``, or what `audit`
    ///   throws; the engine then writes nothing.
    public func plan(_ state: UserDeletionState, audit: (UserDeletionResult) throws -> [AuditEvent]) throws
        -> UserDeletionPlan
    {
        guard let user = state.user, user.environment == environment, user.mergedInto == nil,
            let wallet = state.wallet
        else { throw StoreError.notFound("user") }
        guard user.isLive else { throw StoreError.alreadyExists("deletion of \(user.supportId)") }
        let closing = try Self.closing(owner: user.id, wallet: wallet, at: at)
        let result = UserDeletionResult(
            closed: wallet, users: 1 + state.merged.count, cancelledGrants: state.pendingGrants)
        var plan = UserDeletionPlan(
            owners: [user.id] + state.merged, closing: closing, result: result, audit: try audit(result))
        for (currency, wallet) in state.currencyWallets.sorted(by: { $0.key < $1.key }) {
            guard var decision = try Self.closing(owner: user.id, wallet: wallet, at: at) else { continue }
            decision.entry?.currency = currency
            plan.closingCurrencies.append((currency, decision))
        }
        return plan
    }
}
