import CofferCore
import Foundation

/// A customer's answer to sharing consumption data with Apple for refund requests (`PUT /v1/me/consent`).
public struct ConsumptionConsent: Sendable, Hashable, Codable {
    /// The customer.
    public var owner: UUID
    /// Their environment.
    public var environment: AppStoreEnvironment
    /// Whether they consented (Apple takes consumption information only with `customerConsented: true`).
    public var consented: Bool
    /// When they answered.
    public var at: Date

    /// Creates a consent record.
    public init(owner: UUID, environment: AppStoreEnvironment, consented: Bool, at: Date) {
        self.owner = owner
        self.environment = environment
        self.consented = consented
        self.at = at
    }
}

/// What Coffer answered one of Apple's CONSUMPTION_REQUEST notifications, and why: support reads it on the customer
/// page.
public struct ConsumptionAnswerRecord: Sendable, Hashable, Codable {
    /// The request's `notificationUUID`: one answer per request.
    public var notificationUUID: String
    /// The environment.
    public var environment: AppStoreEnvironment
    /// The customer the refund request is about.
    public var owner: UUID
    /// The transaction the customer asked Apple to refund.
    public var transactionId: String
    /// When Apple asked (the notification's `signedDate`).
    public var requestedAt: Date
    /// When Coffer answered, or decided not to.
    public var answeredAt: Date
    /// Whether Send Consumption Information was sent and Apple took it.
    public var sent: Bool
    /// The body sent (Apple's JSON), or that would have been sent; `nil` when nothing was built.
    public var body: String?
    /// Why: how the answer was reached, or why nothing was sent (no consent, answers off, Apple's refusal).
    public var reason: String

    /// Creates a record.
    public init(
        notificationUUID: String, environment: AppStoreEnvironment, owner: UUID, transactionId: String,
        requestedAt: Date, answeredAt: Date, sent: Bool, body: String?, reason: String
    ) {
        self.notificationUUID = notificationUUID
        self.environment = environment
        self.owner = owner
        self.transactionId = transactionId
        self.requestedAt = requestedAt
        self.answeredAt = answeredAt
        self.sent = sent
        self.body = body
        self.reason = reason
    }

    /// The longest reason and body kept.
    public static let maximumText = 4_000
}

/// The refund defence's records: each customer's consent to share consumption data, and what was answered to each
/// of Apple's refund requests. A customer's deletion deletes both.
public protocol ConsumptionStore: Sendable {
    /// Saves a live customer's consent answer, replacing the one before.
    ///
    /// - Throws: ``StoreError/notFound(_:)`` when the customer is not live.
    func saveConsumptionConsent(_ consent: ConsumptionConsent) async throws
    /// The customer's last consent answer, if any.
    func consumptionConsent(owner: UUID, environment: AppStoreEnvironment) async throws -> ConsumptionConsent?
    /// Records an answer unless one for its notification is recorded in its environment, or its customer is no
    /// longer live (deleted meanwhile: nothing of theirs is written).
    ///
    /// - Returns: `true` when recorded, `false` when it was already there or the customer is gone (nothing
    ///   changed).
    func recordConsumptionAnswer(_ answer: ConsumptionAnswerRecord) async throws -> Bool
    /// The customer's answers, latest request first, at most `limit`.
    func consumptionAnswers(owner: UUID, environment: AppStoreEnvironment, limit: Int) async throws
        -> [ConsumptionAnswerRecord]
}
