/// Who owns the running balance.
public enum WalletMode: String, Sendable, CaseIterable, Codable {
    /// The app owns it (it changes with play); the server keeps backups and hands grants to the app.
    case device
    /// The server owns it: grants credit it, the app spends with an idempotency key.
    case server
}
