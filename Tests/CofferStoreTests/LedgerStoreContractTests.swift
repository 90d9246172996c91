import CofferCore
import CofferStore
import CofferTestSupport
import Foundation
import Testing

/// The ``LedgerStore`` contract every engine keeps (``StoreEngine``): the ledger: deliveries and their receipts, the data's environment, payments, refunds and reversals, batches.
@Suite("LedgerStore contract")
struct LedgerStoreContractTests {
    @Test(
        "a delivery and its receipt are stored together; the same transaction again is a duplicate",
        arguments: StoreEngine.allCases)
    func delivery(engine: StoreEngine) async throws {
        let store = try await engine.makeStore()
        let alice = Make.user("_aaaaaaaaaaa1")
        try await store.createUser(alice)
        let first = try await store.apply(Make.purchase("t1", for: alice))
        #expect(first.outcome == .applied)
        #expect(first.wallet == Wallet(balance: 400, deficit: 0))
        let second = try await store.apply(Make.purchase("t1", for: alice))
        #expect(second.outcome == .duplicate)
        #expect(second.entry?.key == IdempotencyKey(.purchase, "t1"))
        #expect(try await store.wallet(owner: alice.id, environment: .sandbox) == Wallet(balance: 400, deficit: 0))
        let entries = try await store.entries(owner: alice.id, environment: .sandbox)
        #expect(entries.count == 1)
        #expect(entries.first == first.entry)
        let receipt = try #require(try await store.receipt(transactionId: "t1", environment: .sandbox))
        #expect(receipt.owner == alice.id)
        #expect(receipt.transaction == Make.fact("t1"))
        #expect(receipt.deliveredCredits == 400)
        #expect(receipt.deliveredAt == Make.start)
        #expect(try await store.receipt(transactionId: "t1", environment: .production) == nil)
        #expect(try await store.receipts(owner: alice.id, environment: .sandbox) == [receipt])
    }

