/// The environment Apple's signed data names, as it is marked for support and in exports: Sandbox and Production
/// as Apple's servers sign them, and Xcode for StoreKit testing in Xcode (a Sandbox server's `xcode.certificate`),
/// whose rules are Sandbox's.
public enum DataEnvironment: String, Codable, Sendable, CaseIterable, Hashable {
    /// Apple's sandbox: App Review, TestFlight, sandbox testers, the App Store simulator.
    case sandbox = "Sandbox"
    /// Apple's production App Store.
    case production = "Production"
    /// StoreKit testing in Xcode, signed by Xcode's own certificate.
    case xcode = "Xcode"

    /// The mark of data of `environment`, signed by Xcode or by Apple.
    public init(_ environment: AppStoreEnvironment, signedByXcode: Bool = false) {
        self = signedByXcode ? .xcode : environment == .production ? .production : .sandbox
    }

    /// The environment whose rules the data follows (Xcode's are Sandbox's).
    public var rules: AppStoreEnvironment { self == .production ? .production : .sandbox }
}

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
