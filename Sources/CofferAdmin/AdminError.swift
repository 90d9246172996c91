/// Why an admin action was refused.
public enum AdminError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Nothing with this name exists.
    case notFound(String)
    /// The input is not acceptable.
    case invalid(String)
    /// The action is not allowed here (deleting Production's grants, say).
    case forbidden(String)
    /// Something the action needs (Apple's API) did not answer; try again later.
    case unavailable(String)
    /// The record changed since support saw it (a balance edit's balance); nothing was changed.
    case changed(String)

    /// The reason, for people.
    public var description: String {
        switch self {
        case .notFound(let what): "\(what) not found"
        case .invalid(let why): why
        case .forbidden(let why): why
        case .unavailable(let why): why
        case .changed(let why): why
        }
    }
}
