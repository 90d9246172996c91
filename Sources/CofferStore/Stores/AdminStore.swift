import CofferCore
import Foundation

/// Support's admins, their sessions and API keys, the counters that protect them, and the audit log.
public protocol AdminStore: Sendable {
    // MARK: Admins

    /// Adds an admin; ``StoreError/alreadyExists(_:)`` when the name is taken.
    func createAdmin(_ admin: Admin) async throws
    /// The admin with this name.
    func admin(name: String) async throws -> Admin?
    /// Every admin, by name.
    func admins() async throws -> [Admin]
    /// Sets an admin's password hash and ends the admin's sessions.
    ///
    /// - Returns: `false` when there is no such admin.
    func setAdminPassword(name: String, passwordHash: String, at: Date) async throws -> Bool
    /// Changes an admin as `change` says (``Admin/using(step:)``, a role, two-factor on or off, disabled or not),
    /// in one transaction that holds the admin: `change` is given the admin on file and answers the admin changed,
    /// or `nil` to leave it. The name, id, password and creation date stay. An admin disabled after the change has
    /// no session left.
    ///
    /// - Returns: The admin as changed, or `nil` when there is no such admin or `change` left it.
    func updateAdmin(name: String, _ change: @escaping @Sendable (Admin) -> Admin?) async throws -> Admin?
    /// Ends an admin's sessions but the one `kept` (after two-factor is turned on, every other session must sign
    /// in with a code).
    ///
    /// - Returns: How many ended.
    func deleteSessions(adminId: UUID, except kept: String?) async throws -> Int
    /// Stores a new session.
    func createSession(_ session: AdminSession) async throws
    /// The session with this token hash, expired or not.
    func session(tokenHash: String) async throws -> AdminSession?
    /// Switches a session's environment.
    func setSessionEnvironment(tokenHash: String, environment: AppStoreEnvironment) async throws
    /// Ends a session.
    func deleteSession(tokenHash: String) async throws
    /// Ends sessions that expired before `date`.
    ///
    /// - Returns: How many were removed.
    func deleteSessions(expiredBefore date: Date) async throws -> Int
    /// Adds a request-signing key; ``StoreError/alreadyExists(_:)`` when the id is taken.
    func createAdminKey(_ key: AdminKey) async throws
    /// The key with this id, revoked or not.
    func adminKey(id: String) async throws -> AdminKey?
    /// Every key, oldest first.
    func adminKeys() async throws -> [AdminKey]
    /// Revokes a key.
    ///
    /// - Returns: `false` when there is no such key or it was revoked already.
    func revokeAdminKey(id: String, at: Date) async throws -> Bool
    /// Counts a failure against something an attacker guesses at (an admin's password from one address, an
    /// admin's two-factor codes from anywhere), shared by every instance on the database. Failures of any key
    /// older than a day are forgotten on the way.
    ///
    /// - Returns: The failures of `key` at or after `since`, this one included.
    func recordFailure(_ key: String, at date: Date, since: Date) async throws -> Int
    /// The failures of `key` at or after `since`.
    func failures(_ key: String, since: Date) async throws -> Int
    /// Forgets the failures of `key` (a right password from that address).
    func clearFailures(_ key: String) async throws

    /// Remembers a signed request's signature so it is accepted once, across every server on the database,
    /// and forgets signatures seen before `forgetBefore` (older requests are refused by their date).
    ///
    /// - Returns: `false` when the signature was seen before.
    func recordSignature(_ digest: String, at: Date, forgetBefore: Date) async throws -> Bool

    // MARK: Audit

    /// Appends an audit event.
    func recordAudit(_ event: AuditEvent) async throws
    /// Audit events of an environment that `query` matches (``AuditQuery/matches(_:)``), newest first.
    func auditEvents(environment: AppStoreEnvironment, query: AuditQuery, limit: Int) async throws -> [AuditEvent]
}

extension AdminStore {
    /// Audit events of an environment, newest first; with a `subject`, only those about it.
    public func auditEvents(environment: AppStoreEnvironment, subject: String?, limit: Int) async throws -> [AuditEvent]
    {
        try await auditEvents(environment: environment, query: AuditQuery(subject: subject), limit: limit)
    }

    /// Sets the time zone an admin's pages show beside UTC; `nil` for UTC only.
    ///
    /// - Returns: `false` when there is no such admin.
    public func setAdminTimeZone(name: String, timeZone: String?) async throws -> Bool {
        try await updateAdmin(name: name) { admin in
            var changed = admin
            changed.timeZone = timeZone
            return changed
        } != nil
    }
}
