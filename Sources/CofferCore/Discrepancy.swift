import Foundation

/// What kind of disagreement a reconciliation found between Apple's history of a customer and the ledger.
public enum DiscrepancyKind: String, Sendable, Hashable, Codable, CaseIterable {
    /// Apple charged for a purchase the ledger does not have.
    case missingPurchase = "missing-purchase"
    /// Apple refunded or revoked a purchase the ledger has not taken back.
    case missingRefund = "missing-refund"
    /// Apple reversed a refund the ledger took back (it is paid again).
    case missingReversal = "missing-reversal"
    /// The ledger has a purchase Apple does not know.
    case unknownToApple = "unknown-to-apple"
    /// The ledger and Apple name another product, quantity, price or refunded share for one transaction.
    case differs

    /// Whether `--repair` applies it through the ledger's own rules (the rest is support's to look at).
    public var isRepairable: Bool {
        switch self {
        case .missingPurchase, .missingRefund, .missingReversal: true
        case .unknownToApple, .differs: false
        }
    }

    /// A few words for support.
    public var words: String {
        switch self {
        case .missingPurchase: "Apple charged for it; the ledger lacks it"
        case .missingRefund: "Apple refunded it; the ledger did not take it back"
        case .missingReversal: "Apple reversed its refund; the ledger still has it taken back"
        case .unknownToApple: "in the ledger; Apple does not know it"
        case .differs: "the ledger and Apple differ"
        }
    }
}

/// One disagreement about one transaction.
public struct Discrepancy: Sendable, Hashable, Codable {
    /// What kind.
    public var kind: DiscrepancyKind
    /// Apple's transaction id.
    public var transactionId: String
    /// The product, as Apple names it (the ledger's for one Apple does not know).
    public var productId: String
    /// What differs, in words (`product: ledger a, Apple b`), or empty.
    public var detail: String
    /// Apple's transaction as signed, for a repair (`nil` for one Apple does not know).
    public var apple: TransactionFact?
    /// Whether a repair may apply it: a repairable kind, and for a missing purchase, one Apple signed as this
    /// customer's (their appAccountToken, or their Apple account's app transaction).
    public var repairable: Bool

    /// Creates a discrepancy.
    public init(
        kind: DiscrepancyKind, transactionId: String, productId: String, detail: String = "",
        apple: TransactionFact? = nil, repairable: Bool? = nil
    ) {
        self.kind = kind
        self.transactionId = transactionId
        self.productId = productId
        self.detail = detail
        self.apple = apple
        self.repairable = repairable ?? kind.isRepairable
    }
}

/// The comparison of Apple's history of one customer with the ledger's receipts of them, as a pure function.
public enum LedgerReconciliation {
    /// What Apple's history and the ledger say about one customer.
    public struct Books: Sendable {
        /// Apple's transactions of the customer's accounts (Transaction History and Refund History, each
        /// transaction once, its latest signed state).
        public var apple: [TransactionFact]
        /// The ledger's receipts of the customer.
        public var ledger: [Receipt]
        /// Transaction ids the ledger holds for another customer (a shared Apple account, a merge).
        public var heldElsewhere: Set<String>
        /// The customer's own appAccountToken: Apple's transactions naming another token are another install's.
        public var appAccountToken: UUID?
        /// The appAccountToken Apple signed on each of its transactions that has one, by transaction id.
        public var appleTokens: [String: UUID]
        /// Apple's transactions whose signed app transaction id is the customer's own Apple account's.
        public var ownAccount: Set<String>
        /// When the customer became Coffer's: a purchase before it without their token was delivered before Coffer
        /// (or to an earlier install) and is not looked at.
        public var customerSince: Date?
        /// Ledger transactions whose Apple account was not read (another environment's data, an account past the
        /// lookups' limit): not reported as unknown to Apple.
        public var unread: Set<String>
        /// Whether the customer is live (a deleted one gets nothing new; their refunds are still taken back).
        public var isLive: Bool
        /// The environment the customer's own AppTransaction says, if known (``Delivery/reaches(data:customer:)``).
        public var customerEnvironment: AppStoreEnvironment?

        /// Creates the books.
        public init(
            apple: [TransactionFact], ledger: [Receipt], heldElsewhere: Set<String> = [], appAccountToken: UUID? = nil,
            appleTokens: [String: UUID] = [:], ownAccount: Set<String> = [], customerSince: Date? = nil,
            unread: Set<String> = [], isLive: Bool = true, customerEnvironment: AppStoreEnvironment? = nil
        ) {
            self.apple = apple
            self.appleTokens = appleTokens
            self.ownAccount = ownAccount
            self.customerSince = customerSince
            self.unread = unread
            self.ledger = ledger
            self.heldElsewhere = heldElsewhere
            self.appAccountToken = appAccountToken
            self.isLive = isLive
            self.customerEnvironment = customerEnvironment
        }
    }

