import Foundation

/// One customer in a list: `GET /v1/admin/users`, and the head of a customer's detail.
public struct UserSummary: Sendable, Hashable, Codable {
    /// The Support ID.
    public var supportId: String
    /// When the user was created.
    public var createdAt: Date
    /// The server's balance.
    public var balance: Int64
    /// Credits owed after refunds.
    public var deficit: Int64
    /// The device's backup, if any.
    public var backup: BackupView?
    /// When the customer was deleted at their request, if they were.
    public var deletedAt: Date?

    /// Creates a summary.
    public init(
        supportId: String, createdAt: Date, balance: Int64, deficit: Int64, backup: BackupView?, deletedAt: Date? = nil
    ) {
        self.deletedAt = deletedAt
        self.supportId = supportId
        self.createdAt = createdAt
        self.balance = balance
        self.deficit = deficit
        self.backup = backup
    }
}
