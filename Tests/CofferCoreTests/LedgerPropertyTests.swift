import CofferCore
import CofferTestSupport
import Foundation
import PropertyBased
import Testing

@Suite("Ledger properties")
struct LedgerPropertyTests {
    @Test("random event sequences: no key twice, the books balance, nothing negative, each purchase nets once")
    func randomSequences() async {
        await propertyCheck(count: 400, input: Gen.int(in: 0...Int(Int32.max)).array(of: 1...80), Gen.bool) {
            codes, forgive in
            var book = Book(policy: forgive ? .forgive : .collect)
            for code in codes {
                let event = RandomEvent(code).event
                do {
                    try book.apply(event)
                } catch LedgerError.insufficientBalance, LedgerError.keyReused {
                    // Refusals the random world produces on purpose: overspending, a grant id reused.
                } catch {
                    Issue.record("unexpected refusal \(error) of \(event)")
                }
                #expect(book.audit.isEmpty, "\(book.audit)")
                #expect(book.wallet.balance >= 0 && book.wallet.deficit >= 0)
            }

            func total(_ kind: LedgerEntryKind) -> Int64 {
                book.entries.filter { $0.key.kind == kind }.reduce(0) { $0 + $1.amount }
            }
            let delivered = total(.purchase)
            let takenBack = -total(.revocation)
            let reversed = total(.reversal)
            let granted = total(.grant)
            let adjusted = total(.adjustment)
            let spent = -total(.spend)
            #expect(
                book.wallet.balance == delivered - takenBack + reversed + granted + adjusted - spent
                    + book.wallet.deficit)

            for receipt in book.receipts.values {
                let id = receipt.transaction.transactionId
                let net = book.entries.filter { $0.transactionId == id }.reduce(0) { $0 + $1.amount }
                let paid = receipt.status == .delivered || receipt.status == .restored
                #expect(net == (paid ? receipt.deliveredCredits ?? 0 : 0), "transaction \(id) nets \(net)")
                #expect(book.entries.filter { $0.key == IdempotencyKey(.purchase, id) }.count <= 1)
            }
        }
    }

    @Test("entitlements from the ledger's receipts equal a from-scratch recomputation of Apple's history")
    func entitlementsMatchHistory() async throws {
        let catalog = try Fixture.catalog()
        let history = Gen.int(in: 0...5).array(of: 0...16)
        await propertyCheck(count: 300, input: history, Gen.int(in: 0...1_000_000).array(of: 64), Gen.int(in: 0...500))
        {
            fates, shuffle, day in
            // Apple's truth: month i is paid (0-2), refunded (3), refunded then reversed (4), or a trial (5).
            var truth: [TransactionFact] = []
            var events: [LedgerEvent] = []
            for (month, fate) in fates.enumerated() {
                let paid = Fixture.month(month, trial: fate == 5 && month == 0)
                let refunded = Fixture.month(month, revoked: true)
                events.append(.purchase(paid, credits: 0))
                if fate >= 3 && fate <= 4 { events.append(.revocation(refunded)) }
                // Apple dates the reversal after the refund; the ledger decides by that date, not arrival.
                let reversedAt = refunded.revocationDate?.addingTimeInterval(Fixture.day)
                if fate == 4 { events.append(.reversal(paid, at: reversedAt)) }
                truth.append(fate == 3 ? refunded : paid)
            }
            // Deliver in a random order, with some events twice.
            let doubled =
                events + events.enumerated().filter { shuffle[$0.offset % shuffle.count] % 3 == 0 }.map(\.element)
            let order = doubled.indices.sorted { (shuffle[$0 % shuffle.count], $0) < (shuffle[$1 % shuffle.count], $1) }
            var book = Book()
            for index in order {
                do { try book.apply(doubled[index]) } catch { Issue.record("refused \(error)") }
            }
            let now = Fixture.start.addingTimeInterval(Double(day) * Fixture.day)
            let fromLedger = Entitlements.evaluate(book.receipts.values.map(\.transaction), catalog: catalog, at: now)
            let fromApple = Entitlements.evaluate(truth, catalog: catalog, at: now)
            #expect(fromLedger == fromApple)
        }
    }
}
