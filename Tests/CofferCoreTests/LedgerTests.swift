import CofferCore
import CofferTestSupport
import Foundation
import Testing

/// One user's ledger driven through `Ledger.decide`, the way a store drives it.
struct Book {
    var policy: DeficitPolicy = .collect
    var wallet = Wallet.empty
    var receipts: [String: Receipt] = [:]
    var entries: [LedgerEntry] = []
    var owner = Fixture.owner

    @discardableResult
    mutating func apply(_ event: LedgerEvent, as who: UUID? = nil, at date: Date = Fixture.start) throws(LedgerError)
        -> LedgerDecision
    {
        let owner = who ?? self.owner
        let receipt = event.transaction.flatMap { receipts[$0.transactionId] }
        let existing = entries.first { $0.key == event.key && $0.owner == owner }
        let decision = try Ledger.decide(
            event, owner: owner, wallet: wallet, receipt: receipt, existing: existing, policy: policy, at: date)
        wallet = decision.wallet
        if let receipt = decision.receipt { receipts[receipt.transaction.transactionId] = receipt }
        if decision.appendsEntry, let entry = decision.entry { entries.append(entry) }
        return decision
    }

    @discardableResult
    mutating func buy(_ fact: TransactionFact, credits: Int64 = 100) throws(LedgerError) -> LedgerDecision {
        try apply(.purchase(fact, credits: credits))
    }

    mutating func spend(_ amount: Int64, key: String = UUID().uuidString) throws(LedgerError) {
        try apply(.spend(key: key, amount: amount))
    }

    var audit: [String] { LedgerAudit.discrepancies(entries: entries, wallet: wallet) }
}

@Suite("Ledger rules")
struct LedgerTests {
    let t1 = Fixture.consumable("t1")
    let t2 = Fixture.consumable("t2")

    @Test("a purchase delivers its credits once; the same transaction again is a duplicate")
    func deliversOnce() throws {
        var book = Book()
        let first = try book.buy(t1, credits: 400)
        #expect(first.outcome == .applied)
        #expect(first.entry?.key == IdempotencyKey(.purchase, "t1"))
        #expect(book.wallet == Wallet(balance: 400, deficit: 0))
        let second = try book.buy(t1, credits: 400)
        #expect(second.outcome == .duplicate)
        #expect(book.wallet.balance == 400)
        #expect(book.entries.count == 1)
        #expect(book.receipts["t1"]?.status == .delivered)
        #expect(book.audit.isEmpty)
    }

    @Test("Apple's price, currency, storefront and refund reason are kept, and never erased by data without them")
    func payment() throws {
        var book = Book()
        var paid = t1
        paid.price = 990
        paid.currency = "USD"
        paid.storefront = "USA"
        // A pending receipt (a reversal arrived first) learns the payment when the purchase arrives.
        try book.apply(.reversal(t1, at: Fixture.start))
        try book.buy(paid)
        #expect(book.receipts["t1"]?.transaction.price == 990)
        var refund = t1
        refund.revocationDate = Fixture.start.addingTimeInterval(60)
        refund.revocationReason = 1
        try book.apply(.revocation(refund))
        let refunded = try #require(book.receipts["t1"])
        #expect(refunded.transaction.price == 990 && refunded.transaction.currency == "USD")
        #expect(refunded.transaction.storefront == "USA" && refunded.transaction.revocationReason == 1)
        // A later refund without a reason keeps Apple's reason; a reversal keeps the payment.
        refund.revocationDate = Fixture.start.addingTimeInterval(120)
        refund.revocationReason = nil
        try book.apply(.revocation(refund))
        #expect(book.receipts["t1"]?.transaction.revocationReason == 1)
        try book.apply(.reversal(t1, at: Fixture.start.addingTimeInterval(180)))
        #expect(book.receipts["t1"]?.transaction.price == 990)
        #expect(book.receipts["t1"]?.status == .restored)
    }

    @Test(
        "a purchase delivered from data without its price learns it when Apple's signed data comes, crediting nothing")
    func paymentLearned() throws {
        var book = Book()
        try book.buy(t1, credits: 400)
        var signed = t1
        signed.price = 4_990
        signed.currency = "EUR"
        let again = try book.buy(signed, credits: 400)
        #expect(again.outcome == .duplicate && again.receipt?.transaction.price == 4_990)
        #expect(book.wallet.balance == 400 && book.entries.count == 1)
        #expect(try book.buy(signed, credits: 400).receipt == nil)
    }

