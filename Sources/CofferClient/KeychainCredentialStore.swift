// The Keychain exists on Apple platforms only; elsewhere use FileCredentialStore.
#if canImport(Security)
    import Foundation
    import Security

    /// The identity in the Keychain, where it survives deleting and reinstalling the app: a generic password
    /// item, readable after the first unlock (so background launches can use it), not synced to other devices.
    public struct KeychainCredentialStore: CredentialStore {
        /// The item's service.
        public let service: String
        /// The item's account.
        public let account: String

        /// A store of one Keychain item.
        public init(service: String = "coffer", account: String = "identity") {
            self.service = service
            self.account = account
        }

        /// The stored identity, if any.
        public func load() throws -> DeviceIdentity? {
            var query = baseQuery
            query[kSecReturnData as String] = true
            query[kSecMatchLimit as String] = kSecMatchLimitOne
            var item: CFTypeRef?
            let status = SecItemCopyMatching(query as CFDictionary, &item)
            if status == errSecItemNotFound { return nil }
            guard status == errSecSuccess, let data = item as? Data else { throw KeychainError(status: status) }
            return try JSONDecoder().decode(DeviceIdentity.self, from: data)
        }

        /// Stores the identity, replacing any.
        public func save(_ identity: DeviceIdentity) throws {
            let data = try JSONEncoder().encode(identity)
            let update = SecItemUpdate(baseQuery as CFDictionary, [kSecValueData as String: data] as CFDictionary)
            if update == errSecSuccess { return }
            guard update == errSecItemNotFound else { throw KeychainError(status: update) }
            var item = baseQuery
            item[kSecValueData as String] = data
            item[kSecAttrAccessible as String] = kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly
            let added = SecItemAdd(item as CFDictionary, nil)
            guard added == errSecSuccess else { throw KeychainError(status: added) }
        }

        private var baseQuery: [String: Any] {
            [
                kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: service,
                kSecAttrAccount as String: account,
            ]
        }
    }

    /// A Keychain call failed with this `OSStatus`.
    public struct KeychainError: Error, Equatable, Sendable {
        /// The status.
        public let status: OSStatus
    }
#endif
