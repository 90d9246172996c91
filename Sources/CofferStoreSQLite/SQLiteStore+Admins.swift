// swift-format-ignore-file: AllPublicDeclarationsHaveDocumentation

// The public methods here are the store protocols' requirements, documented there (`CofferStore/Stores`).
import CofferCore
import CofferLedgerSQLite
import CofferStore
import Foundation
import GRDB

extension SQLiteStore {
    public func createAdmin(_ admin: Admin) async throws {
        let arguments: StatementArguments = [
            admin.id.uuidString, admin.name, admin.passwordHash, Millis.from(admin.createdAt),
            Millis.from(admin.passwordChangedAt), admin.timeZone, admin.role.rawValue, admin.grantLimit,
            admin.twoFactorSecret, admin.twoFactorLastStep, AdminColumns.text(admin.recoveryCodeHashes),
            admin.disabledAt.map(Millis.from),
        ]
        try await write { db in
            do {
                let sql = """
                    INSERT INTO admins (id, name, password_hash, created_at, password_changed_at, time_zone, role,
                        grant_limit, two_factor_secret, two_factor_last_step, recovery_codes, disabled_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """
                try db.execute(cached: sql, arguments: arguments)
            } catch let error as DatabaseError where error.resultCode == .SQLITE_CONSTRAINT {
                throw StoreError.alreadyExists("admin \(admin.name)")
            }
        }
    }

    public func admin(name: String) async throws -> Admin? {
        try await one("SELECT * FROM admins WHERE name = ?", [name], Self.admin)
    }

    public func admins() async throws -> [Admin] {
        try await read { db in try Row.fetchAll(db, cached: "SELECT * FROM admins ORDER BY name").map(Self.admin) }
    }

    public func setAdminPassword(name: String, passwordHash: String, at: Date) async throws -> Bool {
        try await write { db in
            guard let id = try String.fetchOne(db, cached: "SELECT id FROM admins WHERE name = ?", arguments: [name])
            else { return false }
            try db.execute(
                cached: "UPDATE admins SET password_hash = ?, password_changed_at = ? WHERE id = ?",
                arguments: [passwordHash, Millis.from(at), id])
            try db.execute(cached: "DELETE FROM admin_sessions WHERE admin_id = ?", arguments: [id])
            return true
        }
    }

    public func updateAdmin(name: String, _ change: @escaping @Sendable (Admin) -> Admin?) async throws -> Admin? {
        try await write { db in
            guard
                let admin = try Row.fetchOne(db, cached: "SELECT * FROM admins WHERE name = ?", arguments: [name])
                    .map(Self.admin), let requested = change(admin)
            else { return nil }
            let changed = admin.adopting(requested)
            try db.execute(
                cached: """
                    UPDATE admins SET time_zone = ?, role = ?, grant_limit = ?, two_factor_secret = ?,
                        two_factor_last_step = ?, recovery_codes = ?, disabled_at = ?
                    WHERE id = ?
                    """,
                arguments: [
                    changed.timeZone, changed.role.rawValue, changed.grantLimit, changed.twoFactorSecret,
                    changed.twoFactorLastStep, AdminColumns.text(changed.recoveryCodeHashes),
                    changed.disabledAt.map(Millis.from), admin.id.uuidString,
                ])
            // A disabled admin's sessions end with the change.
            if !changed.isEnabled {
                try db.execute(
                    cached: "DELETE FROM admin_sessions WHERE admin_id = ?", arguments: [admin.id.uuidString])
            }
            return changed
        }
    }

    public func deleteSessions(adminId: UUID, except kept: String?) async throws -> Int {
        try await write { db in
            try db.execute(
                cached: "DELETE FROM admin_sessions WHERE admin_id = ? AND token_hash <> ?",
                arguments: [adminId.uuidString, kept ?? ""])
            return db.changesCount
        }
    }

    public func createSession(_ session: AdminSession) async throws {
        try await write { db in
            do {
                try db.execute(
                    cached: """
                        INSERT INTO admin_sessions (token_hash, admin_id, admin_name, csrf_token, environment,
                            created_at, expires_at, two_factor_pending)
                        VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                        """,
                    arguments: [
                        session.tokenHash, session.adminId.uuidString, session.adminName, session.csrfToken,
                        session.environment.rawValue, Millis.from(session.createdAt), Millis.from(session.expiresAt),
                        session.twoFactorPending,
                    ])
            } catch let error as DatabaseError where error.resultCode == .SQLITE_CONSTRAINT {
                throw StoreError.alreadyExists("session")
            }
        }
    }

