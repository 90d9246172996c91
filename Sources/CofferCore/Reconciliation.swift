/// One transaction as StoreKit reports it on the device.
public struct DeviceTransaction: Sendable, Hashable, Codable {
    /// Apple's transaction id.
    public var transactionId: String
    /// The product.
    public var productId: String
    /// Whether the app has called `finish()` on it.
    public var isFinished: Bool
    /// Whether StoreKit verified its signature.
    public var isVerified: Bool

    /// Creates a device transaction.
    public init(transactionId: String, productId: String, isFinished: Bool, isVerified: Bool = true) {
        self.transactionId = transactionId
        self.productId = productId
        self.isFinished = isFinished
        self.isVerified = isVerified
    }
}

/// What "Verify Purchases" concludes about one transaction.
public enum ReconciliationVerdict: String, Sendable, Hashable, Codable {
    /// Unfinished and not in the ledger: Apple says it was never fulfilled, so deliver it now.
    case deliverNow
    /// In the ledger and finished: nothing to do.
    case alreadyRecorded
    /// In the ledger but not finished (a crash after delivery): finish it, deliver nothing.
    case finishOnly
    /// Finished but not in the ledger, or not verified: cannot be delivered safely; contact support.
    case couldNotBeVerified
}

/// One line of a "Verify Purchases" report.
public struct ReconciliationItem: Sendable, Hashable, Codable {
    /// The transaction.
    public var transaction: DeviceTransaction
    /// The verdict.
    public var verdict: ReconciliationVerdict

    /// Creates a report line.
    public init(transaction: DeviceTransaction, verdict: ReconciliationVerdict) {
        self.transaction = transaction
        self.verdict = verdict
    }
}

/// "Verify Purchases" (True Count's Plan D), as a pure function.
public enum Reconciliation {
    /// Classifies each transaction StoreKit reports against the transaction ids the ledger holds.
    ///
    /// - Parameters:
    ///   - transactions: What StoreKit reports (unfinished and all).
    ///   - recorded: Transaction ids the ledger has delivered.
    /// - Returns: One item per distinct transaction id, in input order.
    public static func classify(_ transactions: [DeviceTransaction], recorded: Set<String>) -> [ReconciliationItem] {
        var seen = Set<String>()
        var items: [ReconciliationItem] = []
        for transaction in transactions where seen.insert(transaction.transactionId).inserted {
            let verdict: ReconciliationVerdict
            if !transaction.isVerified {
                verdict = .couldNotBeVerified
            } else if recorded.contains(transaction.transactionId) {
                verdict = transaction.isFinished ? .alreadyRecorded : .finishOnly
            } else {
                verdict = transaction.isFinished ? .couldNotBeVerified : .deliverNow
            }
            items.append(ReconciliationItem(transaction: transaction, verdict: verdict))
        }
        return items
    }
}
