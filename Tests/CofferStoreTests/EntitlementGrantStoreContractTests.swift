import CofferCore
import CofferStore
import CofferTestSupport
import Foundation
import Testing

/// The ``EntitlementGrantStore`` contract every engine keeps (``StoreEngine``): support's entitlements for a time,
/// each customer's own, cancelled once, moved by a merge and ended by a deletion; and the entitlements they unlock,
/// with nothing counted toward loyalty.
@Suite("EntitlementGrantStore contract")
struct EntitlementGrantStoreContractTests {
    static func grant(_ recipient: UUID, _ entitlement: String = "premium", from start: TimeInterval, days: Double)
        -> EntitlementGrant
    {
        EntitlementGrant(
            environment: .sandbox, recipient: recipient, entitlement: entitlement,
            startsAt: Make.start.addingTimeInterval(start),
            endsAt: Make.start.addingTimeInterval(start + days * 86_400),
            reason: "Ticket #9", createdBy: "ada")
    }

    static func catalog() throws -> Catalog {
        try Catalog(products: [
            CatalogProduct(
                id: "com.example.pro.monthly", kind: .autoRenewable, entitlements: ["premium"], group: "pro"),
            CatalogProduct(id: "com.example.noads", kind: .nonConsumable, entitlements: ["adFree"]),
        ])
    }

    @Test("a customer's grants, newest first; cancelled once; none for a stranger", arguments: StoreEngine.allCases)
    func grants(engine: StoreEngine) async throws {
        let store = try await engine.makeStore()
        let alice = Make.user("_aaaaaaaaaaa1")
        try await store.createUser(alice)
        let (first, second) = (
            Self.grant(alice.id, from: 0, days: 7), Self.grant(alice.id, "adFree", from: 60, days: 1)
        )
        let audit = AuditEvent(
            environment: .sandbox, actor: "ada", action: "entitlement.grant", subject: alice.supportId.rawValue,
            at: Make.start)
        try await store.createEntitlementGrant(first, audit: [audit])
        try await store.createEntitlementGrant(second, audit: [])
        await #expect {
            try await store.createEntitlementGrant(first, audit: [])
        } throws: { error in
            if case StoreError.alreadyExists = error { true } else { false }
        }
        await #expect {
            try await store.createEntitlementGrant(Self.grant(UUID(), from: 0, days: 1), audit: [])
        } throws: { error in
            if case StoreError.notFound = error { true } else { false }
        }
        #expect(try await store.entitlementGrants(environment: .sandbox, recipient: alice.id) == [second, first])
        #expect(try await store.entitlementGrants(environment: .production, recipient: alice.id).isEmpty)
        #expect(
            try await store.auditEvents(environment: .sandbox, subject: alice.supportId.rawValue, limit: 10).count == 1)

        let at = Make.start.addingTimeInterval(3_600)
        let cancelled = try await store.cancelEntitlementGrant(id: first.id, environment: .sandbox, by: "bo", at: at) {
            _ in []
        }
        #expect(cancelled.cancelledAt == at && cancelled.cancelledBy == "bo" && !cancelled.isActive(at: at))
        let again = try await store.cancelEntitlementGrant(
            id: first.id, environment: .sandbox, by: "cy", at: at.addingTimeInterval(60)
        ) { _ in [] }
        #expect(again == cancelled)
        await #expect(throws: StoreError.self) {
            _ = try await store.cancelEntitlementGrant(id: UUID(), environment: .sandbox, by: "bo", at: at) { _ in [] }
        }
        #expect(try await store.entitlementGrants(environment: .sandbox, recipient: alice.id).last == cancelled)
    }

    @Test(
        "what a grant unlocks: until it ends or is cancelled, beside purchases, never a paid period",
        arguments: StoreEngine.allCases)
    func unlocks(engine: StoreEngine) async throws {
        let store = try await engine.makeStore()
        let alice = Make.user("_aaaaaaaaaaa1")
        try await store.createUser(alice)
        let catalog = try Catalog(
            products: [
                CatalogProduct(
                    id: "com.example.pro.monthly", kind: .autoRenewable, entitlements: ["premium"], group: "pro")
            ], loyalty: [LoyaltyRule(group: "pro", periods: 1, entitlements: ["lifetime"])])
        let grant = Self.grant(alice.id, from: 0, days: 7)
        try await store.createEntitlementGrant(grant, audit: [])
        let during = Make.start.addingTimeInterval(86_400)
        let state = try await store.entitlementState(of: alice, catalog: catalog, at: during)
        #expect(state.names == ["premium"] && state.sources["premium"] == [.granted(until: grant.endsAt)])
        // Loyalty never counts it.
        #expect(state.paidPeriods["pro", default: 0] == 0 && !state.names.contains("lifetime"))
        #expect(try await store.entitlements(of: alice, catalog: catalog, at: grant.endsAt).isEmpty)
        _ = try await store.cancelEntitlementGrant(id: grant.id, environment: .sandbox, by: "bo", at: during) { _ in []
        }
        #expect(try await store.entitlements(of: alice, catalog: catalog, at: during.addingTimeInterval(1)).isEmpty)
    }

    @Test("a merge moves the grants; a deletion ends them and removes their reasons", arguments: StoreEngine.allCases)
    func mergeAndDeletion(engine: StoreEngine) async throws {
        let store = try await engine.makeStore()
        let (anonymous, account) = try await MergeContractTests.customers(store)
        let grant = Self.grant(anonymous.id, from: 0, days: 7)
        try await store.createEntitlementGrant(grant, audit: [])
        _ = try await store.mergeUser(
            UserMerge(
                from: anonymous.id, into: account.id, environment: .sandbox, movesBackup: false,
                at: Make.start.addingTimeInterval(60)))
        #expect(try await store.entitlementGrants(environment: .sandbox, recipient: anonymous.id).isEmpty)
        #expect(try await store.entitlementGrants(environment: .sandbox, recipient: account.id).map(\.id) == [grant.id])
        #expect(
            try await store.entitlements(
                of: account, catalog: try Self.catalog(), at: Make.start.addingTimeInterval(90))
                == ["premium"])
        // One that ended on its own before the deletion stays as it ended; the live one is ended by the deletion.
        let past = Self.grant(account.id, "adFree", from: -7_200, days: 1.0 / 24)
        try await store.createEntitlementGrant(past, audit: [])
        let at = Make.start.addingTimeInterval(120)
        _ = try await store.deleteUser(UserDeletion(user: account.id, environment: .sandbox, actor: "ada", at: at))
        let after = try await store.entitlementGrants(environment: .sandbox, recipient: account.id)
        let ended = try #require(after.first { $0.id == grant.id })
        #expect(ended.cancelledAt == at && ended.cancelledBy == "ada" && ended.reason == UserDeletion.removedReason)
        let pastAfter = try #require(after.first { $0.id == past.id })
        #expect(pastAfter.cancelledAt == nil && pastAfter.reason == UserDeletion.removedReason)
        await #expect(throws: StoreError.self) {
            try await store.createEntitlementGrant(Self.grant(account.id, from: 200, days: 1), audit: [])
        }
    }
}