    @Test("payment fields outside their ranges are not kept")
    func paymentRanges() {
        func fact(price: Int64?, currency: String?, storefront: String? = "USA", reason: Int? = 0) -> TransactionFact {
            TransactionFact(
                transactionId: "t", productId: "p", purchaseDate: Fixture.start, price: price, currency: currency,
                storefront: storefront, revocationReason: reason)
        }
        #expect(fact(price: -1, currency: "USD").price == nil)
        #expect(fact(price: .max, currency: "USD").price == nil)
        #expect(fact(price: Payment.prices.upperBound, currency: "USD").price == Payment.prices.upperBound)
        #expect(fact(price: 0, currency: "usd").currency == nil)
        #expect(fact(price: 0, currency: "USDX").currency == nil)
        #expect(fact(price: 0, currency: "ÜSD").currency == nil)
        #expect(fact(price: 0, currency: "EUR", storefront: "F<a").storefront == nil)
        #expect(fact(price: 0, currency: "EUR", reason: -1).revocationReason == nil)
        #expect(fact(price: 0, currency: "EUR", reason: 1).revocationReason == 1)
        #expect(Payment.revocationReasonText(1) == "Apple refunded because of an issue in the app")
    }

    @Test("a revocation takes back exactly what the purchase delivered, once")
    func revokesExactly() throws {
        var book = Book()
        try book.buy(t1, credits: 400)
        try book.buy(t2, credits: 100)
        let revocation = try book.apply(.revocation(Fixture.consumable("t1", revoked: Fixture.start)))
        #expect(revocation.outcome == .applied)
        #expect(revocation.entry?.amount == -400)
        #expect(book.wallet == Wallet(balance: 100, deficit: 0))
        #expect(try book.apply(.revocation(Fixture.consumable("t1", revoked: Fixture.start))).outcome == .duplicate)
        #expect(book.wallet.balance == 100)
        #expect(book.receipts["t1"]?.status == .revoked)
        #expect(book.audit.isEmpty)
    }

    @Test("a balance never goes below zero: what was spent becomes the deficit")
    func floorsAtZero() throws {
        var book = Book()
        try book.buy(t1, credits: 400)
        try book.spend(300)
        try book.apply(.revocation(t1))
        #expect(book.wallet == Wallet(balance: 0, deficit: 300))
        #expect(book.receipts["t1"]?.takenFromBalance == 100)
        #expect(book.receipts["t1"]?.addedToDeficit == 300)
        #expect(book.audit.isEmpty)
    }

    @Test("collect: later credits settle the deficit before reaching the balance")
    func collectSettlesDeficit() throws {
        var book = Book(policy: .collect)
        try book.buy(t1, credits: 400)
        try book.spend(400)
        try book.apply(.revocation(t1))
        #expect(book.wallet == Wallet(balance: 0, deficit: 400))
        try book.buy(t2, credits: 100)
        #expect(book.wallet == Wallet(balance: 0, deficit: 300))
        try book.apply(.grant(id: "g1", credits: 500, reason: "Ticket #42"))
        #expect(book.wallet == Wallet(balance: 200, deficit: 0))
        #expect(book.audit.isEmpty)
    }

    @Test("forgive: the deficit stays as a record and later credits reach the balance")
    func forgiveKeepsRecord() throws {
        var book = Book(policy: .forgive)
        try book.buy(t1, credits: 400)
        try book.spend(400)
        try book.apply(.revocation(t1))
        try book.buy(t2, credits: 100)
        #expect(book.wallet == Wallet(balance: 100, deficit: 400))
        #expect(book.audit.isEmpty)
    }

    @Test(
        "a refund reversal restores what the revocation took, settling the deficit first",
        arguments: DeficitPolicy.allCases)
    func reversalRestores(policy: DeficitPolicy) throws {
        var book = Book(policy: policy)
        try book.buy(t1, credits: 400)
        try book.spend(300)
        try book.apply(.revocation(t1))
        #expect(book.wallet == Wallet(balance: 0, deficit: 300))
        let reversal = try book.apply(.reversal(t1, at: nil))
        #expect(reversal.outcome == .applied)
        #expect(reversal.entry?.amount == 400)
        #expect(book.wallet == Wallet(balance: 100, deficit: 0))
        #expect(book.receipts["t1"]?.status == .restored)
        #expect(try book.apply(.reversal(t1, at: nil)).outcome == .duplicate)
        #expect(book.wallet == Wallet(balance: 100, deficit: 0))
        #expect(book.audit.isEmpty)
    }

    @Test("forgive: a reversal cancels only its own revocation's deficit")
    func forgiveReversalKeepsOtherDeficits() throws {
        var book = Book(policy: .forgive)
        try book.buy(t1, credits: 400)
        try book.spend(400)
        try book.apply(.revocation(t1))
        try book.buy(t2, credits: 50)
        try book.apply(.revocation(t2))
        try book.apply(.reversal(t2, at: nil))
        #expect(book.wallet == Wallet(balance: 50, deficit: 400))
        #expect(book.audit.isEmpty)
    }

