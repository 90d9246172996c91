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

/// What the SDK keeps where it survives reinstalling the app (the Keychain on Apple platforms): the user's
/// credentials, so a reinstalled app finds its user again, and the keys of the changes it applied from the
/// server (grants, refunds the server learned of), so a reinstalled app restoring its backup never applies
/// one twice.
public struct DeviceIdentity: Codable, Sendable, Equatable {
    /// The user.
    public var credentials: Credentials
    /// Ledger keys applied from the server, e.g. `grant:...`, `revocation:2000000123`.
    public var appliedKeys: Set<String>

    /// Creates an identity.
    public init(credentials: Credentials, appliedKeys: Set<String> = []) {
        self.credentials = credentials
        self.appliedKeys = appliedKeys
    }
}

/// Where the ``DeviceIdentity`` lives.
public protocol CredentialStore: Sendable {
    /// The stored identity, if any.
    func load() throws -> DeviceIdentity?
    /// Stores the identity, replacing any.
    func save(_ identity: DeviceIdentity) throws
}

/// The identity in a file readable only by its owner (where there is no Keychain): written whole to a
/// temporary file and renamed, so a crash never leaves half a file.
public struct FileCredentialStore: CredentialStore {
    /// The file.
    public let path: String

    /// A store at `path`.
    public init(path: String) { self.path = path }

    /// The stored identity, if any.
    public func load() throws -> DeviceIdentity? {
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        return try JSONDecoder().decode(DeviceIdentity.self, from: Data(contentsOf: URL(fileURLWithPath: path)))
    }

    /// Stores the identity with owner-only permissions.
    public func save(_ identity: DeviceIdentity) throws {
        let temporary = path + ".tmp"
        try? FileManager.default.removeItem(atPath: temporary)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        guard
            FileManager.default.createFile(
                atPath: temporary, contents: try encoder.encode(identity), attributes: [.posixPermissions: 0o600])
        else { throw CocoaError(.fileWriteUnknown) }
        guard rename(temporary, path) == 0 else { throw CocoaError(.fileWriteUnknown) }
    }
}
