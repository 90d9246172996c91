import CofferCore
import CofferTestSupport
import Foundation
import Testing

/// A REFUND with Apple's `revocationPercentage` takes back that share of what the purchase delivered, rounded down;
/// a later full refund takes the rest.
@Suite("Prorated refunds")
struct ProratedRefundTests {
    /// `t1` refunded at `date`, `percentage` milliunits of a percent (nil: in full).
    static func refund(_ percentage: Int?, at date: Date = Fixture.start) -> TransactionFact {
        var fact = Fixture.consumable("t1", revoked: date)
        fact.revocationPercentage = percentage
        return fact
    }

    @Test("a share is taken back, rounded down, and named on the entry; a full refund later takes the rest, once")
    func shareThenRest() throws {
        var book = Book()
        try book.buy(Fixture.consumable("t1"), credits: 400)
        let prorated = try book.apply(.revocation(Self.refund(25_000)))
        #expect(prorated.outcome == .applied && prorated.entry?.amount == -100)
        #expect(prorated.entry?.reason == "prorated refund of 25%: 100 of 400 credits taken back")
        #expect(book.wallet == Wallet(balance: 300, deficit: 0))
        #expect(try book.apply(.revocation(Self.refund(25_000))).outcome == .duplicate)
        let later = Fixture.start.addingTimeInterval(86_400)
        // A refund whose source does not state its share (a legacy receipt, a word kept for nobody) takes no more.
        #expect(try book.apply(.revocation(Self.refund(nil, at: later)), at: later).outcome == .duplicate)
        #expect(book.wallet == Wallet(balance: 300, deficit: 0))
        let full = try book.apply(.revocation(Self.refund(100_000, at: later)), at: later)
        #expect(full.outcome == .applied && full.entry?.amount == -300)
        #expect(full.entry?.key != prorated.entry?.key)
        #expect(book.wallet == Wallet(balance: 0, deficit: 0))
        #expect(book.receipts["t1"]?.refundedCredits == 400)
        #expect(try book.apply(.revocation(Self.refund(100_000, at: later)), at: later).outcome == .duplicate)
        #expect(try book.apply(.revocation(Self.refund(25_000))).outcome == .duplicate, "a smaller share: nothing")
        #expect(book.wallet == Wallet(balance: 0, deficit: 0))
        #expect(book.audit.isEmpty)
    }

    @Test("what was spent of the share becomes the deficit; a reversal restores the share only")
    func spentShareAndReversal() throws {
        for policy in DeficitPolicy.allCases {
            var book = Book(policy: policy)
            try book.buy(Fixture.consumable("t1"), credits: 400)
            try book.spend(350)
            try book.apply(.revocation(Self.refund(50_000)))
            #expect(book.wallet == Wallet(balance: 0, deficit: 150))
            #expect(book.receipts["t1"]?.takenFromBalance == 50 && book.receipts["t1"]?.addedToDeficit == 150)
            let reversal = try book.apply(.reversal(Fixture.consumable("t1"), at: nil))
            #expect(reversal.entry?.amount == 200)
            #expect(book.wallet == Wallet(balance: 50, deficit: 0), "\(policy)")
            #expect(book.audit.isEmpty)
        }
    }

    @Test("growing shares on one date each take their part; a full refund dated before a reversal takes nothing")
    func sameDateAndReversal() throws {
        var book = Book()
        try book.buy(Fixture.consumable("t1"), credits: 400)
        for (share, wallet) in [(25_000, 300), (50_000, 200), (100_000, 0)] as [(Int, Int64)] {
            #expect(try book.apply(.revocation(Self.refund(share))).outcome == .applied)
            #expect(book.wallet.balance == wallet)
        }
        #expect(Set(book.entries.map(\.key)).count == book.entries.count, "a key of its own for each")
        var reversed = Book()
        try reversed.buy(Fixture.consumable("t1"), credits: 400)
        let (d1, d2, d3) = (Fixture.start, Fixture.start.addingTimeInterval(60), Fixture.start.addingTimeInterval(120))
        try reversed.apply(.revocation(Self.refund(25_000, at: d1)), at: d1)
        try reversed.apply(.reversal(Fixture.consumable("t1"), at: d2), at: d2)
        try reversed.apply(.revocation(Self.refund(25_000, at: d3)), at: d3)
        #expect(reversed.wallet.balance == 300)
        // Apple redelivers an old full refund, dated before the reversal: superseded, nothing more is taken.
        #expect(try reversed.apply(.revocation(Self.refund(100_000, at: d1)), at: d3).outcome != .applied)
        #expect(reversed.wallet.balance == 300)
        #expect(reversed.audit.isEmpty)
    }

    @Test("shares round down; a percentage outside Apple's range is a full refund")
    func rounding() {
        #expect(Self.refund(33_333).refundedShare(of: 333) == 110)
        #expect(Self.refund(99_999).refundedShare(of: 1 << 52) == 4_503_554_591_374_222)  // no overflow
        #expect(Self.refund(1).refundedShare(of: 99_999) == 0)
        #expect(Self.refund(100_000).refundedShare(of: 400) == 400)
        #expect(Self.refund(0).refundedShare(of: 400) == 400)
        let read = TransactionFact(
            transactionId: "t", productId: "p", purchaseDate: Fixture.start, revocationPercentage: 250_000)
        #expect(read.revocationPercentage == nil, "not kept outside Apple's range")
        let full = TransactionFact(
            transactionId: "t", productId: "p", purchaseDate: Fixture.start, revocationPercentage: 100_000)
        #expect(full.revocationPercentage == 100_000 && !full.isProratedRefund)
        #expect(Self.refund(-5).refundedShare(of: 400) == 400)
        #expect(Payment.percentText(33_333) == "33.333%" && Payment.percentText(50_500) == "50.5%")
    }
}
