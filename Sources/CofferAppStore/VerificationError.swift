/// Why signed data from Apple was rejected, named with Apple's own statuses.
public enum VerificationError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Malformed input, a wrong algorithm, a bad signature or undecodable payload: `VERIFICATION_FAILURE`.
    case verificationFailure(String)
    /// The bundle id or (in Production) the appAppleId does not match: `INVALID_APP_IDENTIFIER`.
    case invalidAppIdentifier(String)
    /// The payload's environment is not the configured one: `INVALID_ENVIRONMENT`.
    case invalidEnvironment(String)
    /// The x5c header does not hold exactly three certificates: `INVALID_CHAIN_LENGTH`.
    case invalidChainLength(Int)
    /// A certificate cannot be parsed, or was revoked: `INVALID_CERTIFICATE`.
    case invalidCertificate(String)
    /// The certificates do not chain to a trusted root under Apple's rules: `INVALID_CHAIN`.
    case invalidChain(String)
    /// An online check could not be completed; try again later: `RETRYABLE_VERIFICATION_FAILURE`.
    case retryableVerificationFailure(String)

    /// Apple's name for the status, e.g. `INVALID_APP_IDENTIFIER`.
    public var status: String {
        switch self {
        case .verificationFailure: "VERIFICATION_FAILURE"
        case .invalidAppIdentifier: "INVALID_APP_IDENTIFIER"
        case .invalidEnvironment: "INVALID_ENVIRONMENT"
        case .invalidChainLength: "INVALID_CHAIN_LENGTH"
        case .invalidCertificate: "INVALID_CERTIFICATE"
        case .invalidChain: "INVALID_CHAIN"
        case .retryableVerificationFailure: "RETRYABLE_VERIFICATION_FAILURE"
        }
    }

    /// What went wrong, for logs and the CLI.
    public var message: String {
        switch self {
        case .verificationFailure(let detail), .invalidAppIdentifier(let detail), .invalidEnvironment(let detail),
            .invalidCertificate(let detail), .invalidChain(let detail), .retryableVerificationFailure(let detail):
            detail
        case .invalidChainLength(let count): "x5c holds \(count) certificates; Apple's chain has 3"
        }
    }

    /// `STATUS: message`.
    public var description: String { "\(status): \(message)" }
}
