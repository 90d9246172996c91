import CofferCore
import Foundation

/// One discrepancy between Apple's history and the ledger, as `coffer reconcile --json` prints it and the customer
/// page shows it.
public struct DiscrepancyView: Codable, Sendable, Hashable {
    /// The customer's Support ID.
    public var supportId: String
    /// What kind: `missing-purchase`, `missing-refund`, `missing-reversal`, `unknown-to-apple` or `differs`.
    public var kind: String
    /// The kind in words.
    public var words: String
    /// Apple's transaction id.
    public var transactionId: String
    /// The product.
    public var productId: String
    /// What differs, or empty.
    public var detail: String
    /// When the reconciliation found it.
    public var foundAt: Date
    /// When it was applied through the ledger; absent while it is support's to look at.
    public var repairedAt: Date?

    /// Creates a view.
    public init(
        supportId: String, kind: DiscrepancyKind, transactionId: String, productId: String, detail: String,
        foundAt: Date, repairedAt: Date?
    ) {
        self.supportId = supportId
        self.kind = kind.rawValue
        words = kind.words
        self.transactionId = transactionId
        self.productId = productId
        self.detail = detail
        self.foundAt = foundAt
        self.repairedAt = repairedAt
    }
}

/// A reconciliation run, as `coffer reconcile --json` prints it and the dashboard shows the last one.
public struct ReconciliationRunView: Codable, Sendable, Hashable {
    /// The run's id.
    public var id: UUID
    /// When it started.
    public var startedAt: Date
    /// When it finished; absent while it runs or waits to be resumed.
    public var finishedAt: Date?
    /// Only transactions bought or refunded from then on.
    public var since: Date?
    /// Whether it applied what was missing.
    public var repair: Bool
    /// Whether this sitting resumed a run stopped before.
    public var resumed: Bool
    /// Customers checked.
    public var customers: Int
    /// Apple's transactions read.
    public var appleTransactions: Int
    /// Discrepancies found.
    public var found: Int
    /// Of those, the ones applied through the ledger.
    public var repaired: Int
    /// Discrepancies left for support.
    public var left: Int
    /// Customers whose history could not be read (tried again by the next run).
    public var failedCustomers: Int
    /// Why it stopped before the end, if it did.
    public var error: String?

    /// Creates a view.
    public init(
        id: UUID, startedAt: Date, finishedAt: Date?, since: Date?, repair: Bool, resumed: Bool, customers: Int,
        appleTransactions: Int, found: Int, repaired: Int, failedCustomers: Int, error: String?
    ) {
        self.id = id
        self.startedAt = startedAt
        self.finishedAt = finishedAt
        self.since = since
        self.repair = repair
        self.resumed = resumed
        self.customers = customers
        self.appleTransactions = appleTransactions
        self.found = found
        self.repaired = repaired
        left = found - repaired
        self.failedCustomers = failedCustomers
        self.error = error
    }
}

/// What `coffer reconcile --json` prints.
public struct ReconciliationReport: Codable, Sendable, Hashable {
    /// The run.
    public var run: ReconciliationRunView
    /// This sitting's discrepancies.
    public var discrepancies: [DiscrepancyView]

    /// Creates a report.
    public init(run: ReconciliationRunView, discrepancies: [DiscrepancyView]) {
        self.run = run
        self.discrepancies = discrepancies
    }
}
