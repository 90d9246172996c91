import CofferCore
import Foundation

/// The last Verify Purchases the customer's app ran, as it reported it.
public struct VerifyReportView: Sendable, Hashable, Codable {
    /// When the server received it.
    public var reportedAt: Date
    /// What the app found, one item per transaction.
    public var items: [ReconciliationItem]

    /// Creates the view.
    public init(reportedAt: Date, items: [ReconciliationItem]) {
        self.reportedAt = reportedAt
        self.items = items
    }
}
