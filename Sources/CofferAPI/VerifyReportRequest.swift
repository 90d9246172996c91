/// The body of `PUT /v1/me/verify-report`: what the app's "Verify Purchases" found, for support's customer page.
/// It replaces the install's report before.
public struct VerifyReportRequest: Codable, Sendable, Equatable {
    /// One item per transaction, at most 500.
    public var items: [VerifyReportItem]

    /// Creates the body.
    public init(items: [VerifyReportItem]) { self.items = items }
}
