import CofferCore
import Foundation
import Testing

/// ``LedgerReconciliation``: what Apple's history and the ledger's receipts of one customer disagree on.
@Suite("Ledger reconciliation")
struct LedgerReconciliationTests {
    static let start = Date(timeIntervalSince1970: 1_767_225_600)
    static let owner = UUID()

    static func fact(
        _ id: String, product: String = "coins", quantity: Int = 1, at offset: TimeInterval = 0,
        refunded: TimeInterval? = nil, price: Int64? = 990
    ) -> TransactionFact {
        TransactionFact(
            transactionId: id, originalTransactionId: id, productId: product, quantity: quantity,
            purchaseDate: start.addingTimeInterval(offset),
            revocationDate: refunded.map { start.addingTimeInterval($0) },
            price: price, currency: "USD")
    }

    static func receipt(_ fact: TransactionFact, revoked: Bool = false) -> Receipt {
        var receipt = Receipt(owner: owner, transaction: fact)
        receipt.deliveredCredits = 100
        receipt.deliveredAt = fact.purchaseDate
        if revoked { receipt.revokedAt = start.addingTimeInterval(10) }
        return receipt
    }

    static func kinds(_ found: [Discrepancy]) -> [String] { found.map { "\($0.transactionId) \($0.kind.rawValue)" } }

    @Test("the books agree: nothing found")
    func agree() {
        let books = LedgerReconciliation.Books(apple: [Self.fact("1")], ledger: [Self.receipt(Self.fact("1"))])
        #expect(LedgerReconciliation.discrepancies(books, sells: { _ in true }).isEmpty)
    }

    @Test("each kind: a missing purchase, refund and reversal; one Apple does not know; product, quantity, price")
    func kinds() {
        let apple = [
            Self.fact("1"), Self.fact("2", refunded: 5), Self.fact("3"), Self.fact("5", product: "gems"),
            Self.fact("6", quantity: 2), Self.fact("7", price: 1990),
        ]
        let ledger = [
            Self.receipt(Self.fact("2")), Self.receipt(Self.fact("3"), revoked: true), Self.receipt(Self.fact("4")),
            Self.receipt(Self.fact("5")), Self.receipt(Self.fact("6")), Self.receipt(Self.fact("7")),
        ]
        let token = UUID()
        let found = LedgerReconciliation.discrepancies(
            .init(apple: apple, ledger: ledger, appAccountToken: token, appleTokens: ["1": token]), sells: { _ in true }
        )
        #expect(
            Self.kinds(found) == [
                "1 missing-purchase", "2 missing-refund", "3 missing-reversal", "4 unknown-to-apple", "5 differs",
                "6 differs", "7 differs",
            ])
        #expect(found.first { $0.transactionId == "5" }?.detail == "product: ledger coins, Apple gems")
        #expect(found.first { $0.transactionId == "7" }?.detail == "price: ledger 990 USD, Apple 1990 USD")
        #expect(found.filter(\.repairable).map(\.transactionId) == ["1", "2", "3"])
        #expect(found.first?.apple == Self.fact("1"))
    }

    @Test(
        "not this customer's to deliver: another install's token, another customer's receipt, an unsold product, an upgrade"
    )
    func notOurs() {
        let token = UUID()
        var upgraded = Self.fact("4")
        upgraded.isUpgraded = true
        let books = LedgerReconciliation.Books(
            apple: [Self.fact("1"), Self.fact("2"), Self.fact("3", product: "tip"), upgraded, Self.fact("5")],
            ledger: [],
            heldElsewhere: ["2"], appAccountToken: token, appleTokens: ["1": UUID(), "5": token])
        let found = LedgerReconciliation.discrepancies(books, sells: { $0 != "tip" })
        #expect(Self.kinds(found) == ["5 missing-purchase"])
    }

    @Test("a deleted customer gets nothing new, and their refunds are still found")
    func deleted() {
        let books = LedgerReconciliation.Books(
            apple: [Self.fact("1"), Self.fact("2", refunded: 5)], ledger: [Self.receipt(Self.fact("2"))], isLive: false)
        #expect(Self.kinds(LedgerReconciliation.discrepancies(books, sells: { _ in true })) == ["2 missing-refund"])
    }

    @Test("sandbox data never reaches a customer whose AppTransaction says Production")
    func environments() {
        var sandbox = Self.fact("1")
        sandbox.environment = .sandbox
        let books = LedgerReconciliation.Books(apple: [sandbox], ledger: [], customerEnvironment: .production)
        #expect(LedgerReconciliation.discrepancies(books, sells: { _ in true }).isEmpty)
    }

    @Test("since: only what was bought or refunded from then on")
    func since() {
        let apple = [Self.fact("1", at: 0), Self.fact("2", at: 0, refunded: 7_200), Self.fact("3", at: 7_200)]
        let ledger = [Self.receipt(Self.fact("2")), Self.receipt(Self.fact("9", at: 0))]
        let found = LedgerReconciliation.discrepancies(
            .init(apple: apple, ledger: ledger), sells: { _ in true }, since: Self.start.addingTimeInterval(3_600))
        #expect(Self.kinds(found) == ["2 missing-refund", "3 missing-purchase"])
    }

    @Test("a purchase Apple already refunded is missing with nothing owed")
    func refundedBeforeDelivery() {
        let found = LedgerReconciliation.discrepancies(
            .init(apple: [Self.fact("1", refunded: 5)], ledger: [], ownAccount: ["1"]), sells: { _ in true })
        #expect(found.map(\.kind) == [.missingPurchase])
        #expect(found.first?.detail == "refunded at Apple too: nothing is owed")
    }

    @Test(
        "only what Apple signed as the customer's is repaired; without it, one since they joined is for support, one before is not looked at"
    )
    func whose() {
        let joined = Self.start.addingTimeInterval(3_600)
        let books = LedgerReconciliation.Books(
            apple: [Self.fact("1", at: 0), Self.fact("2", at: 7_200), Self.fact("3", at: 0)], ledger: [],
            appAccountToken: UUID(), ownAccount: ["3"], customerSince: joined)
        let found = LedgerReconciliation.discrepancies(books, sells: { _ in true })
        #expect(Self.kinds(found) == ["2 missing-purchase", "3 missing-purchase"])
        #expect(found.map(\.repairable) == [false, true])
        #expect(found.first?.detail.contains("no appAccountToken") == true)
        // A ledger purchase whose account was not read is not called unknown to Apple.
        let unread = LedgerReconciliation.Books(apple: [], ledger: [Self.receipt(Self.fact("9"))], unread: ["9"])
        #expect(LedgerReconciliation.discrepancies(unread, sells: { _ in true }).isEmpty)
    }
}
