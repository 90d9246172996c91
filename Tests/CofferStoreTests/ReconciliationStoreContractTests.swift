import CofferCore
import CofferStore
import CofferTestSupport
import Foundation
import Testing

/// The ``ReconciliationStore`` contract every engine keeps (``StoreEngine``): the customers with any receipt walked
/// in pages by id, each customer's latest discrepancies replaced whole, a cursor only one run moves, and nothing
/// kept for a merged or deleted customer.
@Suite("ReconciliationStore contract")
struct ReconciliationStoreContractTests {
    static func record(_ owner: UUID, _ id: String, _ kind: DiscrepancyKind, repaired: Bool = false)
        -> DiscrepancyRecord
    {
        DiscrepancyRecord(
            owner: owner, environment: .sandbox, kind: kind, transactionId: id, productId: "com.example.credits.400k",
            detail: kind == .differs ? "quantity: ledger 3, Apple 1" : "", foundAt: Make.start,
            repairedAt: repaired ? Make.start.addingTimeInterval(1) : nil)
    }

    @Test("customers with any receipt, by id in pages; none in the other environment", arguments: StoreEngine.allCases)
    func customers(engine: StoreEngine) async throws {
        let store = try await engine.makeStore()
        var buyers: [User] = []
        for index in 0..<5 {
            let user = Make.user("_aaaaaaaaaa\(index)b")
            try await store.createUser(user)
            if index != 2 {
                _ = try await store.apply(Make.purchase("t\(index)", for: user))
                _ = try await store.apply(Make.purchase("u\(index)", for: user))
                buyers.append(user)
            }
        }
        let producer = Make.user("_aaaaaaaaaa9b", in: .production)
        try await store.createUser(producer)
        _ = try await store.apply(Make.purchase("p1", for: producer))
        let expected = buyers.map(\.id).sorted { $0.uuidString < $1.uuidString }
        let first = try await store.reconciledCustomers(environment: .sandbox, after: nil, limit: 3)
        #expect(first == Array(expected.prefix(3)))
        let rest = try await store.reconciledCustomers(environment: .sandbox, after: first.last, limit: 3)
        #expect(rest == Array(expected.dropFirst(3)))
        #expect(try await store.reconciledCustomers(environment: .sandbox, after: rest.last, limit: 3).isEmpty)
        #expect(try await store.reconciledCustomers(environment: .production, after: nil, limit: 10) == [producer.id])
        #expect(try await store.reconciledCustomers(environment: .sandbox, after: nil, limit: 0).isEmpty)
    }

    @Test("a customer's discrepancies are replaced whole; another's are refused", arguments: StoreEngine.allCases)
    func discrepancies(engine: StoreEngine) async throws {
        let store = try await engine.makeStore()
        let (alice, bob) = (Make.user("_aaaaaaaaaaa1"), Make.user("_bbbbbbbbbbb1"))
        try await store.createUser(alice)
        try await store.createUser(bob)
        let found = [
            Self.record(alice.id, "t2", .missingPurchase, repaired: true), Self.record(alice.id, "t1", .differs),
            Self.record(alice.id, "t1", .missingRefund),
        ]
        try await store.replaceDiscrepancies(owner: alice.id, environment: .sandbox, found)
        try await store.replaceDiscrepancies(
            owner: bob.id, environment: .sandbox, [Self.record(bob.id, "b1", .unknownToApple)])
        let kept = try await store.discrepancies(owner: alice.id, environment: .sandbox)
        #expect(kept == [found[1], found[2], found[0]])
        #expect(try await store.discrepancies(owner: alice.id, environment: .production).isEmpty)
        // The next check's findings replace the last's; none means the books agree.
        try await store.replaceDiscrepancies(owner: alice.id, environment: .sandbox, [found[1]])
        #expect(try await store.discrepancies(owner: alice.id, environment: .sandbox) == [found[1]])
        await #expect(throws: StoreError.self) {
            try await store.replaceDiscrepancies(
                owner: alice.id, environment: .sandbox, [Self.record(bob.id, "x", .differs)])
        }
        #expect(try await store.discrepancies(owner: alice.id, environment: .sandbox) == [found[1]])
        try await store.replaceDiscrepancies(owner: alice.id, environment: .sandbox, [])
        #expect(try await store.discrepancies(owner: alice.id, environment: .sandbox).isEmpty)
        #expect(try await store.discrepancies(owner: bob.id, environment: .sandbox).count == 1)
    }

    @Test("a cursor moves only from the value its mover read", arguments: StoreEngine.allCases)
    func swap(engine: StoreEngine) async throws {
        let store = try await engine.makeStore()
        #expect(try await store.swapCursor("reconciliation", environment: .sandbox, expected: nil, value: "a"))
        #expect(!(try await store.swapCursor("reconciliation", environment: .sandbox, expected: nil, value: "b")))
        #expect(!(try await store.swapCursor("reconciliation", environment: .sandbox, expected: "z", value: "b")))
        #expect(try await store.cursor("reconciliation", environment: .sandbox) == "a")
        #expect(try await store.swapCursor("reconciliation", environment: .sandbox, expected: "a", value: "b"))
        #expect(try await store.cursor("reconciliation", environment: .sandbox) == "b")
        #expect(try await store.cursor("reconciliation", environment: .production) == nil)
        // Two movers from one value: exactly one wins.
        let results = try await withThrowingTaskGroup(of: Bool.self) { group in
            for value in ["c", "d", "e", "f"] {
                group.addTask {
                    try await store.swapCursor("reconciliation", environment: .sandbox, expected: "b", value: value)
                }
            }
            return try await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        #expect(results.filter { $0 }.count == 1)
    }

    @Test("a merge and a deletion drop the customer's discrepancies", arguments: StoreEngine.allCases)
    func mergeAndDeletion(engine: StoreEngine) async throws {
        let store = try await engine.makeStore()
        let (anonymous, account) = try await MergeContractTests.customers(store)
        try await store.replaceDiscrepancies(
            owner: anonymous.id, environment: .sandbox, [Self.record(anonymous.id, "m1", .missingRefund)])
        try await store.replaceDiscrepancies(
            owner: account.id, environment: .sandbox, [Self.record(account.id, "a1", .unknownToApple)])
        _ = try await store.mergeUser(
            UserMerge(
                from: anonymous.id, into: account.id, environment: .sandbox, movesBackup: false,
                at: Make.start.addingTimeInterval(60)))
        #expect(try await store.discrepancies(owner: anonymous.id, environment: .sandbox).isEmpty)
        #expect(try await store.discrepancies(owner: account.id, environment: .sandbox).count == 1)
        _ = try await store.deleteUser(
            UserDeletion(user: account.id, environment: .sandbox, actor: "ada", at: Make.start.addingTimeInterval(90)))
        #expect(try await store.discrepancies(owner: account.id, environment: .sandbox).isEmpty)
    }
}
