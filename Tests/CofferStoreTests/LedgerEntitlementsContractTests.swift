import CofferCore
import CofferStore
import CofferTestSupport
import Foundation
import Testing

/// The entitlements a ledger write answers with (``LedgerRequest/entitlementCatalog``), on every engine
/// (``StoreEngine``): read in the write's transaction, they are what a read after the commit gives.
@Suite("LedgerStore contract: the entitlements a write answers with")
struct LedgerEntitlementsContractTests {
    static let catalog: Catalog = {
        let products = [
            CatalogProduct(
                id: "com.example.pro.monthly", kind: .autoRenewable, entitlements: ["premium"], group: "pro"),
            CatalogProduct(id: "com.example.noads", kind: .nonConsumable, entitlements: ["adFree"]),
            CatalogProduct(id: "com.example.credits.400k", kind: .consumable, credits: 400),
        ]
        let loyalty = [LoyaltyRule(group: "pro", periods: 1, entitlements: ["lifetime"])]
        guard let catalog = try? Catalog(products: products, loyalty: loyalty) else { fatalError("the catalog") }
        return catalog
    }()

    /// A day after ``Make/start``: the subscription (an hour long) has expired and is in its grace period.
    static let at = Make.start.addingTimeInterval(86_400)

    static func fact(_ id: String, _ product: String) -> TransactionFact {
        var fact = Make.fact(id)
        fact.productId = product
        (fact.isTrial, fact.isUpgraded) = (false, false)
        return fact
    }

    static func request(_ event: LedgerEvent, for user: User, asking: Bool = true) -> LedgerRequest {
        LedgerRequest(
            owner: user.id, environment: user.environment, event: event, at: at,
            entitlementCatalog: asking ? catalog : nil)
    }

    @Test(
        "a batch's answers carry each customer's entitlements after it: purchases, grace, grants, loyalty",
        arguments: StoreEngine.allCases)
    func batch(engine: StoreEngine) async throws {
        let store = try await engine.makeStore()
        let (alice, bob) = (Make.user("_aaaaaaaaaaa1"), Make.user("_bbbbbbbbbbb2"))
        try await store.createUser(alice)
        try await store.createUser(bob)
        // Alice: a subscription an hour long, in its billing grace period for two days; support's grants, one
        // unlocking now, one ended, one not started.
        _ = try await store.apply(
            Self.request(.purchase(Self.fact("s1", "com.example.pro.monthly"), credits: 0), for: alice, asking: false))
        _ = try await store.saveRenewalState(
            RenewalState(
                originalTransactionId: "orig-s1", environment: .sandbox, owner: alice.id, autoRenews: true,
                inBillingRetry: true, gracePeriodExpiresDate: Make.start.addingTimeInterval(2 * 86_400),
                signedDate: Make.start))
        // Two grants of one entitlement unlock together: the answer keeps both, in the read's order.
        let grants = [("vip", 0.0, 7.0), ("vip", 60.0, 3.0), ("ended", -86_400.0, 0.5), ("later", 7_200.0 * 24, 1)]
        for (entitlement, start, days) in grants {
            try await store.createEntitlementGrant(
                EntitlementGrant(
                    environment: .sandbox, recipient: alice.id, entitlement: entitlement,
                    startsAt: Make.start.addingTimeInterval(start),
                    endsAt: Make.start.addingTimeInterval(start + days * 86_400), reason: "Ticket #9", createdBy: "ada"),
                audit: [])
        }
        let stranger = UUID()
        let results = try await store.apply([
            Self.request(.purchase(Self.fact("n1", "com.example.noads"), credits: 0), for: alice),
            Self.request(.purchase(Self.fact("c1", "com.example.credits.400k"), credits: 400), for: bob),
            Self.request(.purchase(Self.fact("c2", "com.example.credits.400k"), credits: 400), for: alice),
            LedgerRequest(
                owner: stranger, environment: .sandbox, event: .purchase(Make.fact("c3"), credits: 400), at: Self.at,
                entitlementCatalog: Self.catalog),
            Self.request(.purchase(Self.fact("c4", "com.example.credits.400k"), credits: 400), for: bob, asking: false),
            // Delivered already: a duplicate answers with the entitlements too.
            Self.request(.purchase(Self.fact("s1", "com.example.pro.monthly"), credits: 0), for: alice),
        ])
        #expect(results.count == 6)
        let aliceAfter = try await store.entitlementState(of: alice, catalog: Self.catalog, at: Self.at)
        let bobAfter = try await store.entitlementState(of: bob, catalog: Self.catalog, at: Self.at)
        // The premise: each source counts (the purchase in this batch, the grace period, one grant, loyalty).
        #expect(aliceAfter.names == ["adFree", "lifetime", "premium", "vip"])
        #expect(aliceAfter.paidPeriods == ["pro": 1])
        #expect(aliceAfter.sources["vip"]?.count == 2)
        #expect(bobAfter.names.isEmpty)

        #expect(try results[0].get().entitlements == aliceAfter)
        #expect(try results[1].get().entitlements == bobAfter)
        #expect(try results[2].get().entitlements == aliceAfter)
        #expect(throws: LedgerError.self) { try results[3].get() }
        #expect(try results[4].get().entitlements == nil)
        #expect(try results[5].get().outcome == .duplicate)
        #expect(try results[5].get().entitlements == aliceAfter)
    }

    @Test("a refund in the batch takes its entitlement away in the answer", arguments: StoreEngine.allCases)
    func refund(engine: StoreEngine) async throws {
        let store = try await engine.makeStore()
        let alice = Make.user("_aaaaaaaaaaa1")
        try await store.createUser(alice)
        let bought = try await store.apply(
            Self.request(.purchase(Self.fact("n1", "com.example.noads"), credits: 0), for: alice))
        #expect(bought.entitlements?.names == ["adFree"])
        var refunded = Self.fact("n1", "com.example.noads")
        refunded.revocationDate = Make.start.addingTimeInterval(60)
        let taken = try await store.apply(Self.request(.revocation(refunded), for: alice))
        #expect(taken.outcome == .applied)
        #expect(taken.entitlements?.names == [])
        #expect(try await store.entitlements(of: alice, catalog: Self.catalog, at: Self.at).isEmpty)
    }
}
