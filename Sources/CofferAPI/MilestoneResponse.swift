/// `POST /v1/me/milestones` answers with this: whether the customer reached the milestone for the first time
/// (on any of its devices), so the app celebrates it once.
public struct MilestoneResponse: Codable, Sendable, Equatable {
    /// The milestone.
    public var name: String
    /// Whether this is the first time it was recorded for the customer.
    public var first: Bool

    /// Creates the answer.
    public init(name: String, first: Bool) {
        self.name = name
        self.first = first
    }
}
