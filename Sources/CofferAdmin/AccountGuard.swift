import Foundation

/// The failures that protect an admin account, counted in the store (``AdminStore/recordFailure(_:at:since:)``)
/// so that several instances behind a load balancer do not multiply them: wrong passwords per account and
/// address (an attacker elsewhere cannot lock support out), and wrong two-factor codes per account whatever the
/// address (once a password is known, codes cannot be guessed from many addresses).
public enum AccountGuard {
    /// How long a failure counts.
    public static let window: TimeInterval = 3_600
    /// Wrong passwords for one account from one address in ``window`` before that address waits.
    public static let passwordLimit = 10
    /// Wrong two-factor codes for one account in ``window``, from anywhere, before the account waits.
    public static let codeLimit = 10

    /// What is guessed at.
    public enum Secret: Sendable, Hashable {
        /// An admin's password, from one address.
        case password(account: String, address: String)
        /// An admin's two-factor codes, from anywhere.
        case code(account: String)

        /// The store's key.
        public var key: String {
            switch self {
            // The unit separator: no name or address holds it, and every database keeps it in text.
            case .password(let account, let address): "password:\(account.lowercased())\u{1F}\(address)"
            case .code(let account): "code:\(account.lowercased())"
            }
        }

        /// How many failures in ``AccountGuard/window`` make it wait.
        public var limit: Int {
            switch self {
            case .password: AccountGuard.passwordLimit
            case .code: AccountGuard.codeLimit
            }
        }
    }
}
