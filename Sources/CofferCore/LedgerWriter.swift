import Foundation

/// One change to apply to a user's wallet.
public struct LedgerRequest: Sendable, Hashable {
    /// The user.
    public var owner: UUID
    /// The environment the change belongs to; it must be the user's.
    public var environment: Environment
    /// The change.
    public var event: LedgerEvent
    /// The app's deficit policy.
    public var policy: DeficitPolicy
    /// When it happens.
    public var at: Date

    /// Creates a request.
    public init(owner: UUID, environment: Environment, event: LedgerEvent, policy: DeficitPolicy = .collect, at: Date) {
        self.owner = owner
        self.environment = environment
        self.event = event
        self.policy = policy
        self.at = at
    }
}

/// What applying a ``LedgerRequest`` did, once it is durable.
public struct LedgerResult: Sendable, Hashable {
    /// What the event did.
    public var outcome: LedgerOutcome
    /// The user's wallet after the event.
    public var wallet: Wallet
    /// The entry applied, or for a duplicate the one already on record (when the key has one).
    public var entry: LedgerEntry?
    /// The transaction's receipt after the event, for transaction events.
    public var receipt: Receipt?

    /// Creates a result.
    public init(outcome: LedgerOutcome, wallet: Wallet, entry: LedgerEntry?, receipt: Receipt?) {
        self.outcome = outcome
        self.wallet = wallet
        self.entry = entry
        self.receipt = receipt
    }
}

/// The read and write steps a store engine offers inside one of its write transactions, so the ledger's
/// load-decide-save sequence is written once for every engine.
public protocol LedgerWriteContext {
    /// The user's current wallet, or `nil` when no such user lives in `environment`.
    mutating func wallet(owner: UUID, environment: Environment) throws -> Wallet?
    /// The receipt of a transaction, any owner.
    mutating func receipt(transactionId: String, environment: Environment) throws -> Receipt?
    /// The user's entry under a key.
    mutating func entry(owner: UUID, environment: Environment, key: IdempotencyKey) throws -> LedgerEntry?
    /// Saves a decision: the wallet, the receipt if any, and the new entry.
    mutating func save(_ decision: LedgerDecision, owner: UUID, environment: Environment) throws
}

/// The read and write steps of an engine whose database calls are asynchronous (PostgreSQL), inside
/// one of its write transactions: the state a request needs, read at once, and the decision saved.
public protocol AsyncLedgerWriteContext {
    /// The user's wallet (locked for the rest of the transaction), the receipt of `transactionId` (any
    /// owner) and the user's entry under `key`; `nil` when no such user lives in `environment`.
    func load(owner: UUID, environment: Environment, transactionId: String?, key: IdempotencyKey) async throws
        -> (wallet: Wallet, receipt: Receipt?, existing: LedgerEntry?)?
    /// Saves a decision: the wallet, the receipt if any, and the new entry.
    func save(_ decision: LedgerDecision, owner: UUID, environment: Environment) async throws
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
        let (owner, environment) = (request.owner, request.environment)
        guard let wallet = try context.wallet(owner: owner, environment: environment) else {
            return .failure(.unknownUser(owner))
        }
        let receipt = try request.event.transaction.flatMap {
            try context.receipt(transactionId: $0.transactionId, environment: environment)
        }
        let existing = try context.entry(owner: owner, environment: environment, key: request.event.key)
        let (result, save) = decide(request, wallet: wallet, receipt: receipt, existing: existing)
        if let save { try context.save(save, owner: owner, environment: environment) }
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
        let (owner, environment) = (request.owner, request.environment)
        guard
            let (wallet, receipt, existing) = try await context.load(
                owner: owner, environment: environment, transactionId: request.event.transaction?.transactionId,
                key: request.event.key)
        else { return .failure(.unknownUser(owner)) }
        let (result, save) = decide(request, wallet: wallet, receipt: receipt, existing: existing)
        if let save { try await context.save(save, owner: owner, environment: environment) }
        return result
    }

    /// The decision for a request given the state it needs, and what (if anything) to save.
    private static func decide(
        _ request: LedgerRequest, wallet: Wallet, receipt: Receipt?, existing: LedgerEntry?
    ) -> (Result<LedgerResult, LedgerError>, save: LedgerDecision?) {
        let decision: LedgerDecision
        do {
            decision = try Ledger.decide(
                request.event, owner: request.owner, wallet: wallet, receipt: receipt, existing: existing,
                policy: request.policy, at: request.at)
        } catch {
            return (.failure(error), nil)
        }
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

    /// A one-line, human-readable explanation.
    public var description: String {
        switch self {
        case .alreadyExists(let what): "already exists: \(what)"
        case .notFound(let what): "not found: \(what)"
        case .wrongUser(let what): "belongs to another user: \(what)"
        case .storage(let detail): "storage failure: \(detail)"
        }
    }
}
