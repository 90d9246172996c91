import CofferCore
import CofferStore
import CofferTestSupport
import Foundation
import Testing

/// Credits that expire (``CreditLot``), on every engine (``StoreEngine``): a grant with an end makes a lot, spends
/// take from the lots soonest to end first, other debits from the credits that never expire first, and what is left
/// at the end leaves the balance by an entry of its own (`expiry:<id>`), once.
@Suite("LedgerStore contract: credits that expire")
struct CreditLotContractTests {
    static let gems = Currency(rawValue: "gems")!
    static let day: TimeInterval = 86_400

    static func grant(
        _ id: String, _ credits: Int64, for user: User, days: Double, currency: Currency? = nil
    ) -> LedgerRequest {
        LedgerRequest(
            owner: user.id, environment: user.environment, event: .grant(id: id, credits: credits, reason: "event"),
            at: Make.start, currency: currency, expiresAt: Make.start.addingTimeInterval(days * day))
    }

    static func request(_ event: LedgerEvent, for user: User, currency: Currency? = nil) -> LedgerRequest {
        LedgerRequest(owner: user.id, environment: user.environment, event: event, at: Make.start, currency: currency)
    }

    @Test(
        "spends take the lots soonest to end first; a refund takes the credits that never expire first",
        arguments: StoreEngine.allCases)
    func spendOrder(engine: StoreEngine) async throws {
        let store = try await engine.makeStore()
        let alice = Make.user("_aaaaaaaaaaa1")
        try await store.createUser(alice)
        _ = try await store.apply([
            Make.purchase("t1", for: alice, credits: 100), Self.grant("late", 50, for: alice, days: 7),
            Self.grant("soon", 30, for: alice, days: 2),
        ])
        var lots = try await store.creditLots(owner: alice.id, environment: .sandbox)
        #expect(lots.map(\.id) == ["soon", "late"] && lots.map(\.remaining) == [30, 50])
        #expect(lots.first?.expiresAt == Make.start.addingTimeInterval(2 * Self.day))

        // 40 spent: the 30 ending soonest, then 10 of the next.
        _ = try await store.apply(Self.request(.spend(key: "s1", amount: 40), for: alice))
        lots = try await store.creditLots(owner: alice.id, environment: .sandbox)
        #expect(lots.map(\.id) == ["late"] && lots.map(\.remaining) == [40])

        // The refund takes the 100 purchased first: 140 - 100 leaves the lot whole.
        _ = try await store.apply(Self.request(.revocation(Make.fact("t1", revoked: true)), for: alice))
        #expect(try await store.wallet(owner: alice.id, environment: .sandbox).balance == 40)
        #expect(try await store.creditLots(owner: alice.id, environment: .sandbox).map(\.remaining) == [40])
        // A debit beyond what never expires comes out of the lot.
        _ = try await store.apply(
            Self.request(.adjustment(id: "a1", delta: -15, reason: "support"), for: alice))
        #expect(try await store.creditLots(owner: alice.id, environment: .sandbox).map(\.remaining) == [25])
    }

