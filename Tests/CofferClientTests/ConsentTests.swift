import CofferClient
import Foundation
import Testing

/// The SDK records the customer's answer to sharing consumption data with Apple, once asked.
@Suite("SDK consent to share consumption data", .timeLimit(.minutes(1)))
struct ConsentTests {
    @Test("unasked at first; an answer is recorded on the server and can be withdrawn")
    func consent() async throws {
        try await PurchaseFlowTests.withWorld(wallet: .server) { world in
            let app = try world.app()
            try await app.launch()
            #expect(try await app.consumptionConsent() == nil)
            #expect(try await app.setConsumptionConsent(true).customerConsented)
            #expect(try await app.consumptionConsent()?.customerConsented == true)
            try await app.setConsumptionConsent(false)
            #expect(try await app.consumptionConsent()?.customerConsented == false)
        }
    }

    @Test("a parent's withdrawn consent reaches the app as a change")
    func rescinded() async throws {
        try await PurchaseFlowTests.withWorld(wallet: .server) { world in
            let app = try world.app()
            try await app.launch()
            var changes = await app.changes().makeAsyncIterator()
            #expect(await app.handlePush(["type": "consent-rescinded"]))
            var seen: [CofferChange] = []
            while let change = await changes.next() {
                seen.append(change)
                if change == .consentRescinded { break }
            }
            #expect(seen.contains(.consentRescinded))
        }
    }
}
