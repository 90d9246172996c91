import CofferAPI
import Foundation

extension CofferSDK {
    /// The customer's answer to sharing consumption data with Apple when they ask Apple for a refund, as the server
    /// holds it: `nil` until they answered. Ask once (``setConsumptionConsent(_:)``), in your own words: Apple
    /// requires the customer's consent, and App Tracking Transparency's prompt is not it.
    public func consumptionConsent() async throws -> ConsentResponse? {
        try await signedIn { try await server.me(token: $0) }.consent
    }

    /// Records the customer's answer: with `true`, Coffer answers Apple's refund requests about their purchases
    /// with what the ledger knows (delivered, share used); with `false` (withdrawn at any time), nothing is sent.
    @discardableResult
    public func setConsumptionConsent(_ consented: Bool) async throws -> ConsentResponse {
        try await signedIn { try await server.saveConsent(consented, token: $0) }
    }
}
