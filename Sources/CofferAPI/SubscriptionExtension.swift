import Foundation

/// `POST /v1/admin/users/{supportId}/extend`: support extends the customer's subscriptions through Apple's Extend
/// a Subscription Renewal Date.
public struct ExtendSubscriptionRequest: Codable, Sendable, Equatable {
    /// Days to add, 1 to 90.
    public var days: Int
    /// Apple's reason code: 0 undeclared, 1 customer satisfaction, 2 other, 3 service issue or outage.
    public var reasonCode: Int
    /// Support's own words, e.g. "Ticket #42", kept in the audit log; the reason code's words when absent.
    public var reason: String?
    /// Only this subscription product's group; every active subscription of the customer when absent.
    public var productId: String?

    /// Creates the request.
    public init(days: Int, reasonCode: Int, reason: String? = nil, productId: String? = nil) {
        self.days = days
        self.reasonCode = reasonCode
        self.reason = reason
        self.productId = productId
    }
}

/// What one subscription's extension came to.
public struct SubscriptionExtensionView: Codable, Sendable, Equatable {
    /// The subscription chain.
    public var originalTransactionId: String
    /// The product of its current period.
    public var productId: String
    /// Whether Apple extended it.
    public var extended: Bool
    /// The period's new end, as Apple answered it.
    public var effectiveDate: Date?
    /// Apple's refusal, when it refused (e.g. a third extension within a year, a free offer period).
    public var error: String?

    /// Creates the view.
    public init(
        originalTransactionId: String, productId: String, extended: Bool, effectiveDate: Date? = nil,
        error: String? = nil
    ) {
        self.originalTransactionId = originalTransactionId
        self.productId = productId
        self.extended = extended
        self.effectiveDate = effectiveDate
        self.error = error
    }
}

/// What `POST /v1/admin/users/{supportId}/extend` answers.
public struct ExtendSubscriptionResponse: Codable, Sendable, Equatable {
    /// The customer.
    public var supportId: String
    /// Days added.
    public var days: Int
    /// Apple's reason code.
    public var reasonCode: Int
    /// Each active subscription, extended or refused.
    public var extensions: [SubscriptionExtensionView]

    /// Creates the answer.
    public init(supportId: String, days: Int, reasonCode: Int, extensions: [SubscriptionExtensionView]) {
        self.supportId = supportId
        self.days = days
        self.reasonCode = reasonCode
        self.extensions = extensions
    }
}

/// `POST /v1/admin/subscriptions/extend`: an outage: every active subscriber of a product extended through Apple's
/// Extend Renewal Dates for All Active Subscribers.
public struct MassExtensionRequest: Codable, Sendable, Equatable {
    /// The subscription product.
    public var productId: String
    /// Days to add, 1 to 90.
    public var days: Int
    /// Apple's reason code (3 for a service issue or outage).
    public var reasonCode: Int
    /// Support's own words, kept in the audit log; the reason code's words when absent.
    public var reason: String?
    /// Only subscribers of these storefronts (ISO 3166-1 alpha-3); all when absent.
    public var storefronts: [String]?

    /// Creates the request.
    public init(productId: String, days: Int, reasonCode: Int, reason: String? = nil, storefronts: [String]? = nil) {
        self.productId = productId
        self.days = days
        self.reasonCode = reasonCode
        self.reason = reason
        self.storefronts = storefronts
    }
}

/// A mass extension and how far Apple got with it (Get Status of Subscription Renewal Date Extensions).
public struct MassExtensionView: Codable, Sendable, Equatable {
    /// Apple's request identifier.
    public var requestIdentifier: String
    /// The subscription product.
    public var productId: String
    /// Days added.
    public var days: Int
    /// Apple's reason code.
    public var reasonCode: Int
    /// Who asked, as the audit log names them.
    public var requestedBy: String
    /// When.
    public var requestedAt: Date
    /// Whether Apple has finished; `nil` when Apple did not answer just now.
    public var complete: Bool?
    /// When Apple finished.
    public var completeDate: Date?
    /// Subscriptions extended so far.
    public var succeededCount: Int64?
    /// Subscriptions Apple could not extend.
    public var failedCount: Int64?

    /// Creates the view.
    public init(
        requestIdentifier: String, productId: String, days: Int, reasonCode: Int, requestedBy: String,
        requestedAt: Date, complete: Bool? = nil, completeDate: Date? = nil, succeededCount: Int64? = nil,
        failedCount: Int64? = nil
    ) {
        self.requestIdentifier = requestIdentifier
        self.productId = productId
        self.days = days
        self.reasonCode = reasonCode
        self.requestedBy = requestedBy
        self.requestedAt = requestedAt
        self.complete = complete
        self.completeDate = completeDate
        self.succeededCount = succeededCount
        self.failedCount = failedCount
    }
}

/// What `GET /v1/admin/subscriptions/extensions` answers: the latest mass extensions, newest first.
public struct MassExtensionsResponse: Codable, Sendable, Equatable {
    /// The extensions.
    public var extensions: [MassExtensionView]

    /// Creates the answer.
    public init(extensions: [MassExtensionView]) { self.extensions = extensions }
}
