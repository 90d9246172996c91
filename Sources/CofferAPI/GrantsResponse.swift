/// `GET /v1/me/grants` answers with this.
public struct GrantsResponse: Codable, Sendable, Equatable {
    /// The grants, newest first.
    public var grants: [GrantBody]

    /// Creates the answer.
    public init(grants: [GrantBody]) { self.grants = grants }
}
