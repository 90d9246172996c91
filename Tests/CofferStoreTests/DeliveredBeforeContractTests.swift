import CofferCore
import CofferStore
import Foundation
import Testing

/// Purchases the app delivered before it used Coffer, on every engine: never credited, never counted as bought
/// the day Coffer recorded them.
@Suite("Store contract: purchases delivered before Coffer", .timeLimit(.minutes(1)))
struct DeliveredBeforeContractTests {
    @Test(
        "refunded before Coffer, then reversed: recorded, and never credited, however often it is presented",
        arguments: StoreEngine.allCases)
    func refundedBeforeThenReversed(engine: StoreEngine) async throws {
        let store = try await engine.makeStore()
        let alice = Make.user("_aaaaaaaaaaa1")
        try await store.createUser(alice)
        func apply(_ event: LedgerEvent) async throws -> LedgerResult {
            try await store.apply(LedgerRequest(owner: alice.id, environment: .sandbox, event: event, at: Make.start))
        }
        let refunded = Make.fact("old-1", revoked: true)
        #expect(try await apply(.deliveredBeforeCoffer(refunded, credits: 300)).outcome == .revoked)
        var paid = refunded
        paid.revocationDate = nil
        _ = try await apply(.reversal(paid, at: Make.start.addingTimeInterval(120)))
        #expect(try await store.wallet(owner: alice.id, environment: .sandbox) == .empty)
        // Presented again now that Apple says it is paid: the old app delivered it; nothing is credited.
        let again = try await apply(.purchase(paid, credits: 300))
        #expect(again.outcome == .duplicate && again.wallet == .empty)
        let receipt = try #require(try await store.receipt(transactionId: "old-1", environment: .sandbox))
        #expect(receipt.deliveredBeforeCoffer && receipt.deliveredCredits == 0 && !receipt.isRevoked)

        // The refund on record first (from the history), then the first launch with Coffer says the old app
        // delivered it: the same, never credited after a reversal.
        let earlier = Make.fact("old-2", revoked: true)
        _ = try await apply(.revocation(earlier))
        #expect(try await apply(.deliveredBeforeCoffer(earlier, credits: 300)).outcome == .revoked)
        var reversed = earlier
        reversed.revocationDate = nil
        _ = try await apply(.reversal(reversed, at: Make.start.addingTimeInterval(120)))
        #expect(try await apply(.purchase(reversed, credits: 300)).wallet == .empty)
    }

    @Test(
        "the dashboard counts no purchase or revenue for what the app delivered before Coffer",
        arguments: StoreEngine.allCases)
    func dashboard(engine: StoreEngine) async throws {
        let store = try await engine.makeStore()
        let alice = Make.user("_aaaaaaaaaaa1")
        try await store.createUser(alice)
        var old = Make.fact("old-1")
        old.price = 9_990
        old.currency = "USD"
        var bought = Make.fact("new-1")
        bought.price = 990
        bought.currency = "USD"
        for event in [LedgerEvent.deliveredBeforeCoffer(old, credits: 400), .purchase(bought, credits: 400)] {
            _ = try await store.apply(
                LedgerRequest(owner: alice.id, environment: .sandbox, event: event, at: Make.start))
        }
        let figures = try await store.dashboard(environment: .sandbox, days: 30, now: Make.start.addingTimeInterval(60))
        #expect(figures.purchases == 1)
        #expect(figures.days.map(\.purchases).reduce(0, +) == 1)
        #expect(figures.revenue.map(\.amount) == [990])
    }
}
