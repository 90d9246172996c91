/// The body of `POST /v1/me/milestones`: a milestone the app reached for the customer, e.g. `loyalty:pro` (the
/// loyalty lifetime of the group `pro` earned).
public struct MilestoneRequest: Codable, Sendable, Equatable {
    /// The milestone: 1 to 64 characters of `a-z`, `0-9`, `.`, `_`, `-` and `:`.
    public var name: String

    /// Creates the body.
    public init(name: String) { self.name = name }
}
