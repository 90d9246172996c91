import CofferAPI
import CofferCore
import CofferServer
import CofferStore
import Foundation
import Hummingbird
import HummingbirdTesting
import Testing

/// Apple's prorated refunds reach the ledger through notifications: the share is taken back, named on the
/// revocation entry, and a later full refund takes the rest.
@Suite("Prorated refunds through Apple's notifications", .timeLimit(.minutes(2)))
struct ProratedRefundNotificationTests {
    @Test("a 25% refund takes a quarter, a full refund later the rest, what was spent becoming the deficit")
    func shareThenRest() async throws {
        let setup = try NotificationTests.Setup(wallet: .server)
        try await setup.app.test(.router) { client in
            let user = try await NotificationTests.createUser(client)
            let bought = try await setup.apple.purchase(
                account: "alice", productId: "com.example.credits", quantity: 4, appAccountToken: user.appAccountToken)
            let id = try #require(bought.transactionIds.first)
            #expect(try await setup.deliver(after: 0, with: client) == ["applied"])
            let spent = try await client.execute(
                uri: "/v1/me/spend", method: .post,
                headers: [.authorization: "Bearer \(user.token)", .init("Idempotency-Key")!: "s1"],
                body: try ClientAPITests.body(SpendRequest(amount: 50)))
            #expect(spent.status == .ok)

            try await setup.apple.refund(transactionId: id, percentage: 25_000)
            #expect(try await setup.deliver(after: 1, with: client) == ["applied"])
            #expect(try await NotificationTests.me(user, client).balance == 250)
            try await setup.apple.advanceClock(by: 86_400)
            try await setup.apple.refund(transactionId: id)
            #expect(try await setup.deliver(after: 2, with: client) == ["applied"])
            #expect(try await setup.deliver(after: 2, with: client) == ["duplicate"])
            let me = try await NotificationTests.me(user, client)
            #expect(me.balance == 0 && me.deficit == 50)

            let owner = try #require(
                try await setup.store.user(appAccountToken: user.appAccountToken, environment: .sandbox))
            let revocations = try await setup.store.entries(owner: owner.id, environment: .sandbox).filter {
                $0.key.kind == .revocation
            }
            #expect(revocations.map(\.amount) == [-100, -300])
            #expect(revocations.first?.reason == "prorated refund of 25%: 100 of 400 credits taken back")
            let receipt = try await setup.store.receipt(transactionId: id, environment: .sandbox)
            #expect(receipt?.refundedCredits == 400 && receipt?.status == .revoked)
        }
    }
}
