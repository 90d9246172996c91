import CofferAPI
import CofferCore
import CofferSimulator
import Foundation
import Synchronization
import Testing

@testable import CofferClient

/// The SDK's log: every step it takes, each server call with the request id the server logged, and never a
/// credential or a signed transaction.
@Suite("SDK: the log of every step", .timeLimit(.minutes(2)))
struct SDKLogTests {
    /// Lines an app's sink received.
    final class Lines: Sendable {
        let all = Mutex<[SDKLogEntry]>([])
        var log: SDKLog { SDKLog(toPlatform: false, sink: { line in self.all.withLock { $0.append(line) } }) }
        func of(_ category: SDKLogCategory) -> [String] {
            all.withLock { $0.filter { $0.category == category }.map(\.message) }
        }
    }

    @Test("launch, purchase, refund, recovery, grant and backup each write their lines", arguments: WalletMode.allCases)
    func everyStep(wallet: WalletMode) async throws {
        try await PurchaseFlowTests.withWorld(wallet: wallet) { world in
            let lines = Lines()
            // A purchase whose process died after StoreKit answered: the next launch recovers it.
            let dying = try world.app(crashAfter: .purchased, log: lines.log)
            _ = try await dying.launch()
            await #expect(throws: PurchaseFlowTests.ProcessDied.self) {
                try await dying.purchase(productId: PurchaseFlowTests.product)
            }
            let app = try world.app(log: lines.log)
            let report = try await app.launch()
            let recovered = try #require(report.recovered.first)
            #expect(lines.of(.recovery).contains { $0.contains("recovered transaction \(recovered)") })
            #expect(lines.of(.launch).contains { $0.hasPrefix("launch: \(wallet.rawValue) wallet, Sandbox") })
            #expect(lines.of(.launch).contains { $0.hasPrefix("launch done: 1 recovered") })
            guard case .delivered(let bought, _) = try await app.purchase(productId: PurchaseFlowTests.product) else {
                Issue.record("not delivered")
                return
            }
            #expect(lines.of(.purchase).contains("purchase \(PurchaseFlowTests.product) ×1: asking StoreKit"))
            #expect(lines.of(.purchase).contains { $0.contains("transaction \(bought) delivered (100 credits)") })
            // Refunded by Apple, taken back by the refund check.
            try await world.apple.refund(transactionId: bought)
            _ = try await app.enteredForeground()
            #expect(lines.of(.refund).contains { $0.contains("taken back") })
            if wallet == .device {
                #expect(lines.of(.backup).contains { $0.hasPrefix("backup: ") })
            }
            // Every server call is a line with its status and the request id the server answered with.
            let server = lines.of(.server)
            #expect(server.contains { $0.hasPrefix("POST /v1/transactions: 200 in ") })
            #expect(server.allSatisfy { $0.range(of: #"request [0-9a-f-]{36}$"#, options: .regularExpression) != nil })
            // Never a token or a signed transaction.
            let token = try #require(await app.credentials?.token)
            let signed = try await world.apple.signedTransaction(id: bought)
            #expect(
                lines.all.withLock { $0.allSatisfy { !$0.message.contains(token) && !$0.message.contains(signed) } })
        }
    }

    @Test("a server out of reach is a warning naming the request; the minimum level drops the detail")
    func outOfReach() async throws {
        try await PurchaseFlowTests.withWorld(wallet: .device) { world in
            let lines = Lines()
            let app = try world.app(offline: true, log: lines.log)
            _ = try await app.launch()
            let warnings = lines.all.withLock { $0.filter { $0.level == .warning && $0.category == .server } }
            #expect(!warnings.isEmpty && warnings.allSatisfy { $0.message.contains(": no answer (") })
            let quiet = Lines()
            var log = quiet.log
            log.minimumLevel = .notice
            _ = try await world.app(log: log).launch()
            #expect(quiet.all.withLock { $0.allSatisfy { $0.level >= .notice } })
            // The same launch at every level writes its detail: the lines above were dropped by the level alone.
            let everything = Lines()
            _ = try await world.app(log: everything.log).launch()
            #expect(everything.all.withLock { $0.contains { $0.level < .notice } })
        }
    }
}
