import CofferCore
import CofferTestSupport
import Foundation
import Testing

@Suite("Entitlements")
struct EntitlementTests {
    let catalog: Catalog
    init() throws { catalog = try Fixture.catalog() }

    func evaluate(_ facts: [TransactionFact], at date: Date, grace: [String: Date] = [:]) -> EntitlementState {
        Entitlements.evaluate(facts, catalog: catalog, gracePeriods: grace, at: date)
    }

    func noAds(_ id: String, day: Double, revoked: Bool = false) -> TransactionFact {
        TransactionFact(
            transactionId: id, productId: "com.example.noads",
            purchaseDate: Fixture.start.addingTimeInterval(day * Fixture.day),
            revocationDate: revoked ? Fixture.start.addingTimeInterval((day + 1) * Fixture.day) : nil)
    }

    @Test("buy, refund, buy again: only the latest transaction per product counts")
    func buyRefundBuy() {
        let later = Fixture.start.addingTimeInterval(30 * Fixture.day)
        #expect(evaluate([noAds("a", day: 0)], at: later).isUnlocked("adFree"))
        #expect(!evaluate([noAds("a", day: 0, revoked: true)], at: later).isUnlocked("adFree"))
        #expect(evaluate([noAds("a", day: 0, revoked: true), noAds("b", day: 5)], at: later).isUnlocked("adFree"))
        #expect(!evaluate([noAds("a", day: 0), noAds("b", day: 5, revoked: true)], at: later).isUnlocked("adFree"))
    }

    @Test("a subscription is active until expiresDate, through a grace period, and not after revocation")
    func subscriptionWindow() {
        let period = Fixture.month(0)
        let inside = Fixture.start.addingTimeInterval(10 * Fixture.day)
        let after = Fixture.start.addingTimeInterval(31 * Fixture.day)
        #expect(evaluate([period], at: inside).isPremium)
        #expect(evaluate([period], at: inside).isSubscribed)
        #expect(!evaluate([period], at: after).isPremium)
        let grace = ["sub-0": Fixture.start.addingTimeInterval(36 * Fixture.day)]
        #expect(evaluate([period], at: after, grace: grace).isPremium)
        #expect(!evaluate([period], at: Fixture.start.addingTimeInterval(37 * Fixture.day), grace: grace).isPremium)
        #expect(!evaluate([Fixture.month(0, revoked: true)], at: inside).isPremium)
    }

    @Test("an upgraded subscription stops counting")
    func upgraded() {
        var period = Fixture.month(0)
        period.isUpgraded = true
        #expect(!evaluate([period], at: Fixture.start.addingTimeInterval(Fixture.day)).isPremium)
    }

    @Test("12 paid months, not necessarily consecutive, unlock the loyalty lifetime")
    func loyaltyEarned() {
        let months = [0, 1, 2, 4, 5, 7, 8, 9, 12, 13, 15, 18].map { Fixture.month($0) }
        let muchLater = Fixture.start.addingTimeInterval(800 * Fixture.day)
        let state = evaluate(months, at: muchLater)
        #expect(state.paidPeriods["pro"] == 12)
        #expect(state.hasLifetime)
        #expect(state.hasLoyaltyLifetime)
        #expect(!state.hasPurchasedLifetime)
        #expect(!state.isSubscribed)
        #expect(state.isPremium)
        #expect(state.sources["lifetime"] == [.loyalty(group: "pro", periods: 12)])
    }

    @Test("12 months with one refunded is not lifetime; a 13th paid month earns it back")
    func loyaltyRefunded() {
        var months = (0..<12).map { Fixture.month($0, revoked: $0 == 3) }
        let later = Fixture.start.addingTimeInterval(800 * Fixture.day)
        let state = evaluate(months, at: later)
        #expect(state.paidPeriods["pro"] == 11)
        #expect(!state.hasLifetime)
        #expect(!state.isPremium)
        months.append(Fixture.month(12))
        #expect(evaluate(months, at: later).hasLoyaltyLifetime)
    }

    @Test("free trial periods do not count toward loyalty")
    func trialsDoNotCount() {
        let months = [Fixture.month(0, trial: true)] + (1..<12).map { Fixture.month($0) }
        let state = evaluate(months, at: Fixture.start.addingTimeInterval(800 * Fixture.day))
        #expect(state.paidPeriods["pro"] == 11)
        #expect(!state.hasLifetime)
    }

    @Test("a purchased lifetime is tracked apart and never taken by loyalty refunds")
    func purchasedLifetimeKept() {
        let lifetime = TransactionFact(
            transactionId: "life", productId: "com.example.pro.lifetime",
            purchaseDate: Fixture.start.addingTimeInterval(Fixture.day))
        let earned = (0..<12).map { Fixture.month($0) }
        let later = Fixture.start.addingTimeInterval(800 * Fixture.day)
        let both = evaluate(earned + [lifetime], at: later)
        #expect(both.hasPurchasedLifetime && both.hasLoyaltyLifetime)
        let refunded = (0..<12).map { Fixture.month($0, revoked: $0 < 2) }
        let afterRefunds = evaluate(refunded + [lifetime], at: later)
        #expect(!afterRefunds.hasLoyaltyLifetime)
        #expect(afterRefunds.hasPurchasedLifetime)
        #expect(afterRefunds.isPremium)
    }

    @Test("consumables, unknown products and future transactions unlock nothing")
    func nothingUnlocked() {
        let now = Fixture.start.addingTimeInterval(Fixture.day)
        let unknown = TransactionFact(transactionId: "u", productId: "com.example.unknown", purchaseDate: Fixture.start)
        let future = noAds("f", day: 5)
        let state = evaluate([Fixture.consumable("c"), unknown, future], at: now)
        #expect(state.names.isEmpty)
    }

    @Test("a purchase dated up to an hour after now counts: Apple's clock, which this machine's may trail")
    func clockTolerance() {
        let bought = noAds("t", day: 1)
        let tolerance = Entitlements.clockTolerance
        #expect(evaluate([bought], at: bought.purchaseDate.addingTimeInterval(-tolerance)).isUnlocked("adFree"))
        #expect(!evaluate([bought], at: bought.purchaseDate.addingTimeInterval(-tolerance - 1)).isUnlocked("adFree"))
    }

    @Test("non-renewing subscriptions lapse after their duration")
    func nonRenewing() throws {
        let catalog = try Catalog(products: [
            CatalogProduct(id: "season", kind: .nonRenewing, entitlements: ["season"], durationDays: 90)
        ])
        let fact = TransactionFact(transactionId: "s", productId: "season", purchaseDate: Fixture.start)
        #expect(
            Entitlements.evaluate([fact], catalog: catalog, at: Fixture.start.addingTimeInterval(89 * Fixture.day))
                .isUnlocked("season"))
        #expect(
            !Entitlements.evaluate([fact], catalog: catalog, at: Fixture.start.addingTimeInterval(90 * Fixture.day))
                .isUnlocked("season"))
    }

    @Test("family-shared subscriptions unlock access but do not count toward loyalty")
    func familyShared() {
        let months = (0..<12).map { index -> TransactionFact in
            var month = Fixture.month(index)
            month.isFamilyShared = true
            return month
        }
        let state = evaluate(months, at: Fixture.start.addingTimeInterval(335 * Fixture.day))
        #expect(state.isSubscribed)
        #expect(state.paidPeriods["pro"] == 0)
    }
}
