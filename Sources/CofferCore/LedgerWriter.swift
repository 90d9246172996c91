import Foundation

/// One change to apply to a user's wallet.
public struct LedgerRequest: Sendable, Hashable {
    /// The user.
    public var owner: UUID
    /// The environment the change belongs to; it must be the user's.
    public var environment: AppStoreEnvironment
    /// The change.
    public var event: LedgerEvent
    /// The app's deficit policy.
    public var policy: DeficitPolicy
    /// When it happens.
    public var at: Date
    /// When set, the result carries the user's entitlements once the request's batch is written, by this catalog
    /// at `at` (``LedgerResult/entitlements``), read in the batch's own write transaction: an answer that shows them
    /// needs no read of its own. A refused request carries none.
    public var entitlementCatalog: Catalog?
    /// The currency whose ledger the change is in; `nil` for the default currency (the catalog's first, or its
    /// only one), whose ledger is the one Coffer kept before it had several. Never the default currency's own id:
    /// each other currency is a ledger of its own (its wallet, its receipts, its entries), so exactly once,
    /// refunds and the deficit hold per currency by the same rules.
    public var currency: Currency?
    /// For a grant or a period's allowance: when its credits end. What it brings to the balance becomes a lot
    /// (``CreditLot``), spent before credits that do not expire, and what is left of it at this time leaves the
    /// balance by an entry of its own (`expiry:<grant id>`, `expiry:allowance:<transaction id>`). `nil`: the credits
    /// never expire (purchased credits never do).
    public var expiresAt: Date?

    /// Creates a request.
    public init(
        owner: UUID, environment: AppStoreEnvironment, event: LedgerEvent, policy: DeficitPolicy = .collect, at: Date,
        entitlementCatalog: Catalog? = nil, currency: Currency? = nil, expiresAt: Date? = nil
    ) {
        self.expiresAt = expiresAt
        self.owner = owner
        self.environment = environment
        self.event = event
        self.policy = policy
        self.at = at
        self.entitlementCatalog = entitlementCatalog
        self.currency = currency
    }
}

/// What applying a ``LedgerRequest`` did, once it is durable.
public struct LedgerResult: Sendable, Hashable {
    /// What the event did.
    public var outcome: LedgerOutcome
    /// The user's wallet of the request's currency after the event.
    public var wallet: Wallet
    /// The entry applied, or for a duplicate the one already on record (when the key has one).
    public var entry: LedgerEntry?
    /// The transaction's receipt after the event, for transaction events.
    public var receipt: Receipt?
    /// The user's entitlements once the request's batch is written, when the request named a catalog
    /// (``LedgerRequest/entitlementCatalog``); the same as a read of them after the commit would give.
    public var entitlements: EntitlementState?

    /// Creates a result.
    public init(
        outcome: LedgerOutcome, wallet: Wallet, entry: LedgerEntry?, receipt: Receipt?,
        entitlements: EntitlementState? = nil
    ) {
        self.outcome = outcome
        self.wallet = wallet
        self.entry = entry
        self.receipt = receipt
        self.entitlements = entitlements
    }
}

/// The read and write steps a store engine offers inside one of its write transactions, so the ledger's
/// load-decide-save sequence is written once for every engine.
/// Each step names the currency whose ledger it reads or writes (`nil`: the default currency's).
public protocol LedgerWriteContext {
    /// The user's current wallet of a currency, or `nil` when no such user lives in `environment`.
    mutating func wallet(owner: UUID, environment: AppStoreEnvironment, currency: Currency?) throws -> Wallet?
    /// The receipt of a transaction in a currency's ledger, any owner.
    mutating func receipt(transactionId: String, environment: AppStoreEnvironment, currency: Currency?) throws
        -> Receipt?
    /// The user's entry under a key in a currency's ledger.
    mutating func entry(owner: UUID, environment: AppStoreEnvironment, key: IdempotencyKey, currency: Currency?)
        throws -> LedgerEntry?
    /// Saves a decision in a currency's ledger: the wallet, the receipt if any, and the new entry.
    mutating func save(
        _ decision: LedgerDecision, owner: UUID, environment: AppStoreEnvironment, currency: Currency?) throws
}

/// The read and write steps of an engine whose database calls are asynchronous (PostgreSQL), inside
/// one of its write transactions: the state a request needs, read at once, and the decision saved.
/// Each step names the currency whose ledger it reads or writes (`nil`: the default currency's).
public protocol AsyncLedgerWriteContext {
    /// The user's wallet of a currency (locked for the rest of the transaction), the receipt of `transactionId`
    /// (any owner) and the user's entry under `key` in that currency's ledger; `nil` when no such user lives in
    /// `environment`.
    func load(
        owner: UUID, environment: AppStoreEnvironment, transactionId: String?, key: IdempotencyKey,
        currency: Currency?
    ) async throws -> (wallet: Wallet, receipt: Receipt?, existing: LedgerEntry?)?
    /// Saves a decision in a currency's ledger: the wallet, the receipt if any, and the new entry.
    func save(_ decision: LedgerDecision, owner: UUID, environment: AppStoreEnvironment, currency: Currency?)
        async throws
}

