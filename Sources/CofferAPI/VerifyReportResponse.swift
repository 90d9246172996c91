/// `PUT /v1/me/verify-report` answers with this.
public struct VerifyReportResponse: Codable, Sendable, Equatable {
    /// The items kept.
    public var items: Int

    /// Creates the answer.
    public init(items: Int) { self.items = items }
}
