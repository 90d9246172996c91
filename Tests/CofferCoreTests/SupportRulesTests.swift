import CofferCore
import Testing

/// The rules every support action is held to, whichever door it comes through.
@Suite("Support rules")
struct SupportRulesTests {
    @Test("one largest amount: the ledger's, for grants, balances and grant limits alike")
    func largestAmount() throws {
        #expect(SupportRules.maximumAmount == Ledger.maximumAmount)
        #expect(try SupportRules.grantCredits(SupportRules.maximumAmount) == SupportRules.maximumAmount)
        #expect(throws: SupportRuleError.self) { try SupportRules.grantCredits(SupportRules.maximumAmount + 1) }
        #expect(throws: SupportRuleError.self) { try SupportRules.grantCredits(0) }
        #expect(try SupportRules.balance(0) == 0)
        #expect(throws: SupportRuleError.self) { try SupportRules.balance(-1) }
        #expect(throws: SupportRuleError.self) { try SupportRules.balance(.max) }
        #expect(try SupportRules.grantLimit(0) == 0)
        #expect(throws: SupportRuleError.self) { try SupportRules.grantLimit(nil) }
        #expect(throws: SupportRuleError.self) { try SupportRules.grantLimit(SupportRules.maximumAmount + 1) }
    }

    @Test("a reason is required, trimmed, and at most 500 characters")
    func reason() throws {
        #expect(try SupportRules.reason("  Ticket #42\n") == "Ticket #42")
        #expect(throws: SupportRuleError("a reason is required, e.g. \"Ticket #42\"")) {
            try SupportRules.reason(" \n")
        }
        #expect(try SupportRules.reason(String(repeating: "a", count: 500)).count == 500)
        #expect(throws: SupportRuleError.self) { try SupportRules.reason(String(repeating: "a", count: 501)) }
    }

    @Test("a grant fits a limit only with what was granted in its window, never by overflowing")
    func grantLimit() {
        #expect(SupportRules.fitsGrantLimit(.max, used: .max, limit: nil))
        #expect(SupportRules.fitsGrantLimit(400, used: 600, limit: 1_000))
        #expect(!SupportRules.fitsGrantLimit(401, used: 600, limit: 1_000))
        #expect(!SupportRules.fitsGrantLimit(.max, used: 1, limit: 1_000))
        #expect(!SupportRules.fitsGrantLimit(0, used: 1_001, limit: 1_000))
    }

    @Test("a balance edit meets the balance support saw, or is refused saying both")
    func expectedBalance() throws {
        try SupportRules.check(expected: nil, current: 5)
        try SupportRules.check(expected: 5, current: 5)
        #expect(throws: BalanceChanged(expected: 1_200_000, current: 1_200)) {
            try SupportRules.check(expected: 1_200_000, current: 1_200)
        }
        #expect(
            BalanceChanged(expected: 1_200_000, current: 1_200).description.contains("it is 1,200 now, not 1,200,000"))
        #expect(SupportRules.grouped(-1_234_567) == "-1,234,567" && SupportRules.grouped(999) == "999")
    }
}