/// Applies ledger requests through an engine's write context: load what the request needs, decide with
/// ``Ledger/decide(_:owner:wallet:receipt:existing:policy:at:)``, save the decision. Call inside the
/// engine's write transaction.
public enum LedgerWriter {
    /// Applies a request through a synchronous context (SQLite, in memory).
    ///
    /// - Returns: The result, or the ledger's refusal (nothing saved then).
    /// - Throws: Storage failures from the context.
    public static func apply(
        _ request: LedgerRequest,
        in context: inout some LedgerWriteContext
    ) throws -> Result<LedgerResult, LedgerError> {
        let (owner, environment, currency) = (request.owner, request.environment, request.currency)
        guard let wallet = try context.wallet(owner: owner, environment: environment, currency: currency) else {
            return .failure(.unknownUser(owner))
        }
        let receipt = try request.event.transaction.flatMap {
            try context.receipt(transactionId: $0.transactionId, environment: environment, currency: currency)
        }
        let existing = try context.entry(
            owner: owner, environment: environment, key: request.event.key, currency: currency)
        let (result, save) = decide(request, wallet: wallet, receipt: receipt, existing: existing)
        if let save { try context.save(save, owner: owner, environment: environment, currency: currency) }
        return result
    }

    /// Applies a request through an asynchronous context (PostgreSQL).
    ///
    /// - Returns: The result, or the ledger's refusal (nothing saved then).
    /// - Throws: Storage failures from the context.
    public static func apply(
        _ request: LedgerRequest,
        in context: some AsyncLedgerWriteContext
    ) async throws -> Result<LedgerResult, LedgerError> {
        let (owner, environment, currency) = (request.owner, request.environment, request.currency)
        guard
            let (wallet, receipt, existing) = try await context.load(
                owner: owner, environment: environment, transactionId: request.event.transaction?.transactionId,
                key: request.event.key, currency: currency)
        else { return .failure(.unknownUser(owner)) }
        let (result, save) = decide(request, wallet: wallet, receipt: receipt, existing: existing)
        if let save { try await context.save(save, owner: owner, environment: environment, currency: currency) }
        return result
    }

    /// What one request needs from the store, read before the batch is decided (``decide(batch:states:)``).
    public struct State: Sendable, Hashable {
        /// The user's wallet, locked for the rest of the transaction.
        public var wallet: Wallet
        /// The receipt of the request's transaction (any owner).
        public var receipt: Receipt?
        /// The user's entry under the request's key.
        public var existing: LedgerEntry?

        /// The state of one request.
        public init(wallet: Wallet, receipt: Receipt?, existing: LedgerEntry?) {
            self.wallet = wallet
            self.receipt = receipt
            self.existing = existing
        }
    }

    /// What a decided batch writes, each row once: the wallets as they end, each transaction's receipt as it
    /// ends, and the new entries in order, each in its currency's ledger (`nil`: the default currency's; an entry
    /// says its own, ``LedgerEntry/currency``).
    public struct BatchWrite: Sendable {
        /// Each changed wallet as it ends, by owner and currency, in the order the batch first changed it.
        public var wallets: [(owner: UUID, currency: Currency?, wallet: Wallet)] {
            walletOrder.compactMap { key in finalWallets[key].map { (key.owner, key.currency, $0) } }
        }
        /// Each written receipt as it ends, with its environment and currency, in the order the batch first wrote it.
        public var receipts: [(environment: AppStoreEnvironment, currency: Currency?, receipt: Receipt)] {
            receiptOrder.compactMap { key in finalReceipts[key].map { (key.environment, key.currency, $0) } }
        }
        /// The new entries, with their environment, in the order they were decided.
        public private(set) var entries: [(environment: AppStoreEnvironment, entry: LedgerEntry)] = []
        /// Whether anything is written in a currency other than the default.
        public var hasOtherCurrencies: Bool {
            walletOrder.contains { $0.currency != nil } || receiptOrder.contains { $0.currency != nil }
                || entries.contains { $0.entry.currency != nil }
        }

        struct WalletKey: Hashable {
            var owner: UUID
            var currency: Currency?
        }
        var finalWallets: [WalletKey: Wallet] = [:]
        var walletOrder: [WalletKey] = []
        var finalReceipts: [TransactionKey: Receipt] = [:]
        var receiptOrder: [TransactionKey] = []

        /// Whether nothing is to be written.
        public var isEmpty: Bool { walletOrder.isEmpty && receiptOrder.isEmpty && entries.isEmpty }

        mutating func record(
            _ decision: LedgerDecision, owner: UUID, environment: AppStoreEnvironment, currency: Currency?
        ) {
            let walletKey = WalletKey(owner: owner, currency: currency)
            if finalWallets.updateValue(decision.wallet, forKey: walletKey) == nil { walletOrder.append(walletKey) }
            if let receipt = decision.receipt {
                let key = TransactionKey(
                    environment: environment, transactionId: receipt.transaction.transactionId, currency: currency)
                if finalReceipts.updateValue(receipt, forKey: key) == nil { receiptOrder.append(key) }
            }
            if decision.appendsEntry, let entry = decision.entry { entries.append((environment, entry)) }
        }
    }

