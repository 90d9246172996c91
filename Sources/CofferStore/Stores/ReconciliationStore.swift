import CofferCore
import Foundation

/// A discrepancy the latest reconciliation of a customer found, as kept for the customer page.
public struct DiscrepancyRecord: Sendable, Hashable, Codable {
    /// The customer.
    public var owner: UUID
    /// The environment.
    public var environment: AppStoreEnvironment
    /// What kind.
    public var kind: DiscrepancyKind
    /// Apple's transaction id.
    public var transactionId: String
    /// The product.
    public var productId: String
    /// What differs, in words, or empty.
    public var detail: String
    /// When the reconciliation found it.
    public var foundAt: Date
    /// When `--repair` (or the scheduled run) applied it through the ledger, `nil` while it is support's to look at.
    public var repairedAt: Date?

    /// Creates a record.
    public init(
        owner: UUID, environment: AppStoreEnvironment, kind: DiscrepancyKind, transactionId: String,
        productId: String, detail: String, foundAt: Date, repairedAt: Date? = nil
    ) {
        self.owner = owner
        self.environment = environment
        self.kind = kind
        self.transactionId = transactionId
        self.productId = productId
        self.detail = detail
        self.foundAt = foundAt
        self.repairedAt = repairedAt
    }
}

/// What the reconciliation with Apple's history keeps: which customers it walks, what it found for each, and a
/// cursor that only one run at a time moves.
public protocol ReconciliationStore: Sendable {
    /// The customers of `environment` with at least one receipt, by id (as text), after `after`, at most `limit`:
    /// the pages a reconciliation walks.
    func reconciledCustomers(environment: AppStoreEnvironment, after: UUID?, limit: Int) async throws -> [UUID]
    /// Replaces a customer's discrepancies with those of their latest check, in one transaction (none: the books
    /// agree). Records of another owner or environment are refused with ``StoreError/wrongUser(_:)``.
    func replaceDiscrepancies(owner: UUID, environment: AppStoreEnvironment, _ records: [DiscrepancyRecord])
        async throws
    /// A customer's discrepancies from their latest check, by transaction id (at most 200).
    func discrepancies(owner: UUID, environment: AppStoreEnvironment) async throws -> [DiscrepancyRecord]
    /// Sets the cursor `name` to `value` only if it holds `expected` now (`nil`: it has none), atomically: how two
    /// instances agree which of them runs.
    ///
    /// - Returns: Whether it was set.
    func swapCursor(_ name: String, environment: AppStoreEnvironment, expected: String?, value: String) async throws
        -> Bool
}

extension ReconciliationStore {
    /// Refuses records that are not `owner`'s in `environment`.
    public static func checkDiscrepancies(
        _ records: [DiscrepancyRecord], owner: UUID, environment: AppStoreEnvironment
    ) throws {
        guard records.allSatisfy({ $0.owner == owner && $0.environment == environment }) else {
            throw StoreError.wrongUser("a discrepancy of another customer or environment")
        }
    }
}

/// A reconciliation run, kept as the store's cursor ``cursorName`` so every instance's dashboard shows it and any
/// instance resumes it where it stopped: the customers are walked by id, and ``after`` is the last one checked.
public struct ReconciliationRun: Sendable, Hashable, CursorRecord {
    /// The name it is kept under.
    public static let cursorName = "reconciliation"

    /// The run's id.
    public var id: UUID
    /// When it started.
    public var startedAt: Date
    /// Only transactions bought or refunded from then on (`--since`).
    public var since: Date?
    /// Whether it applies what is missing.
    public var repair: Bool
    /// The last customer checked, `nil` before the first.
    public var after: UUID?
    /// Customers checked.
    public var customers = 0
    /// Apple's transactions read.
    public var appleTransactions = 0
    /// Discrepancies found.
    public var found = 0
    /// Of those, the ones applied through the ledger.
    public var repaired = 0
    /// Customers whose history could not be read this run (retried by the next).
    public var failedCustomers = 0
    /// When it finished, `nil` while it runs or waits to be resumed.
    public var finishedAt: Date?
    /// Why it stopped before the end, if it did.
    public var error: String?
    /// The instance running it.
    public var holder: String?
    /// Until when the holder's claim lasts; past it, another instance (or `coffer reconcile`) resumes it.
    public var leaseUntil: Date?
    /// Where the run last stopped for Apple failing and went back to (the last customer read's id, or empty for the
    /// start): stopped there again, it goes on past.
    public var rewoundAt: String?

    /// A new run.
    public init(id: UUID = UUID(), startedAt: Date, since: Date?, repair: Bool) {
        self.id = id
        self.startedAt = startedAt
        self.since = since
        self.repair = repair
    }

    /// Discrepancies left for support.
    public var left: Int { found - repaired }
}