    @Test(
        "App Review's sandbox purchase on a Production ledger stays marked Sandbox: receipt, entries, dashboard",
        arguments: StoreEngine.allCases)
    func dataEnvironment(engine: StoreEngine) async throws {
        let store = try await engine.makeStore()
        let reviewer = Make.user("_aaaaaaaaaaa1", in: .production)
        let customer = Make.user("_ccccccccccc2", in: .production)
        try await store.createUser(reviewer)
        try await store.createUser(customer)
        func fact(_ id: String, _ environment: AppStoreEnvironment?, revoked: Bool = false) -> TransactionFact {
            var fact = Make.fact(id, revoked: revoked)
            fact.environment = environment
            return fact
        }
        func request(_ event: LedgerEvent, for user: User) -> LedgerRequest {
            LedgerRequest(owner: user.id, environment: .production, event: event, at: Make.start)
        }
        let reviewed = try await store.apply(request(.purchase(fact("s1", .sandbox), credits: 400), for: reviewer))
        #expect(reviewed.outcome == .applied)
        #expect(reviewed.entry?.dataEnvironment == .sandbox)
        _ = try await store.apply(request(.purchase(fact("p1", .production), credits: 400), for: customer))
        _ = try await store.apply(request(.purchase(fact("u1", nil), credits: 400), for: customer))
        // Refunded in the sandbox: the revocation is marked too, and the receipt keeps its mark.
        _ = try await store.apply(request(.revocation(fact("s1", .sandbox, revoked: true)), for: reviewer))
        let receipt = try #require(try await store.receipt(transactionId: "s1", environment: .production))
        #expect(receipt.transaction.environment == .sandbox)
        #expect(receipt.status == .revoked)
        #expect(
            try await store.entries(owner: reviewer.id, environment: .production).map(\.dataEnvironment) == [
                .sandbox, .sandbox,
            ])
        #expect(
            try await store.receipt(transactionId: "p1", environment: .production)?.transaction.environment
                == .production)
        #expect(try await store.receipt(transactionId: "u1", environment: .production)?.transaction.environment == nil)
        // Data from the other environment under a transaction id on record is another transaction: refused.
        await #expect(throws: LedgerError.transactionMismatch(transactionId: "p1")) {
            try await store.apply(request(.revocation(fact("p1", .sandbox, revoked: true)), for: customer))
        }
        #expect(try await store.wallet(owner: customer.id, environment: .production) == Wallet(balance: 800))
        // Production's figures leave the reviewer's purchase and refund out, and count it apart.
        let figures = try await store.dashboard(environment: .production, days: 30, now: Make.start)
        #expect(figures.purchases == 2)
        #expect(figures.refunds == 0)
        #expect(figures.otherEnvironmentPurchases == 1)
        #expect(figures.days.reduce(0) { $0 + $1.purchases } == 2)
        #expect(figures.days.reduce(0) { $0 + $1.refunds } == 0)
        // A reviewer registered with a sandbox AppTransaction is not one of Production's users.
        var tester = Make.user("_ddddddddddd4", in: .production)
        tester.appleAccount = AppleAccount(appTransactionId: "706000000000001", environment: .sandbox)
        try await store.createUser(tester)
        #expect(try await store.dashboard(environment: .production, days: 30, now: Make.start).users == 2)
    }

    @Test(
        "what the customer paid and Apple's refund reason survive storage, one by one and in a batch",
        arguments: StoreEngine.allCases)
    func payments(engine: StoreEngine) async throws {
        let store = try await engine.makeStore()
        let alice = Make.user("_aaaaaaaaaaa1")
        try await store.createUser(alice)
        func paid(_ id: String) -> LedgerRequest {
            var fact = Make.fact(id)
            fact.price = 4_990
            fact.currency = "EUR"
            fact.storefront = "FRA"
            return LedgerRequest(
                owner: alice.id, environment: .sandbox, event: .purchase(fact, credits: 400), at: Make.start)
        }
        let batch = try await store.apply([paid("t1"), paid("t2")])
        #expect(try batch.map { try $0.get().outcome } == [.applied, .applied])
        _ = try await store.apply(paid("t3"))
        for id in ["t1", "t2", "t3"] {
            let fact = try #require(try await store.receipt(transactionId: id, environment: .sandbox)).transaction
            #expect(fact.price == 4_990 && fact.currency == "EUR" && fact.storefront == "FRA")
            #expect(fact.revocationReason == nil)
        }
        // A refund whose data has no price (a notification without it) keeps the price and adds Apple's reason.
        var refund = Make.fact("t2", revoked: true)
        refund.revocationReason = 1
        _ = try await store.apply(
            LedgerRequest(owner: alice.id, environment: .sandbox, event: .revocation(refund), at: Make.start))
        let refunded = try #require(try await store.receipt(transactionId: "t2", environment: .sandbox))
        #expect(refunded.status == .revoked)
        #expect(refunded.transaction.price == 4_990 && refunded.transaction.currency == "EUR")
        #expect(refunded.transaction.revocationReason == 1)
        #expect(
            try await store.receipts(owner: alice.id, environment: .sandbox).map(\.transaction.price) == [
                4_990, 4_990, 4_990,
            ])
    }

    @Test("refunds, deficits and reversals survive storage", arguments: StoreEngine.allCases)
    func refunds(engine: StoreEngine) async throws {
        let store = try await engine.makeStore()
        let alice = Make.user("_aaaaaaaaaaa1")
        try await store.createUser(alice)
        _ = try await store.apply(Make.purchase("t1", for: alice))
        _ = try await store.apply(
            LedgerRequest(owner: alice.id, environment: .sandbox, event: .spend(key: "k1", amount: 300), at: Make.start)
        )
        let revoked = try await store.apply(
            LedgerRequest(
                owner: alice.id, environment: .sandbox, event: .revocation(Make.fact("t1", revoked: true)),
                at: Make.start))
        #expect(revoked.wallet == Wallet(balance: 0, deficit: 300))
        let receipt = try #require(try await store.receipt(transactionId: "t1", environment: .sandbox))
        #expect(receipt.status == .revoked)
        #expect(receipt.takenFromBalance == 100 && receipt.addedToDeficit == 300)
        #expect(receipt.revokedAt == Make.start.addingTimeInterval(60))
        let replay = try await store.apply(Make.purchase("t1", for: alice))
        #expect(replay.outcome == .revoked)
        _ = try await store.apply(
            LedgerRequest(
                owner: alice.id, environment: .sandbox, event: .reversal(Make.fact("t1"), at: nil), at: Make.start))
        #expect(try await store.wallet(owner: alice.id, environment: .sandbox) == Wallet(balance: 100, deficit: 0))
        #expect(try await store.receipt(transactionId: "t1", environment: .sandbox)?.status == .restored)
        let entries = try await store.entries(owner: alice.id, environment: .sandbox)
        #expect(entries.map(\.key.rawValue) == ["purchase:t1", "spend:k1", "revocation:t1", "reversal:t1"])
        let mailbox = try await store.entries(
            owner: alice.id, environment: .sandbox, kinds: [.revocation, .reversal, .adjustment])
        #expect(mailbox.map(\.key.rawValue) == ["revocation:t1", "reversal:t1"])
        #expect(try await store.entries(owner: alice.id, environment: .sandbox, kinds: []).isEmpty)
        #expect(try await store.entries(owner: alice.id, environment: .production, kinds: [.purchase]).isEmpty)
        #expect(
            LedgerAudit.discrepancies(
                entries: entries, wallet: try await store.wallet(owner: alice.id, environment: .sandbox)
            ).isEmpty)
    }

    @Test(
        "refund, reversal, refund again in every arrival order: refunded once more by Apple's dates, on every engine",
        arguments: StoreEngine.allCases, [[0, 1, 2], [0, 2, 1], [1, 0, 2], [1, 2, 0], [2, 0, 1], [2, 1, 0]])
    func refundReversalRefund(engine: StoreEngine, order: [Int]) async throws {
        let store = try await engine.makeStore()
        let alice = Make.user("_aaaaaaaaaaa1")
        try await store.createUser(alice)
        _ = try await store.apply(Make.purchase("t1", for: alice))
        let day = { (n: Double) in Make.start.addingTimeInterval(n * 86_400) }
        var firstRefund = Make.fact("t1")
        firstRefund.revocationDate = day(1)
        var secondRefund = Make.fact("t1")
        secondRefund.revocationDate = day(3)
        let events: [LedgerEvent] = [
            .revocation(firstRefund), .reversal(Make.fact("t1"), at: day(2)), .revocation(secondRefund),
        ]
        for index in order {
            for _ in 0..<2 {
                _ = try await store.apply(
                    LedgerRequest(owner: alice.id, environment: .sandbox, event: events[index], at: day(10)))
            }
        }
        let receipt = try #require(try await store.receipt(transactionId: "t1", environment: .sandbox))
        #expect(receipt.status == .revoked, "\(order)")
        #expect(try await store.wallet(owner: alice.id, environment: .sandbox) == Wallet(balance: 0, deficit: 0))
        #expect(try await store.dashboard(environment: .sandbox, days: 30, now: day(10)).refunds == 1)
        let entries = try await store.entries(owner: alice.id, environment: .sandbox)
        #expect(entries.reduce(0) { $0 + $1.amount } == 0)
        #expect(
            LedgerAudit.discrepancies(
                entries: entries, wallet: try await store.wallet(owner: alice.id, environment: .sandbox)
            ).isEmpty)
    }

    @Test(
        "a batch commits together; a refused request changes nothing while the rest apply",
        arguments: StoreEngine.allCases)
    func batches(engine: StoreEngine) async throws {
        let store = try await engine.makeStore()
        let alice = Make.user("_aaaaaaaaaaa1")
        let bob = Make.user("_bbbbbbbbbbb2")
        try await store.createUser(alice)
        try await store.createUser(bob)
        let results = try await store.apply([
            Make.purchase("t1", for: alice),
            LedgerRequest(
                owner: alice.id, environment: .sandbox, event: .spend(key: "big", amount: 10_000), at: Make.start),
            Make.purchase("t1", for: bob),
            Make.purchase("t2", for: bob),
            Make.purchase("t1", for: alice),
            LedgerRequest(
                owner: alice.id, environment: .production, event: .grant(id: "g", credits: 5, reason: ""),
                at: Make.start),
        ])
        #expect(try results[0].get().outcome == .applied)
        #expect(throws: LedgerError.insufficientBalance(balance: 400, requested: 10_000)) { try results[1].get() }
        #expect(throws: LedgerError.wrongUser(transactionId: "t1")) { try results[2].get() }
        #expect(try results[3].get().outcome == .applied)
        #expect(try results[4].get().outcome == .duplicate)
        #expect(throws: LedgerError.unknownUser(alice.id)) { try results[5].get() }
        #expect(try await store.wallet(owner: alice.id, environment: .sandbox).balance == 400)
        #expect(try await store.wallet(owner: bob.id, environment: .sandbox).balance == 400)
        #expect(try await store.entries(owner: alice.id, environment: .sandbox).count == 1)
        #expect(try await store.wallet(owner: alice.id, environment: .production) == .empty)
        #expect(try await store.entries(owner: alice.id, environment: .production).isEmpty)
    }

    @Test("50 concurrent deliveries of one transaction credit once", arguments: StoreEngine.allCases)
    func concurrentDeliveries(engine: StoreEngine) async throws {
        let store = try await engine.makeStore()
        let alice = Make.user("_aaaaaaaaaaa1")
        try await store.createUser(alice)
        let outcomes = try await withThrowingTaskGroup(of: LedgerOutcome.self) { group in
            for _ in 0..<50 { group.addTask { try await store.apply(Make.purchase("t1", for: alice)).outcome } }
            return try await group.reduce(into: [LedgerOutcome]()) { $0.append($1) }
        }
        #expect(outcomes.filter { $0 == .applied }.count == 1)
        #expect(outcomes.filter { $0 == .duplicate }.count == 49)
        #expect(try await store.wallet(owner: alice.id, environment: .sandbox).balance == 400)
        #expect(try await store.entries(owner: alice.id, environment: .sandbox).count == 1)
    }
}