    @Test("replay: re-posting a pre-refund transaction after its refund answers revoked and credits nothing")
    func replayAfterRefund() throws {
        var book = Book()
        try book.buy(t1, credits: 400)
        try book.apply(.revocation(Fixture.consumable("t1", revoked: Fixture.start)))
        // The old signed transaction, without revocationDate, posted again: the ledger knows better.
        let replay = try book.buy(t1, credits: 400)
        #expect(replay.outcome == .revoked)
        #expect(book.wallet.balance == 0)

        var fresh = Book()
        try fresh.apply(.revocation(Fixture.consumable("t9", revoked: Fixture.start)))
        let late = try fresh.buy(Fixture.consumable("t9"), credits: 400)
        #expect(late.outcome == .revoked)
        #expect(fresh.wallet.balance == 0)
        #expect(fresh.entries.count == 1)
    }

    @Test("signed data that already says refunded records the revocation and credits nothing")
    func purchaseAlreadyRevoked() throws {
        var book = Book()
        let decision = try book.buy(Fixture.consumable("t1", revoked: Fixture.start), credits: 400)
        #expect(decision.outcome == .revoked)
        #expect(decision.entry?.key == IdempotencyKey(.revocation, "t1"))
        #expect(book.wallet == .empty)
        #expect(try book.buy(t1, credits: 400).outcome == .revoked)
        // Apple reverses the refund: the purchase is deliverable again.
        try book.apply(.reversal(t1, at: nil))
        #expect(try book.buy(t1, credits: 400).outcome == .applied)
        #expect(book.wallet.balance == 400)
        #expect(book.audit.isEmpty)
    }

    @Test("a revocation that arrives after its reversal is superseded: state only moves forward")
    func reorderedReversal() throws {
        var book = Book()
        try book.buy(t1, credits: 400)
        try book.apply(.reversal(t1, at: nil))
        #expect(try book.apply(.revocation(t1)).outcome == .superseded)
        #expect(book.wallet.balance == 400)
        #expect(book.audit.isEmpty)
    }

    /// Refund (day 1), reversal (day 2), refund again (day 3), by Apple's dates.
    static let refundAgain: [(String, LedgerEvent)] = {
        let day = { (n: Double) in Fixture.start.addingTimeInterval(n * 86_400) }
        return [
            ("refund", .revocation(Fixture.consumable("t1", revoked: day(1)))),
            ("reversal", .reversal(Fixture.consumable("t1"), at: day(2))),
            ("refund again", .revocation(Fixture.consumable("t1", revoked: day(3)))),
        ]
    }()

    @Test(
        "refund, reversal, refund again: Apple's latest word wins by its dates, in every arrival order",
        arguments: [[0, 1, 2], [0, 2, 1], [1, 0, 2], [1, 2, 0], [2, 0, 1], [2, 1, 0]])
    func refundReversalRefund(order: [Int]) throws {
        var book = Book()
        try book.buy(t1, credits: 400)
        for index in order {
            // Each arrives twice (Apple retries), and arrives on a later day than Apple dated it.
            for _ in 0..<2 {
                try book.apply(Self.refundAgain[index].1, at: Fixture.start.addingTimeInterval(10 * 86_400))
            }
        }
        #expect(book.receipts["t1"]?.isRevoked == true, "\(order.map { Self.refundAgain[$0].0 })")
        #expect(book.wallet == Wallet(balance: 0, deficit: 0))
        #expect(book.audit.isEmpty)
        // The purchase presented again delivers nothing; a reversal of the second refund gives it back once.
        #expect(try book.buy(t1, credits: 400).outcome == .revoked)
        let day4 = Fixture.start.addingTimeInterval(4 * 86_400)
        #expect(try book.apply(.reversal(t1, at: day4)).outcome == .applied)
        #expect(try book.apply(.reversal(t1, at: day4)).outcome == .duplicate)
        #expect(book.wallet.balance == 400)
        #expect(Set(book.entries.map(\.key)).count == book.entries.count)
        #expect(book.audit.isEmpty)
    }

    @Test("a refund dated before the reversal that arrives after it is superseded")
    func staleRefundAfterReversal() throws {
        var book = Book()
        try book.buy(t1, credits: 400)
        try book.apply(Self.refundAgain[0].1)
        try book.apply(Self.refundAgain[1].1)
        #expect(try book.apply(Self.refundAgain[0].1).outcome == .superseded)
        #expect(book.wallet.balance == 400)
        // The same refund without its date, and a second copy of the reversal, change nothing.
        #expect(try book.apply(.revocation(Fixture.consumable("t1", revoked: Fixture.start))).outcome == .superseded)
        #expect(book.wallet.balance == 400)
        #expect(book.receipts["t1"]?.status == .restored)
    }

