// swift-format-ignore-file: AllPublicDeclarationsHaveDocumentation

// The public methods here are the store protocols' requirements, documented there (`CofferStore/Stores`).
import CofferCore
import Foundation

/// The in-memory store's admins, their sessions and keys, and the signatures seen.
extension InMemoryStore {
    public func createAdmin(_ admin: Admin) throws {
        guard !adminList.contains(where: { $0.name == admin.name || $0.id == admin.id }) else {
            throw StoreError.alreadyExists("admin \(admin.name)")
        }
        adminList.append(admin)
    }

    public func admin(name: String) -> Admin? { adminList.first { $0.name == name } }

    public func admins() -> [Admin] { adminList.sorted { $0.name < $1.name } }

    public func setAdminPassword(name: String, passwordHash: String, at: Date) -> Bool {
        guard let index = adminList.firstIndex(where: { $0.name == name }) else { return false }
        adminList[index].passwordHash = passwordHash
        adminList[index].passwordChangedAt = at
        let id = adminList[index].id
        sessions = sessions.filter { $0.value.adminId != id }
        return true
    }

    public func updateAdmin(name: String, _ change: @escaping @Sendable (Admin) -> Admin?) -> Admin? {
        guard let index = adminList.firstIndex(where: { $0.name == name }), let changed = change(adminList[index])
        else { return nil }
        adminList[index] = adminList[index].adopting(changed)
        // A disabled admin's sessions end with the change.
        if !adminList[index].isEnabled {
            let id = adminList[index].id
            sessions = sessions.filter { $0.value.adminId != id }
        }
        return adminList[index]
    }

    public func deleteSessions(adminId: UUID, except kept: String?) -> Int {
        let before = sessions.count
        sessions = sessions.filter { $0.value.adminId != adminId || $0.key == kept }
        return before - sessions.count
    }

    public func createSession(_ session: AdminSession) throws {
        guard sessions[session.tokenHash] == nil else { throw StoreError.alreadyExists("session") }
        sessions[session.tokenHash] = session
    }

    public func session(tokenHash: String) -> AdminSession? { sessions[tokenHash] }

    public func setSessionEnvironment(tokenHash: String, environment: AppStoreEnvironment) {
        sessions[tokenHash]?.environment = environment
    }

    public func deleteSession(tokenHash: String) { sessions[tokenHash] = nil }

    public func deleteSessions(expiredBefore date: Date) -> Int {
        let before = sessions.count
        sessions = sessions.filter { $0.value.expiresAt >= date }
        return before - sessions.count
    }

    public func createAdminKey(_ key: AdminKey) throws {
        guard !keys.contains(where: { $0.id == key.id }) else { throw StoreError.alreadyExists("key \(key.id)") }
        keys.append(key)
    }

    public func adminKey(id: String) -> AdminKey? { keys.first { $0.id == id } }

    public func adminKeys() -> [AdminKey] { keys.sorted { ($0.createdAt, $0.id) < ($1.createdAt, $1.id) } }

    public func revokeAdminKey(id: String, at: Date) -> Bool {
        guard let index = keys.firstIndex(where: { $0.id == id }), keys[index].revokedAt == nil else { return false }
        keys[index].revokedAt = at
        return true
    }

    public func recordSignature(_ digest: String, at: Date, forgetBefore: Date) -> Bool {
        signatures = signatures.filter { $0.value >= forgetBefore }
        guard signatures[digest] == nil else { return false }
        signatures[digest] = at
        return true
    }
}