    /// Finds every disagreement: Apple's purchases the ledger lacks (of products the catalog sells, not another
    /// install's, not superseded by an upgrade; repairable only when Apple signed them as the customer's), Apple's refunds and reversals it did not apply, its purchases Apple
    /// does not know, and product, quantity, price or refunded share that differ. With `since`, only transactions
    /// bought or refunded from then on.
    ///
    /// - Parameters:
    ///   - books: Apple's and the ledger's side.
    ///   - sells: Whether the catalog sells a product (Apple's history holds every product of the app).
    ///   - since: The earliest purchase or refund looked at.
    /// - Returns: The discrepancies, by transaction id.
    public static func discrepancies(
        _ books: Books, sells: (String) -> Bool, since: Date? = nil
    ) -> [Discrepancy] {
        let inWindow = { (fact: TransactionFact) -> Bool in
            guard let since else { return true }
            return fact.purchaseDate >= since || (fact.revocationDate.map { $0 >= since } ?? false)
        }
        let ledger = Dictionary(
            books.ledger.map { ($0.transaction.transactionId, $0) }, uniquingKeysWith: { a, _ in a })
        var found: [Discrepancy] = []
        var seen = Set<String>()
        for fact in books.apple where seen.insert(fact.transactionId).inserted && inWindow(fact) {
            guard let receipt = ledger[fact.transactionId] else {
                let token = books.appleTokens[fact.transactionId]
                // Another install's (its token names someone else) is theirs to present.
                if let token, token != books.appAccountToken { continue }
                let ours = token != nil || books.ownAccount.contains(fact.transactionId)
                // Without their token, one bought before the customer was Coffer's was delivered before Coffer.
                if !ours, let since = books.customerSince, fact.purchaseDate < since { continue }
                guard books.isLive, sells(fact.productId), !fact.isUpgraded,
                    !books.heldElsewhere.contains(fact.transactionId),
                    Delivery.reaches(data: fact.environment, customer: books.customerEnvironment)
                else { continue }
                let detail =
                    !ours
                    ? "Apple did not sign it as this customer's (no appAccountToken): the app presents it, or support "
                        + "checks whose it is"
                    : fact.revocationDate == nil ? "" : "refunded at Apple too: nothing is owed"
                found.append(
                    Discrepancy(
                        kind: .missingPurchase, transactionId: fact.transactionId, productId: fact.productId,
                        detail: detail, apple: fact, repairable: ours))
                continue
            }
            found += compare(receipt, fact)
        }
        for receipt in books.ledger.sorted(by: { $0.transaction.transactionId < $1.transaction.transactionId })
        where !seen.contains(receipt.transaction.transactionId) && inWindow(receipt.transaction)
            && !receipt.deliveredBeforeCoffer && !receipt.transaction.signedByXcode
            && !books.unread.contains(receipt.transaction.transactionId)
        {
            found.append(
                Discrepancy(
                    kind: .unknownToApple, transactionId: receipt.transaction.transactionId,
                    productId: receipt.transaction.productId))
        }
        return found.sorted { ($0.transactionId, $0.kind.rawValue) < ($1.transactionId, $1.kind.rawValue) }
    }

    /// What one transaction's receipt and Apple's signed state disagree on.
    static func compare(_ receipt: Receipt, _ fact: TransactionFact) -> [Discrepancy] {
        let held = receipt.transaction
        var found: [Discrepancy] = []
        let make = { (kind: DiscrepancyKind, detail: String) in
            Discrepancy(
                kind: kind, transactionId: fact.transactionId, productId: fact.productId, detail: detail, apple: fact)
        }
        if fact.revocationDate != nil, !receipt.isRevoked {
            found.append(make(.missingRefund, fact.revocationPercentage.map { "refunded \($0 / 1_000)%" } ?? ""))
        } else if fact.revocationDate == nil, receipt.isRevoked {
            found.append(make(.missingReversal, ""))
        }
        var differences: [String] = []
        if held.productId != fact.productId {
            differences.append("product: ledger \(held.productId), Apple \(fact.productId)")
        }
        if held.quantity != fact.quantity {
            differences.append("quantity: ledger \(held.quantity), Apple \(fact.quantity)")
        }
        if let price = held.price, let applePrice = fact.price, price != applePrice || held.currency != fact.currency {
            differences.append(
                "price: ledger \(price) \(held.currency ?? "?"), Apple \(applePrice) \(fact.currency ?? "?")")
        }
        if receipt.isRevoked, fact.revocationDate != nil, let share = fact.revocationPercentage,
            let heldShare = held.revocationPercentage, share != heldShare
        {
            differences.append("refunded share: ledger \(heldShare / 1_000)%, Apple \(share / 1_000)%")
        }
        if !differences.isEmpty { found.append(make(.differs, differences.joined(separator: "; "))) }
        return found
    }
}
