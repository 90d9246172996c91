/// A page of customers found by a search: `GET /v1/admin/users?q=`.
public struct UserSearchResult: Sendable, Hashable, Codable {
    /// How a search matched.
    public enum Match: String, Sendable, Hashable, Codable, CaseIterable {
        /// No query: every customer, newest first.
        case all
        /// A Support ID, or the start of one.
        case supportId = "support-id"
        /// One of Apple's transaction ids (or an original transaction id) the customer owns.
        case transactionId = "transaction-id"
        /// The order id on the customer's emailed receipt from Apple.
        case orderId = "order-id"
        /// A customer `coffer import cloudkit` brought in, by their old Support ID (the CloudKit record name).
        case cloudKitRecordName = "cloudkit-record-name"
        /// Nothing matched.
        case nothing
    }

    /// The users, newest first.
    public var users: [UserSummary]
    /// How the query matched.
    public var matchedBy: Match
    /// The page, from 1.
    public var page: Int
    /// Whether another page follows.
    public var hasMore: Bool

    /// Creates a result.
    public init(users: [UserSummary], matchedBy: Match, page: Int, hasMore: Bool) {
        self.users = users
        self.matchedBy = matchedBy
        self.page = page
        self.hasMore = hasMore
    }
}
