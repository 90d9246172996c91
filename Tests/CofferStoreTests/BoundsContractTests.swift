import CofferCore
import CofferStore
import CofferTestSupport
import Foundation
import Testing

/// What every engine keeps bounded and shared for the third security round: device and push tokens per customer,
/// one-time merge codes, failure counts every instance sees, and an admin's grant total.
@Suite("Store contract: bounds and shared counts")
struct BoundsContractTests {
    @Test("a customer keeps the newest device tokens and push tokens; the oldest go", arguments: StoreEngine.allCases)
    func tokens(engine: StoreEngine) async throws {
        let store = try await engine.makeStore()
        let alice = Make.user("_aaaaaaaaaaa1")
        try await store.createUser(alice)
        for index in 1...4 {
            try await store.addToken(
                tokenHash: "device-\(index)", owner: alice.id, at: Make.start.addingTimeInterval(Double(index)))
        }
        // The first token (made with the user) and four more: the newest three stay.
        #expect(
            try await store.revokeOldTokens(owner: alice.id, keeping: 3, at: Make.start.addingTimeInterval(10)) == 2)
        #expect(try await store.user(tokenHash: alice.tokenHash) == nil)
        #expect(try await store.user(tokenHash: "device-1") == nil)
        for index in 2...4 { #expect(try await store.user(tokenHash: "device-\(index)")?.id == alice.id) }
        #expect(try await store.tokenCounts(owner: alice.id) == TokenCounts(devices: 3, claims: 0))
        #expect(try await store.revokeOldTokens(owner: alice.id, keeping: 3, at: Make.start) == 0)

        for index in 0..<(PushToken.keptPerUser + 5) {
            try await store.savePushToken(
                PushToken(
                    token: String(format: "%064x", index), owner: alice.id, environment: .sandbox,
                    gateway: .production, updatedAt: Make.start.addingTimeInterval(Double(index))))
        }
        let kept = try await store.pushTokens(owner: alice.id, environment: .sandbox)
        #expect(kept.count == PushToken.keptPerUser)
        #expect(kept.first?.token == String(format: "%064x", PushToken.keptPerUser + 4))
        #expect(!kept.contains { $0.token == String(format: "%064x", 4) })
    }

    @Test(
        "a merge code works once, for its customer, until it expires; a new one replaces it",
        arguments: StoreEngine.allCases)
    func mergeCodes(engine: StoreEngine) async throws {
        let store = try await engine.makeStore()
        let alice = Make.user("_aaaaaaaaaaa1")
        let bob = Make.user("_bbbbbbbbbbb2")
        try await store.createUser(alice)
        try await store.createUser(bob)
        func code(_ hash: String, for user: User) -> MergeCode {
            MergeCode(
                owner: user.id, environment: .sandbox, codeHash: hash, createdAt: Make.start,
                expiresAt: Make.start.addingTimeInterval(900))
        }
        try await store.saveMergeCode(code("first", for: alice))
        try await store.saveMergeCode(code("second", for: alice))
        try await store.saveMergeCode(code("bobs", for: bob))
        let during = Make.start.addingTimeInterval(60)
        #expect(try await store.useMergeCode(owner: alice.id, codeHash: "first", at: during) == false, "replaced")
        #expect(try await store.useMergeCode(owner: alice.id, codeHash: "bobs", at: during) == false, "another's")
        #expect(
            try await store.useMergeCode(owner: bob.id, codeHash: "bobs", at: Make.start.addingTimeInterval(900))
                == false, "expired")
        #expect(try await store.useMergeCode(owner: alice.id, codeHash: "second", at: during))
        #expect(try await store.useMergeCode(owner: alice.id, codeHash: "second", at: during) == false, "once")
        await #expect(throws: StoreError.self) {
            try await store.saveMergeCode(code("ghost", for: Make.user("_ccccccccccc3")))
        }
    }

    @Test("failures are counted per key within a window and forgotten on demand", arguments: StoreEngine.allCases)
    func failures(engine: StoreEngine) async throws {
        let store = try await engine.makeStore()
        let hour = Make.start.addingTimeInterval(-3_600)
        for index in 1...3 {
            let count = try await store.recordFailure(
                "code:ada", at: Make.start.addingTimeInterval(Double(index)), since: hour)
            #expect(count == index)
        }
        _ = try await store.recordFailure("code:bob", at: Make.start, since: hour)
        #expect(try await store.failures("code:ada", since: hour) == 3)
        #expect(try await store.failures("code:ada", since: Make.start.addingTimeInterval(2)) == 2)
        // A day on, the old failures are gone, whatever key records next.
        _ = try await store.recordFailure("code:bob", at: Make.start.addingTimeInterval(86_400 + 10), since: hour)
        #expect(try await store.failures("code:ada", since: .distantPast) == 0)
        _ = try await store.recordFailure(
            "password:ada\u{1F}127.0.0.1", at: Make.start.addingTimeInterval(86_500), since: hour)
        try await store.clearFailures("password:ada\u{1F}127.0.0.1")
        #expect(try await store.failures("password:ada\u{1F}127.0.0.1", since: .distantPast) == 0)
    }

    @Test("an admin's grants are totalled since a time, cancelled ones left out", arguments: StoreEngine.allCases)
    func grantTotals(engine: StoreEngine) async throws {
        let store = try await engine.makeStore()
        let alice = Make.user("_aaaaaaaaaaa1")
        try await store.createUser(alice)
        func grant(_ credits: Int64, by admin: String, at offset: TimeInterval) -> Grant {
            Grant(
                environment: .sandbox, recipient: alice.id, credits: credits, reason: "ticket", createdBy: admin,
                createdAt: Make.start.addingTimeInterval(offset))
        }
        try await store.createGrant(grant(100, by: "sam from 10.0.0.1", at: 0))
        try await store.createGrant(grant(200, by: "sam", at: 10))
        try await store.createGrant(grant(400, by: "samantha from 10.0.0.1", at: 10))
        let cancelled = grant(800, by: "sam from 10.0.0.2", at: 20)
        try await store.createGrant(cancelled)
        _ = try await store.cancelGrant(id: cancelled.id, environment: .sandbox, by: "ada", at: Make.start)
        #expect(try await store.grantedCredits(environment: .sandbox, holder: "sam", since: Make.start) == 300)
        #expect(
            try await store.grantedCredits(
                environment: .sandbox, holder: "sam", since: Make.start.addingTimeInterval(5))
                == 200)
        #expect(try await store.grantedCredits(environment: .production, holder: "sam", since: Make.start) == 0)
        // No character of the name is a pattern.
        #expect(try await store.grantedCredits(environment: .sandbox, holder: "sa%", since: Make.start) == 0)
    }
}