    @Test(
        "what is left at the end leaves the balance once, by expiry:<id>; nothing before",
        arguments: StoreEngine.allCases)
    func expiry(engine: StoreEngine) async throws {
        let store = try await engine.makeStore()
        let (alice, bob) = (Make.user("_aaaaaaaaaaa1"), Make.user("_bbbbbbbbbbb2"))
        try await store.createUser(alice)
        try await store.createUser(bob)
        _ = try await store.apply([
            Make.purchase("t1", for: alice, credits: 100), Self.grant("g1", 50, for: alice, days: 2),
            Self.grant("g2", 20, for: alice, days: 2, currency: Self.gems), Self.grant("g3", 5, for: bob, days: 9),
        ])
        _ = try await store.apply(Self.request(.spend(key: "s1", amount: 10), for: alice))
        let early = Make.start.addingTimeInterval(Self.day)
        #expect(try await store.expireCredits(environment: .sandbox, owner: nil, at: early, limit: 100) == 0)

        let later = Make.start.addingTimeInterval(3 * Self.day)
        #expect(try await store.expireCredits(environment: .sandbox, owner: nil, at: later, limit: 100) == 2)
        #expect(try await store.wallet(owner: alice.id, environment: .sandbox) == Wallet(balance: 100))
        #expect(try await store.currencyWallets(owner: alice.id, environment: .sandbox) == [Self.gems: Wallet()])
        let entries = try await store.entries(owner: alice.id, environment: .sandbox)
        #expect(entries.last?.key == IdempotencyKey(.expiry, "g1") && entries.last?.amount == -40)
        let gemEntries = try await store.entries(owner: alice.id, environment: .sandbox, currency: Self.gems)
        #expect(gemEntries.last?.key == IdempotencyKey(.expiry, "g2") && gemEntries.last?.amount == -20)
        #expect(try await store.creditLots(owner: alice.id, environment: .sandbox).isEmpty)
        // Once: nothing is left to end; bob's lot has not ended.
        #expect(try await store.expireCredits(environment: .sandbox, owner: nil, at: later, limit: 100) == 0)
        #expect(try await store.creditLots(owner: bob.id, environment: .sandbox).map(\.remaining) == [5])
        #expect(try await Make.discrepancies(store, alice) == [])
    }

    @Test(
        "a grant settling a deficit makes a lot of what reached the balance; a claimed grant's lot ends days after the claim; merges move lots, deletions end them",
        arguments: StoreEngine.allCases)
    func grants(engine: StoreEngine) async throws {
        let store = try await engine.makeStore()
        let (anonymous, account) = (Make.user("_aaaaaaaaaaa1"), Make.user("_bbbbbbbbbbb2"))
        try await store.createUser(anonymous)
        try await store.createUser(account)
        // 100 bought, 60 spent, refunded: 60 owed; a grant of 100 settles it and 40 reach the balance.
        _ = try await store.apply([
            Make.purchase("t1", for: anonymous, credits: 100),
            Self.request(.spend(key: "s1", amount: 60), for: anonymous),
            Self.request(.revocation(Make.fact("t1", revoked: true)), for: anonymous),
            Self.grant("g1", 100, for: anonymous, days: 5),
        ])
        #expect(try await store.creditLots(owner: anonymous.id, environment: .sandbox).map(\.granted) == [40])

        let support = Grant(
            environment: .sandbox, recipient: anonymous.id, credits: 25, reason: "event", createdBy: "ada",
            createdAt: Make.start, expiresInDays: 3)
        try await store.createGrant(support, audit: [])
        #expect(try await store.grant(id: support.id, environment: .sandbox)?.expiresInDays == 3)
        let claimedAt = Make.start.addingTimeInterval(Self.day)
        _ = try await store.claimGrant(
            id: support.id, recipient: anonymous.id, environment: .sandbox, crediting: .collect, at: claimedAt)
        let lots = try await store.creditLots(owner: anonymous.id, environment: .sandbox)
        // Its end, three days after the claim, comes before the first lot's (five days after the start).
        #expect(lots.map(\.remaining) == [25, 40])
        #expect(lots.first?.expiresAt == claimedAt.addingTimeInterval(3 * Self.day))

        _ = try await store.mergeUser(
            UserMerge(from: anonymous.id, into: account.id, environment: .sandbox, movesBackup: false, at: claimedAt))
        #expect(try await store.creditLots(owner: anonymous.id, environment: .sandbox).isEmpty)
        #expect(try await store.creditLots(owner: account.id, environment: .sandbox).map(\.remaining) == [25, 40])
        _ = try await store.deleteUser(
            UserDeletion(user: account.id, environment: .sandbox, actor: "ada", at: claimedAt))
        #expect(try await store.creditLots(owner: account.id, environment: .sandbox).isEmpty)
        let end = Make.start.addingTimeInterval(30 * Self.day)
        #expect(try await store.expireCredits(environment: .sandbox, owner: nil, at: end, limit: 100) == 0)
    }
}