    /// A transaction in an environment, in one currency's ledger.
    struct TransactionKey: Hashable, Sendable {
        var environment: AppStoreEnvironment
        var transactionId: String
        var currency: Currency?
    }

    /// Decides a batch of requests from the state each needed as it stood before the batch (read at once by an
    /// engine for whom each read is a round trip: PostgreSQL), in order, exactly as applying them one after
    /// another would: a request sees what the requests before it in the batch did to its wallet, its
    /// transaction's receipt and its key.
    ///
    /// - Parameters:
    ///   - requests: The batch, in the order it applies.
    ///   - states: Each request's state before the batch; `nil` where its user does not live in its environment.
    /// - Returns: Each request's result, and what to write.
    public static func decide(batch requests: [LedgerRequest], states: [State?]) -> (
        results: [Result<LedgerResult, LedgerError>], write: BatchWrite
    ) {
        struct EntryKey: Hashable {
            var owner: UUID
            var environment: AppStoreEnvironment
            var key: IdempotencyKey
            var currency: Currency?
        }
        typealias WalletKey = BatchWrite.WalletKey
        var write = BatchWrite()
        var wallets: [WalletKey: Wallet] = [:]
        var receipts: [TransactionKey: Receipt] = [:]
        var entries: [EntryKey: LedgerEntry] = [:]
        var results: [Result<LedgerResult, LedgerError>] = []
        results.reserveCapacity(requests.count)
        for (request, state) in zip(requests, states) {
            guard let state else {
                results.append(.failure(.unknownUser(request.owner)))
                continue
            }
            let transaction = request.event.transaction.map {
                TransactionKey(
                    environment: request.environment, transactionId: $0.transactionId, currency: request.currency)
            }
            let walletKey = WalletKey(owner: request.owner, currency: request.currency)
            let entryKey = EntryKey(
                owner: request.owner, environment: request.environment, key: request.event.key,
                currency: request.currency)
            let receipt = transaction.flatMap { receipts[$0] } ?? state.receipt
            let (result, save) = decide(
                request, wallet: wallets[walletKey] ?? state.wallet, receipt: receipt,
                existing: entries[entryKey] ?? state.existing)
            results.append(result)
            guard let save else { continue }
            write.record(save, owner: request.owner, environment: request.environment, currency: request.currency)
            wallets[walletKey] = save.wallet
            if let saved = save.receipt, let transaction { receipts[transaction] = saved }
            // Found again by its own key, as a store finds it (a purchase signed refunded writes its revocation).
            if save.appendsEntry, let entry = save.entry {
                let key = EntryKey(
                    owner: request.owner, environment: request.environment, key: entry.key, currency: request.currency)
                entries[key] = entry
            }
        }
        return (results, write)
    }

    /// The decision for a request given the state it needs, and what (if anything) to save.
    private static func decide(
        _ request: LedgerRequest, wallet: Wallet, receipt: Receipt?, existing: LedgerEntry?
    ) -> (Result<LedgerResult, LedgerError>, save: LedgerDecision?) {
        var decision: LedgerDecision
        do {
            decision = try Ledger.decide(
                request.event, owner: request.owner, wallet: wallet, receipt: receipt, existing: existing,
                policy: request.policy, at: request.at)
        } catch {
            return (.failure(error), nil)
        }
        if decision.appendsEntry { decision.entry?.currency = request.currency }
        let result = LedgerResult(
            outcome: decision.outcome, wallet: decision.wallet, entry: decision.entry ?? existing,
            receipt: decision.receipt ?? receipt)
        return (.success(result), decision.appendsEntry || decision.receipt != nil ? decision : nil)
    }
}

/// Failures of the store itself, apart from ledger rules.
public enum StoreError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A record with this identity exists already (a Support ID collision, say).
    case alreadyExists(String)
    /// No such record in this environment.
    case notFound(String)
    /// The record belongs to another user.
    case wrongUser(String)
    /// The database refused or failed; the operation changed nothing.
    case storage(String)
    /// The record was cancelled (a grant support took back before the app claimed it).
    case cancelled(String)
    /// The database did not answer within its deadline, lost its connection, or could not write now (a full
    /// disk, an I/O error): nothing uncommitted was kept, and the same request again is safe (a change whose
    /// commit was under way may have landed: asking again answers it as a duplicate).
    case unavailable(String)

    /// A one-line, human-readable explanation.
    public var description: String {
        switch self {
        case .alreadyExists(let what): "already exists: \(what)"
        case .notFound(let what): "not found: \(what)"
        case .wrongUser(let what): "belongs to another user: \(what)"
        case .storage(let detail): "storage failure: \(detail)"
        case .cancelled(let what): "cancelled: \(what)"
        case .unavailable(let detail): "database unavailable: \(detail)"
        }
    }
}
