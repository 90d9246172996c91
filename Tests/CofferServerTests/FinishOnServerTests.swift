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
                if wallet == .device {
                    // The device wallet starts no call to Apple at all: the app finishes what it delivered.
                    #expect(await setup.apple.unfinishedTransactions(account: "hana").map(\.id) == [id])
                    return
                }
                // Apple's answer comes beside the delivery's.
                let finished = try await Self.eventually {
                    await setup.apple.unfinishedTransactions(account: "hana").isEmpty
                }
                #expect(finished)
            }
        }
    }

    /// Waits until `condition` holds, for a call to Apple made beside an answer; gives up (false) only after a
    /// generous number of polls, so a loaded machine never fails it.
    static func eventually(_ condition: () async throws -> Bool) async throws -> Bool {
        for _ in 0..<1_500 {
            if try await condition() { return true }
            try await Task.sleep(for: .milliseconds(20))
        }
        return false
    }
}
