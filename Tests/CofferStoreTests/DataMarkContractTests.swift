import CofferCore
import CofferStore
import Foundation
import Testing

/// What each engine keeps of where Apple's data came from: its environment, and Xcode's mark.
@Suite("Store contract: the data's environment marks", .timeLimit(.minutes(1)))
struct DataMarkContractTests {
    @Test(
        "Xcode's data is kept marked Xcode on its receipt and entry, one at a time and in a batch, and an update that names no environment keeps the mark",
        arguments: StoreEngine.allCases)
    func xcodeMark(engine: StoreEngine) async throws {
        let store = try await engine.makeStore()
        let alice = Make.user("_aaaaaaaaaaa1")
        try await store.createUser(alice)
        func fact(_ id: String, xcode: Bool) -> TransactionFact {
            var fact = Make.fact(id)
            fact.environment = .sandbox
            fact.signedByXcode = xcode
            return fact
        }
        // One alone, then two in one batch (Xcode's and Apple's Sandbox).
        _ = try await store.apply([
            LedgerRequest(
                owner: alice.id, environment: .sandbox, event: .purchase(fact("x-1", xcode: true), credits: 1),
                at: Make.start)
        ])
        _ = try await store.apply([
            LedgerRequest(
                owner: alice.id, environment: .sandbox, event: .purchase(fact("x-2", xcode: true), credits: 1),
                at: Make.start),
            LedgerRequest(
                owner: alice.id, environment: .sandbox, event: .purchase(fact("s-1", xcode: false), credits: 1),
                at: Make.start),
        ])
        let receipts = try await store.receipts(owner: alice.id, environment: .sandbox)
        let marks = Dictionary(uniqueKeysWithValues: receipts.map { ($0.transaction.transactionId, $0.transaction) })
        #expect(marks["x-1"]?.dataEnvironment == .xcode && marks["x-2"]?.dataEnvironment == .xcode)
        #expect(marks["s-1"]?.dataEnvironment == .sandbox)
        let entries = try await store.entries(owner: alice.id, environment: .sandbox)
        #expect(entries.filter { $0.dataMark == .xcode }.compactMap(\.transactionId).sorted() == ["x-1", "x-2"])
        #expect(entries.filter { $0.dataMark == .sandbox }.compactMap(\.transactionId) == ["s-1"])
        // A refund from a source that names no environment keeps the receipt's mark.
        var refund = Make.fact("x-1", revoked: true)
        refund.environment = nil
        _ = try await store.apply([
            LedgerRequest(owner: alice.id, environment: .sandbox, event: .revocation(refund), at: Make.start)
        ])
        let refunded = try #require(try await store.receipt(transactionId: "x-1", environment: .sandbox))
        #expect(refunded.isRevoked && refunded.transaction.dataEnvironment == .xcode)
    }
}
