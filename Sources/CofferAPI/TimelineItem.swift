import CofferCore
import Foundation

/// One line of a user's timeline.
public struct TimelineItem: Sendable, Hashable, Codable {
    /// When.
    public var at: Date
    /// What kind of event.
    public var kind: TimelineKind
    /// One readable sentence.
    public var summary: String
    /// The change to the balance, when there was one.
    public var credits: Int64?
    /// The balance after, for ledger entries and backups.
    public var balanceAfter: Int64?
    /// A transaction id, grant id or ledger key.
    public var reference: String?
    /// The environment Apple's data came from, for purchases, refunds and reversals whose source said: on a
    /// Production server, Sandbox marks App Review's and TestFlight's purchases; Xcode marks Xcode's StoreKit testing.
    public var dataEnvironment: DataEnvironment?
    /// The currency of a ledger entry of another currency than the default, by id; `nil` for the default's.
    public var currency: String?

    /// Creates an item.
    public init(
        at: Date, kind: TimelineKind, summary: String, credits: Int64? = nil, balanceAfter: Int64? = nil,
        reference: String? = nil, dataEnvironment: DataEnvironment? = nil
    ) {
        self.at = at
        self.kind = kind
        self.summary = summary
        self.credits = credits
        self.balanceAfter = balanceAfter
        self.reference = reference
        self.dataEnvironment = dataEnvironment
    }
}
