/// Whether a grant has been picked up by the app.
public enum GrantStatus: String, Sendable, Hashable, Codable, CaseIterable {
    /// Waiting for the app.
    case pending
    /// Delivered to the app.
    case claimed
    /// Cancelled by support before the app claimed it: the app never gets it.
    case cancelled
}
