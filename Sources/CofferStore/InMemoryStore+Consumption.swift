// swift-format-ignore-file: AllPublicDeclarationsHaveDocumentation

// The public methods here are the store protocols' requirements, documented there (`CofferStore/Stores`).
import CofferCore
import Foundation

/// The in-memory store's refund defence: consents and answers.
extension InMemoryStore {
    public func saveConsumptionConsent(_ consent: ConsumptionConsent) throws {
        guard isLive(consent.owner), state.users[consent.owner]?.environment == consent.environment else {
            throw StoreError.notFound("user \(consent.owner)")
        }
        consents[consent.owner] = consent
    }

    public func consumptionConsent(owner: UUID, environment: AppStoreEnvironment) -> ConsumptionConsent? {
        consents[owner].flatMap { $0.environment == environment ? $0 : nil }
    }

    public func recordConsumptionAnswer(_ answer: ConsumptionAnswerRecord) -> Bool {
        guard isLive(answer.owner),
            !consumptionAnswerLog.contains(where: {
                $0.notificationUUID == answer.notificationUUID && $0.environment == answer.environment
            })
        else { return false }
        consumptionAnswerLog.append(answer)
        return true
    }

    public func consumptionAnswers(owner: UUID, environment: AppStoreEnvironment, limit: Int)
        -> [ConsumptionAnswerRecord]
    {
        Array(
            consumptionAnswerLog.filter { $0.owner == owner && $0.environment == environment }
                .sorted { ($0.requestedAt, $0.notificationUUID) > ($1.requestedAt, $1.notificationUUID) }
                .prefix(max(0, limit)))
    }
}
