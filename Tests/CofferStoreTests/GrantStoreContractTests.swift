import CofferCore
import CofferStore
import CofferTestSupport
import Foundation
import Testing

/// The ``GrantStore`` contract every engine keeps (``StoreEngine``): grants: listed, claimed once by their recipient, cancelled once.
@Suite("GrantStore contract")
struct GrantStoreContractTests {
    @Test(
        "grants: listed by status and recipient, claimed once by their recipient only", arguments: StoreEngine.allCases)
    func grants(engine: StoreEngine) async throws {
        let store = try await engine.makeStore()
        let alice = Make.user("_aaaaaaaaaaa1")
        let bob = Make.user("_bbbbbbbbbbb2")
        try await store.createUser(alice)
        try await store.createUser(bob)
        let grant = Grant(
            environment: .sandbox, recipient: alice.id, credits: 400_000, reason: "Ticket #42", createdBy: "support",
            createdAt: Make.start)
        let other = Grant(
            environment: .sandbox, recipient: bob.id, credits: 5, reason: "sorry", createdBy: "support",
            createdAt: Make.start.addingTimeInterval(1))
        try await store.createGrant(grant)
        try await store.createGrant(other)
        await #expect(throws: StoreError.self) { try await store.createGrant(grant) }
        var orphan = grant
        orphan.id = UUID()
        orphan.environment = .production
        await #expect(throws: StoreError.self) { try await store.createGrant(orphan) }

        #expect(
            try await store.grants(environment: .sandbox, recipient: nil, status: nil, limit: 10) == [other, grant])
        #expect(
            try await store.grants(environment: .sandbox, recipient: alice.id, status: .pending, limit: 10) == [grant])
        #expect(try await store.grants(environment: .production, recipient: nil, status: nil, limit: 10).isEmpty)

        await #expect(throws: StoreError.wrongUser("grant \(grant.id)")) {
            try await store.claimGrant(
                id: grant.id, recipient: bob.id, environment: .sandbox, crediting: .collect, at: Make.start)
        }
        await #expect(throws: StoreError.notFound("grant \(grant.id)")) {
            try await store.claimGrant(
                id: grant.id, recipient: alice.id, environment: .production, crediting: nil, at: Make.start)
        }
        let claimedAt = Make.start.addingTimeInterval(60)
        let claimed = try await store.claimGrant(
            id: grant.id, recipient: alice.id, environment: .sandbox, crediting: .collect, at: claimedAt)
        #expect(claimed.claimedAt == claimedAt)
        let again = try await store.claimGrant(
            id: grant.id, recipient: alice.id, environment: .sandbox, crediting: .collect,
            at: Make.start.addingTimeInterval(120))
        #expect(again == claimed)
        #expect(try await store.wallet(owner: alice.id, environment: .sandbox).balance == 400_000)
        let entries = try await store.entries(owner: alice.id, environment: .sandbox)
        #expect(entries.map(\.key) == [IdempotencyKey(.grant, grant.id.uuidString.lowercased())])
        #expect(entries.first?.reason == "Ticket #42")
        #expect(try await store.grants(environment: .sandbox, recipient: nil, status: .claimed, limit: 10) == [claimed])
        // Device wallet: claiming records the claim and leaves the server ledger alone.
        _ = try await store.claimGrant(
            id: other.id, recipient: bob.id, environment: .sandbox, crediting: nil, at: claimedAt)
        #expect(try await store.entries(owner: bob.id, environment: .sandbox).isEmpty)
    }

    @Test(
        "a pending grant is cancelled once, never claimed after; a claimed one is never cancelled",
        arguments: StoreEngine.allCases)
    func cancelGrants(engine: StoreEngine) async throws {
        let store = try await engine.makeStore()
        let alice = Make.user("_aaaaaaaaaaa1", in: .production)
        try await store.createUser(alice)
        func grant(_ credits: Int64) async throws -> Grant {
            let grant = Grant(
                environment: .production, recipient: alice.id, credits: credits, reason: "Ticket #7", createdBy: "ada",
                createdAt: Make.start)
            try await store.createGrant(grant)
            return grant
        }
        let pending = try await grant(5)
        let claimed = try await grant(6)
        _ = try await store.claimGrant(
            id: claimed.id, recipient: alice.id, environment: .production, crediting: .collect, at: Make.start)
        let later = Make.start.addingTimeInterval(60)

        let cancelled = try await store.cancelGrant(id: pending.id, environment: .production, by: "ada", at: later)
        #expect(cancelled.status == .cancelled && cancelled.cancelledAt == later && cancelled.cancelledBy == "ada")
        #expect(try await store.grant(id: pending.id, environment: .production) == cancelled)
        // Again: unchanged, the first cancellation kept.
        let again = try await store.cancelGrant(
            id: pending.id, environment: .production, by: "bob", at: later.addingTimeInterval(1))
        #expect(again == cancelled)
        await #expect(throws: StoreError.cancelled("grant \(pending.id)")) {
            try await store.claimGrant(
                id: pending.id, recipient: alice.id, environment: .production, crediting: .collect, at: later)
        }
        // The claimed one stays claimed, its credits the customer's.
        let kept = try await store.cancelGrant(id: claimed.id, environment: .production, by: "ada", at: later)
        #expect(kept.status == .claimed && kept.cancelledAt == nil)
        #expect(try await store.wallet(owner: alice.id, environment: .production).balance == 6)
        await #expect(throws: StoreError.notFound("grant \(pending.id)")) {
            try await store.cancelGrant(id: pending.id, environment: .sandbox, by: "ada", at: later)
        }
        #expect(try await store.grant(id: pending.id, environment: .sandbox) == nil)

        func ids(_ status: GrantStatus?) async throws -> [UUID] {
            try await store.grants(environment: .production, recipient: alice.id, status: status, limit: 10).map(\.id)
        }
        #expect(try await ids(.pending).isEmpty)
        #expect(try await ids(.cancelled) == [pending.id])
        #expect(try await ids(.claimed) == [claimed.id])
        #expect(try await Set(ids(nil)) == [pending.id, claimed.id])
        let figures = try await store.dashboard(environment: .production, days: 1, now: later)
        #expect(figures.pendingGrants == 0 && figures.claimedGrants == 1)
    }
}