    @Test("family-shared purchases deliver no credits")
    func familySharedNoCredits() throws {
        let catalog = try Fixture.catalog()
        let fact = Fixture.consumable("t1", quantity: 2, family: true)
        let credits = try catalog.credits(
            productId: fact.productId, quantity: fact.quantity, familyShared: fact.isFamilyShared)
        var book = Book()
        let decision = try book.apply(.purchase(fact, credits: credits))
        #expect(decision.outcome == .applied)
        #expect(book.wallet.balance == 0)
        try book.apply(.revocation(fact))
        #expect(book.wallet == .empty)
    }

    @Test("spends refuse to overdraw, and the same key gives the same answer")
    func spends() throws {
        var book = Book()
        try book.buy(t1, credits: 100)
        #expect(throws: LedgerError.insufficientBalance(balance: 100, requested: 101)) { try book.spend(101) }
        try book.spend(60, key: "k1")
        let again = try book.apply(.spend(key: "k1", amount: 60))
        #expect(again.outcome == .duplicate)
        #expect(again.entry?.walletAfter.balance == 40)
        #expect(book.wallet.balance == 40)
        #expect(throws: LedgerError.keyReused(IdempotencyKey(.spend, "k1"))) {
            try book.apply(.spend(key: "k1", amount: 10))
        }
        #expect(throws: LedgerError.invalidAmount(0)) { try book.spend(0) }
        #expect(throws: LedgerError.invalidAmount(-5)) { try book.spend(-5) }
    }

    @Test("grants and adjustments apply once per id")
    func grantsAndAdjustments() throws {
        var book = Book()
        try book.apply(.grant(id: "g1", credits: 400_000, reason: "Ticket #42"))
        #expect(try book.apply(.grant(id: "g1", credits: 400_000, reason: "Ticket #42")).outcome == .duplicate)
        #expect(book.wallet.balance == 400_000)
        try book.apply(.adjustment(id: "a1", delta: -100_000, reason: "typo"))
        #expect(book.wallet.balance == 300_000)
        #expect(throws: LedgerError.insufficientBalance(balance: 300_000, requested: 300_001)) {
            try book.apply(.adjustment(id: "a2", delta: -300_001, reason: "too much"))
        }
        #expect(throws: LedgerError.invalidAmount(0)) { try book.apply(.adjustment(id: "a3", delta: 0, reason: "")) }
        #expect(book.entries.map(\.key.rawValue) == ["grant:g1", "adjustment:a1"])
        #expect(book.audit.isEmpty)
    }

    @Test("a transaction delivered to one user is refused for another")
    func wrongUser() throws {
        var book = Book()
        try book.buy(t1)
        #expect(throws: LedgerError.wrongUser(transactionId: "t1")) {
            try book.apply(.purchase(t1, credits: 100), as: Fixture.otherOwner)
        }
        #expect(throws: LedgerError.wrongUser(transactionId: "t1")) {
            try book.apply(.revocation(t1), as: Fixture.otherOwner)
        }
    }

    @Test("an event naming another product than the one on record is refused")
    func mismatch() throws {
        var book = Book()
        try book.buy(t1)
        var forged = t1
        forged.productId = "com.example.noads"
        #expect(throws: LedgerError.transactionMismatch(transactionId: "t1")) { try book.apply(.revocation(forged)) }
    }

    @Test("keys print and parse as kind:id")
    func keys() {
        #expect(IdempotencyKey(.purchase, "2000000123").rawValue == "purchase:2000000123")
        #expect(IdempotencyKey(rawValue: "spend:a:b") == IdempotencyKey(.spend, "a:b"))
        #expect(IdempotencyKey(rawValue: "bogus:1") == nil)
        #expect(IdempotencyKey(rawValue: "grant:") == nil)
    }

    @Test("the audit finds a tampered wallet, a repeated key and a broken chain")
    func auditFindsProblems() throws {
        var book = Book()
        try book.buy(t1, credits: 100)
        #expect(LedgerAudit.discrepancies(entries: book.entries, wallet: Wallet(balance: 150, deficit: 0)).count == 2)
        #expect(!LedgerAudit.discrepancies(entries: book.entries + book.entries, wallet: book.wallet).isEmpty)
        var broken = book.entries
        broken[0].walletAfter.balance = 99
        #expect(!LedgerAudit.discrepancies(entries: broken, wallet: book.wallet).isEmpty)
    }
}
