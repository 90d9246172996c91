import CofferAPI
import CofferAdmin
import CofferCore
import CofferStore
import Foundation
import Testing

/// A customer's subscription groups as support reads them: the state now and its dates.
@Suite("Subscriptions on the customer page")
struct SubscriptionSummaryTests {
    static let now = Date(timeIntervalSince1970: 1_764_110_400)
    static let owner = UUID()
    static func catalog() throws -> Catalog {
        try Catalog(
            products: [
                CatalogProduct(
                    id: "m", kind: .autoRenewable, entitlements: ["premium"], group: "pro", name: "Pro, monthly"),
                CatalogProduct(
                    id: "y", kind: .autoRenewable, entitlements: ["premium"], group: "pro", name: "Pro, yearly"),
                CatalogProduct(id: "c", kind: .consumable, credits: 5),
            ])
    }

    static func receipt(
        _ id: String, chain: String = "1", product: String = "m", days: (Double, Double), trial: Bool = false,
        upgraded: Bool = false, refunded: Bool = false
    ) -> Receipt {
        var receipt = Receipt(
            owner: owner,
            transaction: TransactionFact(
                transactionId: id, originalTransactionId: chain, productId: product,
                purchaseDate: now.addingTimeInterval(days.0 * 86_400),
                expiresDate: now.addingTimeInterval(days.1 * 86_400), isTrial: trial, isUpgraded: upgraded,
                environment: .sandbox))
        if refunded { receipt.revokedAt = now }
        return receipt
    }

    static func renewal(autoRenews: Bool = true, retry: Bool = false, grace: Double? = nil, next: String? = nil)
        -> RenewalState
    {
        RenewalState(
            originalTransactionId: "1", environment: .sandbox, owner: owner, autoRenewProductId: next,
            autoRenews: autoRenews, inBillingRetry: retry,
            gracePeriodExpiresDate: grace.map { now.addingTimeInterval($0 * 86_400) }, signedDate: now)
    }

    static func view(_ receipts: [Receipt], _ renewals: [RenewalState] = []) throws -> SubscriptionSummary {
        let groups = SubscriptionSummary.groups(receipts: receipts, renewals: renewals, catalog: try catalog(), at: now)
        #expect(groups.count == 1)
        return try #require(groups.first)
    }

    @Test("active, set not to renew, in grace, in billing retry, expired, refunded")
    func states() throws {
        let paid = [Self.receipt("a", days: (-40, -10), trial: true), Self.receipt("b", days: (-10, 20))]
        let active = try Self.view(paid, [Self.renewal()])
        #expect(active.state == .active && active.product == "Pro, monthly" && active.paidPeriods == 1)
        #expect(active.startedAt == Self.now.addingTimeInterval(-40 * 86_400))
        #expect(active.sentence { _ in "T" } == "Active: renews at T.")
        #expect(try Self.view(paid, [Self.renewal(autoRenews: false)]).state == .expiring)
        let lapsed = [Self.receipt("a", days: (-40, -10)), Self.receipt("b", days: (-10, -1))]
        let grace = try Self.view(lapsed, [Self.renewal(retry: true, grace: 5)])
        #expect(grace.state == .inGrace && grace.graceUntil == Self.now.addingTimeInterval(5 * 86_400))
        #expect(try Self.view(lapsed, [Self.renewal(retry: true, grace: -1)]).state == .inBillingRetry)
        #expect(try Self.view(lapsed, [Self.renewal(autoRenews: false)]).state == .expired)
        #expect(try Self.view(lapsed).state == .expired)
        #expect(try Self.view([Self.receipt("b", days: (-10, 20), refunded: true)]).state == .refunded)
    }

    @Test("an upgrade shows the period it became, and a change at renewal is named")
    func upgrades() throws {
        let upgraded = [
            Self.receipt("a", days: (-10, 20), upgraded: true),
            Self.receipt("b", product: "y", days: (-1, 364)),
        ]
        let view = try Self.view(upgraded, [Self.renewal(next: "y")])
        #expect(view.product == "Pro, yearly" && view.state == .active && view.renewsInto == nil)
        #expect(view.upgradedFrom == "Pro, monthly" && view.upgradedAt == Self.now.addingTimeInterval(-86_400))
        #expect(view.sentence { _ in "T" } == "Active: renews at T. Upgraded from Pro, monthly at T.")
        let downgrade = try Self.view([Self.receipt("b", product: "y", days: (-1, 364))], [Self.renewal(next: "m")])
        #expect(downgrade.renewsInto == "Pro, monthly" && downgrade.upgradedFrom == nil)
        #expect(downgrade.sentence { _ in "T" } == "Active: renews at T into Pro, monthly.")
        let none = SubscriptionSummary.groups(
            receipts: [
                Receipt(
                    owner: Self.owner,
                    transaction: TransactionFact(transactionId: "c1", productId: "c", purchaseDate: Self.now))
            ], renewals: [], catalog: try Self.catalog(), at: Self.now)
        #expect(none.isEmpty)
    }

    @Test("paid periods are the loyalty rule's: no refund, trial, family-shared or upgraded-away period counts")
    func paidPeriodsAreLoyalty() throws {
        var shared = Self.receipt("s", days: (-70, -40))
        shared.transaction.isFamilyShared = true
        var reversed = Self.receipt("r", days: (-100, -70), refunded: true)
        reversed.reversedAt = Self.now.addingTimeInterval(60)
        let receipts = [
            Self.receipt("t", days: (-130, -100), trial: true), reversed, shared,
            Self.receipt("x", days: (-40, -10), refunded: true), Self.receipt("u", days: (-10, 20), upgraded: true),
            Self.receipt("y", product: "y", days: (-1, 364)),
        ]
        let view = try Self.view(receipts)
        // The reversed refund and the yearly period count; the rest do not.
        #expect(view.paidPeriods == 2)
        let catalog = try Catalog(
            products: try Self.catalog().products,
            loyalty: [LoyaltyRule(group: "pro", periods: 2, entitlements: ["lifetime"])])
        let facts = receipts.map { receipt in
            var fact = receipt.transaction
            fact.revocationDate = receipt.isRevoked ? Self.now : nil
            return fact
        }
        let loyalty = Entitlements.evaluate(facts, catalog: catalog, at: Self.now)
        #expect(loyalty.paidPeriods["pro"] == view.paidPeriods && loyalty.hasLoyaltyLifetime)
    }

    @Test("a status has access while paid up or in grace, and only then")
    func access() {
        let now = Self.now
        func status(expires: Double, renews: Bool? = true, grace: Double? = nil, retry: Bool = false)
            -> SubscriptionState
        {
            SubscriptionState.of(
                revoked: false, expiresDate: now.addingTimeInterval(expires), autoRenews: renews,
                graceUntil: grace.map { now.addingTimeInterval($0) }, inBillingRetry: retry, at: now)
        }
        #expect(status(expires: 60) == .active && status(expires: 60, renews: nil) == .active)
        #expect(status(expires: 60, renews: false) == .expiring)
        #expect(status(expires: -60, grace: 60, retry: true) == .inGrace)
        #expect(status(expires: -60, grace: -1, retry: true) == .inBillingRetry)
        #expect(status(expires: 0) == .expired)
        let access = SubscriptionState.allCases.filter(\.givesAccess)
        #expect(access == [.active, .expiring, .inGrace])
    }
}
