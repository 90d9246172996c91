import Foundation

#if canImport(Security)
    import Security
#endif

/// The identity in the Keychain, where it survives deleting and reinstalling the app: a generic password item,
/// readable after the first unlock (so background launches can use it), not synced to other devices.
///
/// The rules (not found is no identity, update else add, every other status an error) run over
/// `KeychainItems`: the Keychain's `SecItem` calls on Apple platforms (`SecurityKeychain`), a stand-in in the
/// Linux tests.
public struct KeychainCredentialStore: CredentialStore {
    /// The item's service.
    public let service: String
    /// The item's account.
    public let account: String
    let keychain: any KeychainItems

    /// The stored identity, if any.
    public func load() throws -> DeviceIdentity? {
        let (status, data) = keychain.copyMatching(service: service, account: account)
        if status == KeychainError.itemNotFound { return nil }
        guard status == KeychainError.success, let data else { throw KeychainError(status: status) }
        return try JSONDecoder().decode(DeviceIdentity.self, from: data)
    }

    /// Stores the identity, replacing any.
    public func save(_ identity: DeviceIdentity) throws {
        let data = try JSONEncoder().encode(identity)
        let update = keychain.update(service: service, account: account, data: data)
        if update == KeychainError.success { return }
        guard update == KeychainError.itemNotFound else { throw KeychainError(status: update) }
        let added = keychain.add(service: service, account: account, data: data)
        guard added == KeychainError.success else { throw KeychainError(status: added) }
    }
}

#if canImport(Security)
    extension KeychainCredentialStore {
        /// A store of one Keychain item. (Declared in an extension, so the memberwise initializer the tests use
        /// stays.)
        public init(service: String = "coffer", account: String = "identity") {
            self.init(service: service, account: account, keychain: SecurityKeychain())
        }
    }
#endif

/// The three Keychain calls the store makes on one generic password item, each answering the Keychain's
/// `OSStatus`.
protocol KeychainItems: Sendable {
    /// `SecItemCopyMatching` for the item's data (one match).
    func copyMatching(service: String, account: String) -> (status: Int32, data: Data?)
    /// `SecItemUpdate` of the item's data.
    func update(service: String, account: String, data: Data) -> Int32
    /// `SecItemAdd` of a new item, accessible after the first unlock, on this device only.
    func add(service: String, account: String, data: Data) -> Int32
}

#if canImport(Security)
    /// The Keychain itself.
    struct SecurityKeychain: KeychainItems {
        func copyMatching(service: String, account: String) -> (status: Int32, data: Data?) {
            var query = Self.query(service, account)
            query[kSecReturnData as String] = true
            query[kSecMatchLimit as String] = kSecMatchLimitOne
            var item: CFTypeRef?
            let status = SecItemCopyMatching(query as CFDictionary, &item)
            return (status, item as? Data)
        }

        func update(service: String, account: String, data: Data) -> Int32 {
            SecItemUpdate(
                Self.query(service, account) as CFDictionary, [kSecValueData as String: data] as CFDictionary)
        }

        func add(service: String, account: String, data: Data) -> Int32 {
            var item = Self.query(service, account)
            item[kSecValueData as String] = data
            item[kSecAttrAccessible as String] = kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly
            return SecItemAdd(item as CFDictionary, nil)
        }

        private static func query(_ service: String, _ account: String) -> [String: Any] {
            [
                kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: service,
                kSecAttrAccount as String: account,
            ]
        }
    }
#endif

/// A Keychain call failed with this `OSStatus`.
public struct KeychainError: Error, Equatable, Sendable {
    /// The status.
    public let status: Int32

    /// `errSecSuccess`.
    static let success: Int32 = 0
    /// `errSecItemNotFound` (-25300, Security's SecBase.h).
    static let itemNotFound: Int32 = -25_300
}
