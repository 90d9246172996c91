import CofferAPI
import CofferCore
import CofferServer
import CofferSimulator
import Foundation
import Hummingbird
import HummingbirdTesting
import Testing

/// In the server wallet, a purchase delivered durably is finished on Apple's side (Finish Transaction), so a device
/// that died before finishing it is not handed it again; the device wallet leaves finishing to the app.
@Suite("Finish Transaction from the server", .timeLimit(.minutes(2)))
struct FinishOnServerTests {
    @Test(
        "delivered by a notification, finished on Apple's side in the server wallet only",
        arguments: [WalletMode.server, .device])
    func finished(wallet: WalletMode) async throws {
        let setup = try NotificationTests.Setup(wallet: wallet)
        let user = try await setup.createUser()
        let id = try #require(
            try await setup.apple.purchase(
                account: "hana", productId: "com.example.credits", appAccountToken: user.appAccountToken
            ).transactionIds.first)
        #expect(await setup.apple.unfinishedTransactions(account: "hana").map(\.id) == [id])
        try await RecoveryTests.withAppleAPI(setup) { api in
            let app = try setup.application(api: api)
            try await app.test(.router) { client in
                #expect(try await setup.deliver(after: 0, with: client) == ["applied"])
                // Apple's answer comes beside the delivery's: wait for it (a bounded number of short polls).
                var finished = false
                for _ in 0..<200 where !finished {
                    finished = await setup.apple.unfinishedTransactions(account: "hana").isEmpty
                    if !finished { try await Task.sleep(for: .milliseconds(10)) }
                }
                #expect(finished == (wallet == .server))
            }
        }
    }
}
