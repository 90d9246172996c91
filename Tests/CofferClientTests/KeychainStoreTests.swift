import Foundation
import Synchronization
import Testing

@testable import CofferClient

/// The Keychain store's rules, over a keychain that answers as `SecItem` does (the Keychain itself exists on
/// Apple platforms only).
@Suite("Keychain credential store")
struct KeychainStoreTests {
    /// Generic password items by service and account, answering with the Keychain's statuses; a status to
    /// answer every call with, for the failures.
    final class FakeKeychain: KeychainItems {
        let items = Mutex<[String: Data]>([:])
        let failing = Mutex<Int32?>(nil)
        let calls = Mutex<[String]>([])

        func copyMatching(service: String, account: String) -> (status: Int32, data: Data?) {
            calls.withLock { $0.append("copy") }
            if let status = failing.withLock({ $0 }) { return (status, nil) }
            guard let data = items.withLock({ $0["\(service)/\(account)"] }) else { return (-25_300, nil) }
            return (0, data)
        }

        func update(service: String, account: String, data: Data) -> Int32 {
            calls.withLock { $0.append("update") }
            if let status = failing.withLock({ $0 }) { return status }
            return items.withLock { items in
                guard items["\(service)/\(account)"] != nil else { return -25_300 }
                items["\(service)/\(account)"] = data
                return 0
            }
        }

        func add(service: String, account: String, data: Data) -> Int32 {
            calls.withLock { $0.append("add") }
            return items.withLock { items in
                guard items["\(service)/\(account)"] == nil else { return -25_299 }  // errSecDuplicateItem
                items["\(service)/\(account)"] = data
                return 0
            }
        }
    }

    static let identity = DeviceIdentity(
        credentials: Credentials(
            supportId: "_0123456789ab", token: "token-one",
            appAccountToken: UUID(uuidString: "0F8E2B1A-0000-4000-8000-000000000002")!),
        appliedKeys: ["grant:1"])

    @Test("nothing stored is no identity; the first save adds the item, the next updates it, a load reads it back")
    func roundTrip() throws {
        let keychain = FakeKeychain()
        let store = KeychainCredentialStore(service: "coffer", account: "identity", keychain: keychain)
        #expect(try store.load() == nil)
        try store.save(Self.identity)
        var changed = Self.identity
        changed.credentials.token = "token-two"
        try store.save(changed)
        #expect(try store.load() == changed)
        #expect(keychain.calls.withLock { $0 } == ["copy", "update", "add", "update", "copy"])
        // Another account of the same service is another item.
        #expect(try KeychainCredentialStore(service: "coffer", account: "other", keychain: keychain).load() == nil)
    }

    @Test("any other status is an error carrying it, and nothing is added over a failing update")
    func failures() throws {
        let keychain = FakeKeychain()
        let store = KeychainCredentialStore(service: "coffer", account: "identity", keychain: keychain)
        keychain.failing.withLock { $0 = -25_308 }  // errSecInteractionNotAllowed: the device is locked
        #expect(throws: KeychainError(status: -25_308)) { try store.load() }
        #expect(throws: KeychainError(status: -25_308)) { try store.save(Self.identity) }
        #expect(keychain.items.withLock { $0.isEmpty })
        keychain.failing.withLock { $0 = nil }
        keychain.items.withLock { $0["coffer/identity"] = Data("not json".utf8) }
        #expect(throws: DecodingError.self) { try store.load() }
    }
}
