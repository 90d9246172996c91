import CofferCore

/// The environment Apple names in signed data (`environment`, `receiptType`).
public enum SignedDataEnvironment: String, Codable, Sendable, CaseIterable, Hashable {
    /// Apple's sandbox.
    case sandbox = "Sandbox"
    /// The App Store.
    case production = "Production"
    /// StoreKit testing in Xcode: signed by Xcode's own key, never trusted.
    case xcode = "Xcode"
    /// StoreKit local testing: as untrusted as Xcode.
    case localTesting = "LocalTesting"

    /// Parses a name as typed on a command line (case-insensitive).
    ///
    /// - Parameter name: `sandbox`, `Production`, `xcode`, `localtesting`, ...
    public init?(name: String) {
        guard let match = Self.allCases.first(where: { $0.rawValue.lowercased() == name.lowercased() }) else {
            return nil
        }
        self = match
    }

    /// Whether data in this environment is signed by Xcode or a local test and can only be decoded.
    public var isLocal: Bool { self == .xcode || self == .localTesting }

    /// The ledger environment records of this environment belong to; local testing counts as Sandbox.
    public var ledgerEnvironment: AppStoreEnvironment { self == .production ? .production : .sandbox }
}
