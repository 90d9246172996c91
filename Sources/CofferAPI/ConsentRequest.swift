/// `PUT /v1/me/consent`: the customer's answer to sharing consumption data with Apple when they ask for a refund.
public struct ConsentRequest: Codable, Sendable, Equatable {
    /// Whether the customer consents (Apple's `customerConsented`); `false` withdraws an earlier consent.
    public var customerConsented: Bool

    /// Creates the request.
    public init(customerConsented: Bool) {
        self.customerConsented = customerConsented
    }
}

/// What `PUT /v1/me/consent` answers, and `GET /v1/me` reports as `consent`.
public struct ConsentResponse: Codable, Sendable, Hashable {
    /// The customer's answer.
    public var customerConsented: Bool
    /// When they gave it (ISO 8601).
    public var at: String

    /// Creates the answer.
    public init(customerConsented: Bool, at: String) {
        self.customerConsented = customerConsented
        self.at = at
    }
}
