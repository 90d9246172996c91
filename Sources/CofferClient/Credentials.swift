import CofferAPI
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Who this app is to the Coffer server: the user made on first launch (Support ID, bearer token and the
/// account token passed to StoreKit), as `POST /v1/users` answered.
public typealias Credentials = CreateUserResponse

/// Where the credentials live: somewhere that survives reinstalling the app (the Keychain on Apple
/// platforms), so a reinstalled app finds its user again.
public protocol CredentialStore: Sendable {
    /// The stored credentials, if any.
    func load() throws -> Credentials?
    /// Stores credentials, replacing any.
    func save(_ credentials: Credentials) throws
}

/// Credentials in a file readable only by its owner (where there is no Keychain): written whole to a
/// temporary file and renamed, so a crash never leaves half a file.
public struct FileCredentialStore: CredentialStore {
    /// The file.
    public let path: String

    /// A store at `path`.
    public init(path: String) { self.path = path }

    /// The stored credentials, if any.
    public func load() throws -> Credentials? {
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        return try JSONDecoder().decode(Credentials.self, from: Data(contentsOf: URL(fileURLWithPath: path)))
    }

    /// Stores credentials with owner-only permissions.
    public func save(_ credentials: Credentials) throws {
        let temporary = path + ".tmp"
        try? FileManager.default.removeItem(atPath: temporary)
        guard
            FileManager.default.createFile(
                atPath: temporary, contents: try JSONEncoder().encode(credentials),
                attributes: [.posixPermissions: 0o600])
        else { throw CocoaError(.fileWriteUnknown) }
        guard rename(temporary, path) == 0 else { throw CocoaError(.fileWriteUnknown) }
    }
}
