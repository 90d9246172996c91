import Foundation

/// One of Apple's refund requests (CONSUMPTION_REQUEST) about a customer's purchase, as support sees it: what Coffer
/// answered Apple, and why.
public struct RefundRequestView: Sendable, Hashable, Codable {
    /// When Apple asked.
    public var requestedAt: Date
    /// The transaction the customer asked Apple to refund.
    public var transactionId: String
    /// Whether Send Consumption Information was sent (and Apple took it).
    public var sent: Bool
    /// What was sent, Apple's JSON (or what was built when sending failed); `nil` when nothing was built.
    public var answer: String?
    /// Why: how the answer was reached, or why nothing was sent.
    public var reason: String

    /// Creates a view.
    public init(requestedAt: Date, transactionId: String, sent: Bool, answer: String?, reason: String) {
        self.requestedAt = requestedAt
        self.transactionId = transactionId
        self.sent = sent
        self.answer = answer
        self.reason = reason
    }
}
