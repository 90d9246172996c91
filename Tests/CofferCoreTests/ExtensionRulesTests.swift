import CofferCore
import CofferTestSupport
import Foundation
import Testing

/// Subscription extensions: Apple's limits for support's requests, and the ledger learning an extended period.
@Suite("Extension rules")
struct ExtensionRulesTests {
    @Test("days 1 to 90, Apple's four reason codes, storefronts of three capital letters each once")
    func limits() throws {
        #expect(try SupportRules.extensionDays(1) == 1 && SupportRules.extensionDays(90) == 90)
        for days in [0, -1, 91, Int.max] {
            #expect(throws: SupportRuleError.self) { try SupportRules.extensionDays(days) }
        }
        for code in 0...3 { #expect(try SupportRules.extensionReasonCode(code) == Int32(code)) }
        for code in [-1, 4, Int.max] {
            #expect(throws: SupportRuleError.self) { try SupportRules.extensionReasonCode(code) }
        }
        #expect(try SupportRules.storefronts(["USA", "FRA"]) == ["USA", "FRA"])
        for codes in [["us"], ["USA", "USA"], ["US1"], Array(repeating: "USA", count: 251)] {
            #expect(throws: SupportRuleError.self) { try SupportRules.storefronts(codes) }
        }
    }

    @Test("Apple's newer word on a delivered period moves its end later, never earlier, and credits nothing")
    func extendedPeriod() throws {
        let start = Fixture.start
        let period = TransactionFact(
            transactionId: "s1", productId: "com.example.pro.monthly", quantity: 1, purchaseDate: start,
            expiresDate: start.addingTimeInterval(30 * 86_400))
        var book = Book()
        try book.buy(period, credits: 0)
        var extended = period
        extended.expiresDate = start.addingTimeInterval(37 * 86_400)
        let decision = try book.buy(extended, credits: 0)
        #expect(decision.outcome == .duplicate)
        #expect(book.receipts["s1"]?.transaction.expiresDate == extended.expiresDate)
        // An older copy of the signed data, presented again, does not shorten it.
        try book.buy(period, credits: 0)
        #expect(book.receipts["s1"]?.transaction.expiresDate == extended.expiresDate)
        #expect(book.entries.count == 1 && book.wallet == .empty)
    }
}