    public func session(tokenHash: String) async throws -> AdminSession? {
        try await read { db in
            try Row.fetchOne(db, cached: "SELECT * FROM admin_sessions WHERE token_hash = ?", arguments: [tokenHash])
                .map { row in
                    AdminSession(
                        tokenHash: row["token_hash"], adminId: try RowValue.uuid(row, "admin_id"),
                        adminName: row["admin_name"], csrfToken: row["csrf_token"],
                        environment: try RowValue.environment(row), createdAt: Millis.date(row["created_at"]),
                        expiresAt: Millis.date(row["expires_at"]), twoFactorPending: row["two_factor_pending"])
                }
        }
    }

    public func setSessionEnvironment(tokenHash: String, environment: AppStoreEnvironment) async throws {
        try await write { db in
            try db.execute(
                cached: "UPDATE admin_sessions SET environment = ? WHERE token_hash = ?",
                arguments: [environment.rawValue, tokenHash])
        }
    }

    public func deleteSession(tokenHash: String) async throws {
        try await write { db in
            try db.execute(cached: "DELETE FROM admin_sessions WHERE token_hash = ?", arguments: [tokenHash])
        }
    }

    public func deleteSessions(expiredBefore date: Date) async throws -> Int {
        try await write { db in
            try db.execute(cached: "DELETE FROM admin_sessions WHERE expires_at < ?", arguments: [Millis.from(date)])
            return db.changesCount
        }
    }

    public func recordFailure(_ key: String, at date: Date, since: Date) async throws -> Int {
        try await write { db in
            try db.execute(
                cached: "DELETE FROM failures WHERE at < ?", arguments: [Millis.from(date.addingTimeInterval(-86_400))])
            try db.execute(cached: "INSERT INTO failures (key, at) VALUES (?, ?)", arguments: [key, Millis.from(date)])
            return try Int.fetchOne(
                db, cached: "SELECT COUNT(*) FROM failures WHERE key = ? AND at >= ?",
                arguments: [key, Millis.from(since)]) ?? 0
        }
    }

    public func failures(_ key: String, since: Date) async throws -> Int {
        try await read { db in
            try Int.fetchOne(
                db, cached: "SELECT COUNT(*) FROM failures WHERE key = ? AND at >= ?",
                arguments: [key, Millis.from(since)]) ?? 0
        }
    }

    public func clearFailures(_ key: String) async throws {
        try await write { db in try db.execute(cached: "DELETE FROM failures WHERE key = ?", arguments: [key]) }
    }

    public func createAdminKey(_ key: AdminKey) async throws {
        try await write { db in
            do {
                try db.execute(
                    cached: """
                        INSERT INTO admin_keys (id, name, public_key_pem, created_at, revoked_at, role, grant_limit)
                        VALUES (?, ?, ?, ?, ?, ?, ?)
                        """,
                    arguments: [
                        key.id, key.name, key.publicKeyPEM, Millis.from(key.createdAt), key.revokedAt.map(Millis.from),
                        key.role.rawValue, key.grantLimit,
                    ])
            } catch let error as DatabaseError where error.resultCode == .SQLITE_CONSTRAINT {
                throw StoreError.alreadyExists("key \(key.id)")
            }
        }
    }

    public func adminKey(id: String) async throws -> AdminKey? {
        try await read { db in
            try Row.fetchOne(db, cached: "SELECT * FROM admin_keys WHERE id = ?", arguments: [id]).map(Self.adminKey)
        }
    }

    public func adminKeys() async throws -> [AdminKey] {
        try await read { db in
            try Row.fetchAll(db, cached: "SELECT * FROM admin_keys ORDER BY created_at, id").map(Self.adminKey)
        }
    }

    public func revokeAdminKey(id: String, at: Date) async throws -> Bool {
        try await write { db in
            try db.execute(
                cached: "UPDATE admin_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL",
                arguments: [Millis.from(at), id])
            return db.changesCount == 1
        }
    }

    public func recordSignature(_ digest: String, at: Date, forgetBefore: Date) async throws -> Bool {
        try await write { db in
            try db.execute(
                cached: "DELETE FROM admin_signatures WHERE seen_at < ?", arguments: [Millis.from(forgetBefore)])
            try db.execute(
                cached: "INSERT INTO admin_signatures (digest, seen_at) VALUES (?, ?) ON CONFLICT (digest) DO NOTHING",
                arguments: [digest, Millis.from(at)])
            return db.changesCount == 1
        }
    }
}
