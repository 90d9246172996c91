import CofferCore
import CofferStore
import CofferTestSupport
import Foundation
import Testing

/// The ``ConsumptionStore`` contract every engine keeps (``StoreEngine``): consents and the answers to Apple's refund
/// requests, each customer's own, gone with the customer.
@Suite("ConsumptionStore contract")
struct ConsumptionStoreContractTests {
    static func answer(_ uuid: String, owner: UUID, at seconds: TimeInterval, sent: Bool = true)
        -> ConsumptionAnswerRecord
    {
        ConsumptionAnswerRecord(
            notificationUUID: uuid, environment: .sandbox, owner: owner, transactionId: "t-\(uuid)",
            requestedAt: Make.start.addingTimeInterval(seconds), answeredAt: Make.start.addingTimeInterval(seconds + 1),
            sent: sent, body: sent ? #"{"customerConsented":true}"# : nil,
            reason: sent ? "35% of the credits used" : "the customer has not consented")
    }

    @Test(
        "a consent is the customer's last answer; an answer is recorded once per request, latest first",
        arguments: StoreEngine.allCases)
    func consentsAndAnswers(engine: StoreEngine) async throws {
        let store = try await engine.makeStore()
        let alice = Make.user("_aaaaaaaaaaa1")
        let bob = Make.user("_bbbbbbbbbbb1")
        try await store.createUser(alice)
        try await store.createUser(bob)
        #expect(try await store.consumptionConsent(owner: alice.id, environment: .sandbox) == nil)
        let yes = ConsumptionConsent(owner: alice.id, environment: .sandbox, consented: true, at: Make.start)
        try await store.saveConsumptionConsent(yes)
        #expect(try await store.consumptionConsent(owner: alice.id, environment: .sandbox) == yes)
        var no = yes
        (no.consented, no.at) = (false, Make.start.addingTimeInterval(60))
        try await store.saveConsumptionConsent(no)
        #expect(try await store.consumptionConsent(owner: alice.id, environment: .sandbox) == no)
        #expect(try await store.consumptionConsent(owner: alice.id, environment: .production) == nil)
        await #expect(throws: StoreError.self) {
            try await store.saveConsumptionConsent(
                ConsumptionConsent(owner: UUID(), environment: .sandbox, consented: true, at: Make.start))
        }

        let (first, second) = (Self.answer("n-1", owner: alice.id, at: 10), Self.answer("n-2", owner: alice.id, at: 20))
        #expect(try await store.recordConsumptionAnswer(first))
        #expect(try await store.recordConsumptionAnswer(second))
        var again = first
        again.reason = "changed"
        #expect(try await store.recordConsumptionAnswer(again) == false)
        #expect(try await store.recordConsumptionAnswer(Self.answer("n-3", owner: bob.id, at: 5, sent: false)))
        #expect(
            try await store.consumptionAnswers(owner: alice.id, environment: .sandbox, limit: 10) == [second, first])
        #expect(try await store.consumptionAnswers(owner: alice.id, environment: .sandbox, limit: 1) == [second])
        #expect(try await store.consumptionAnswers(owner: alice.id, environment: .production, limit: 10).isEmpty)
        #expect(
            try await store.consumptionAnswers(owner: bob.id, environment: .sandbox, limit: 10).map(\.sent) == [false])
    }

    @Test(
        "a customer's deletion deletes their consent and answers, and no consent is saved after",
        arguments: StoreEngine.allCases)
    func deletion(engine: StoreEngine) async throws {
        let store = try await engine.makeStore()
        let alice = Make.user("_aaaaaaaaaaa1")
        try await store.createUser(alice)
        try await store.saveConsumptionConsent(
            ConsumptionConsent(owner: alice.id, environment: .sandbox, consented: true, at: Make.start))
        #expect(try await store.recordConsumptionAnswer(Self.answer("n-1", owner: alice.id, at: 10)))
        _ = try await store.deleteUser(
            UserDeletion(user: alice.id, environment: .sandbox, actor: "ada", at: Make.start))
        #expect(try await store.consumptionConsent(owner: alice.id, environment: .sandbox) == nil)
        #expect(try await store.consumptionAnswers(owner: alice.id, environment: .sandbox, limit: 10).isEmpty)
        #expect(try await store.recordConsumptionAnswer(Self.answer("n-2", owner: alice.id, at: 20)) == false)
        #expect(try await store.consumptionAnswers(owner: alice.id, environment: .sandbox, limit: 10).isEmpty)
        await #expect(throws: StoreError.self) {
            try await store.saveConsumptionConsent(
                ConsumptionConsent(owner: alice.id, environment: .sandbox, consented: true, at: Make.start))
        }
    }
}
