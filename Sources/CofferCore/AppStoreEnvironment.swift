/// The App Store environment a record belongs to. Sandbox and Production data never mix: every record
/// Coffer stores carries one.
public enum AppStoreEnvironment: String, Codable, Sendable, CaseIterable, Hashable {
    /// Apple's sandbox: TestFlight, development builds, and the App Store simulator.
    case sandbox = "Sandbox"
    /// Apple's production App Store.
    case production = "Production"

    /// Parses a user-supplied environment name, case-insensitively (`sandbox`, `Production`, ...).
    ///
    /// - Parameter name: The name as typed on a command line or in configuration.
    /// - Returns: The environment, or `nil` when the name is neither Sandbox nor Production.
    public init?(name: String) {
        switch name.lowercased() {
        case "sandbox": self = .sandbox
        case "production": self = .production
        default: return nil
        }
    }
}
