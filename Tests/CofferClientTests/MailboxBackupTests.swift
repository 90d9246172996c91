import CofferAPI
import CofferClient
import CofferCore
import Foundation
import Testing

/// A backup carries the mailbox its balance holds: a new device that restores it never applies a refund the old one
/// took back already.
@Suite("SDK: the mailbox a backup holds", .timeLimit(.minutes(2)))
struct MailboxBackupTests {
    @Test("a new phone restores the backup and does not take back again the refund the old phone took back")
    func newPhoneAfterRefund() async throws {
        try await PurchaseFlowTests.withWorld(wallet: .device, serverOnSimulatedTime: true) { world in
            let phone = try world.app(install: "phone", identity: .appleAccount)
            try await phone.launch()
            _ = try await phone.purchase(productId: PurchaseFlowTests.product, quantity: 3)
            guard
                case .delivered(let refunded, 200) = try await phone.purchase(
                    productId: PurchaseFlowTests.product, quantity: 2)
            else {
                Issue.record("not delivered")
                return
            }
            #expect(try await phone.balance() == 500)
            // Apple refunds the second purchase; the phone takes it back (200) and the server learns of it.
            try await world.apple.refund(transactionId: refunded)
            #expect(try await phone.refundCheck() == 1)
            _ = try await phone.enteredForeground()
            #expect(try await phone.balance() == 300)
            let token = try #require(await phone.credentials?.token)
            let mailbox = try await world.server.adjustments(token: token).map(\.key)
            #expect(mailbox.contains { $0.hasPrefix("revocation:") }, "\(mailbox)")
            let backup = try #require(try await world.server.backup(token: token))
            #expect(backup.value == 300)
            #expect(Set(backup.applied ?? []) == Set(mailbox.filter { $0.hasPrefix("revocation:") }))

            // The old phone is lost; the new one restores 300 and leaves the refund the backup holds alone.
            let newPhone = try world.app(install: "new-phone", identity: .appleAccount)
            let report = try await newPhone.launch()
            #expect(report.adjusted == 0)
            #expect(try await newPhone.balance() == 300)
        }
    }

    @Test("the server keeps only keys of the customer's own mailbox, and refuses more than 1,000")
    func serverFilters() async throws {
        try await PurchaseFlowTests.withWorld(wallet: .device) { world in
            let app = try world.app()
            try await app.launch()
            let token = try #require(await app.credentials?.token)
            let current = try await world.server.backup(token: token)
            let written = try await world.server.saveBackup(
                value: 10, device: "phone", version: current?.version, applied: ["revocation:someone-else", "x"],
                token: token)
            #expect(written.applied == nil)  // none of them is this customer's
            do {
                _ = try await world.server.saveBackup(
                    value: 10, device: "phone", version: written.version,
                    applied: (0...1_000).map { "adjustment:\($0)" }, token: token)
                Issue.record("1,001 keys were taken")
            } catch let error as ServerClientError {
                if case .refused(let status, _, _) = error { #expect(status == 400) } else { Issue.record("\(error)") }
            }
            #expect(try await world.server.backup(token: token)?.version == written.version)
        }
    }
}
