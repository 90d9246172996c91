// swift-format-ignore-file: AllPublicDeclarationsHaveDocumentation

// The public methods here are the store protocols' requirements, documented there (`CofferStore/Stores`).
import CofferCore
import CofferStore
import Foundation
import Logging
import NIOSSL
import PostgresNIO

extension PostgresStore {
    public func createAdmin(_ admin: Admin) async throws {
        try await write { connection in
            do {
                try await connection.query(
                    """
                    INSERT INTO admins (id, name, password_hash, created_at, password_changed_at, time_zone, role,
                        grant_limit, two_factor_secret, two_factor_last_step, recovery_codes, disabled_at)
                    VALUES (\(admin.id.uuidString), \(admin.name), \(admin.passwordHash), \(Millis.from(admin.createdAt)),
                        \(Millis.from(admin.passwordChangedAt)), \(admin.timeZone), \(admin.role.rawValue),
                        \(admin.grantLimit), \(admin.twoFactorSecret), \(admin.twoFactorLastStep),
                        \(AdminColumns.text(admin.recoveryCodeHashes)), \(admin.disabledAt.map(Millis.from)))
                    """, logger: self.logger)
            } catch let error as PSQLError where error.sqlState == "23505" {
                throw StoreError.alreadyExists("admin \(admin.name)")
            }
        }
    }

    public func admin(name: String) async throws -> Admin? {
        try await first("SELECT * FROM admins WHERE name = \(name)", Rows.admin)
    }

    public func admins() async throws -> [Admin] {
        try await all("SELECT * FROM admins ORDER BY name", Rows.admin)
    }

    public func setAdminPassword(name: String, passwordHash: String, at: Date) async throws -> Bool {
        try await write { connection in
            guard
                let id = try await Self.first(
                    connection,
                    """
                    UPDATE admins SET password_hash = \(passwordHash), password_changed_at = \(Millis.from(at))
                    WHERE name = \(name) RETURNING id
                    """, logger: self.logger, { try $0.decode(String.self) })
            else { return false }
            try await connection.query("DELETE FROM admin_sessions WHERE admin_id = \(id)", logger: self.logger)
            return true
        }
    }

    public func updateAdmin(name: String, _ change: @escaping @Sendable (Admin) -> Admin?) async throws -> Admin? {
        try await write { connection in
            guard
                let admin = try await Self.first(
                    connection, "SELECT * FROM admins WHERE name = \(name) FOR UPDATE", logger: self.logger, Rows.admin),
                let requested = change(admin)
            else { return nil }
            let changed = admin.adopting(requested)
            try await connection.query(
                """
                UPDATE admins SET time_zone = \(changed.timeZone), role = \(changed.role.rawValue),
                    grant_limit = \(changed.grantLimit), two_factor_secret = \(changed.twoFactorSecret),
                    two_factor_last_step = \(changed.twoFactorLastStep),
                    recovery_codes = \(AdminColumns.text(changed.recoveryCodeHashes)),
                    disabled_at = \(changed.disabledAt.map(Millis.from))
                WHERE id = \(admin.id.uuidString)
                """, logger: self.logger)
            // A disabled admin's sessions end with the change.
            if !changed.isEnabled {
                try await connection.query(
                    "DELETE FROM admin_sessions WHERE admin_id = \(admin.id.uuidString)", logger: self.logger)
            }
            return changed
        }
    }

    public func deleteSessions(adminId: UUID, except kept: String?) async throws -> Int {
        try await write { connection in
            try await Self.count(
                connection,
                """
                WITH deleted AS (
                    DELETE FROM admin_sessions WHERE admin_id = \(adminId.uuidString) AND token_hash <> \(kept ?? "")
                    RETURNING 1)
                SELECT count(*) FROM deleted
                """, logger: self.logger)
        }
    }

    public func createSession(_ session: AdminSession) async throws {
        try await write { connection in
            do {
                try await connection.query(
                    """
                    INSERT INTO admin_sessions (token_hash, admin_id, admin_name, csrf_token, environment, created_at,
                        expires_at, two_factor_pending)
                    VALUES (\(session.tokenHash), \(session.adminId.uuidString), \(session.adminName), \(session.csrfToken),
                        \(session.environment.rawValue), \(Millis.from(session.createdAt)), \(Millis.from(session.expiresAt)),
                        \(session.twoFactorPending))
                    """, logger: self.logger)
            } catch let error as PSQLError where error.sqlState == "23505" {
                throw StoreError.alreadyExists("session")
            }
        }
    }

    public func session(tokenHash: String) async throws -> AdminSession? {
        try await first("SELECT * FROM admin_sessions WHERE token_hash = \(tokenHash)", Rows.session)
    }

    public func setSessionEnvironment(tokenHash: String, environment: AppStoreEnvironment) async throws {
        try await write { connection in
            try await connection.query(
                "UPDATE admin_sessions SET environment = \(environment.rawValue) WHERE token_hash = \(tokenHash)",
                logger: self.logger)
        }
    }

    public func deleteSession(tokenHash: String) async throws {
        try await write { connection in
            try await connection.query(
                "DELETE FROM admin_sessions WHERE token_hash = \(tokenHash)", logger: self.logger)
        }
    }

    public func deleteSessions(expiredBefore date: Date) async throws -> Int {
        try await write { connection in
            try await Self.count(
                connection,
                """
                WITH deleted AS (DELETE FROM admin_sessions WHERE expires_at < \(Millis.from(date)) RETURNING 1)
                SELECT count(*) FROM deleted
                """, logger: self.logger)
        }
    }

    public func recordFailure(_ key: String, at date: Date, since: Date) async throws -> Int {
        try await write { connection in
            try await Self.count(
                connection,
                """
                WITH pruned AS (DELETE FROM failures WHERE at < \(Millis.from(date.addingTimeInterval(-86_400)))),
                    added AS (INSERT INTO failures (key, at) VALUES (\(key), \(Millis.from(date))) RETURNING at)
                SELECT (SELECT count(*) FROM failures WHERE key = \(key) AND at >= \(Millis.from(since)))
                    + (SELECT count(*) FROM added WHERE at >= \(Millis.from(since)))
                """, logger: self.logger)
        }
    }

    public func failures(_ key: String, since: Date) async throws -> Int {
        try await read { connection in
            try await Self.count(
                connection, "SELECT count(*) FROM failures WHERE key = \(key) AND at >= \(Millis.from(since))",
                logger: self.logger)
        }
    }

    public func clearFailures(_ key: String) async throws {
        try await write { connection in
            try await connection.query("DELETE FROM failures WHERE key = \(key)", logger: self.logger)
        }
    }

    public func createAdminKey(_ key: AdminKey) async throws {
        try await write { connection in
            do {
                try await connection.query(
                    """
                    INSERT INTO admin_keys (id, name, public_key_pem, created_at, revoked_at, role, grant_limit)
                    VALUES (\(key.id), \(key.name), \(key.publicKeyPEM), \(Millis.from(key.createdAt)),
                        \(key.revokedAt.map(Millis.from)), \(key.role.rawValue), \(key.grantLimit))
                    """, logger: self.logger)
            } catch let error as PSQLError where error.sqlState == "23505" {
                throw StoreError.alreadyExists("key \(key.id)")
            }
        }
    }

    public func adminKey(id: String) async throws -> AdminKey? {
        try await first("SELECT * FROM admin_keys WHERE id = \(id)", Rows.adminKey)
    }

    public func adminKeys() async throws -> [AdminKey] {
        try await all("SELECT * FROM admin_keys ORDER BY created_at, id", Rows.adminKey)
    }

    public func revokeAdminKey(id: String, at: Date) async throws -> Bool {
        try await write { connection in
            try await Self.exists(
                connection,
                """
                UPDATE admin_keys SET revoked_at = \(Millis.from(at)) WHERE id = \(id) AND revoked_at IS NULL
                RETURNING id
                """, logger: self.logger)
        }
    }

    public func recordSignature(_ digest: String, at: Date, forgetBefore: Date) async throws -> Bool {
        try await write { connection in
            try await connection.query(
                "DELETE FROM admin_signatures WHERE seen_at < \(Millis.from(forgetBefore))", logger: self.logger)
            return try await Self.exists(
                connection,
                """
                INSERT INTO admin_signatures (digest, seen_at) VALUES (\(digest), \(Millis.from(at)))
                ON CONFLICT (digest) DO NOTHING RETURNING digest
                """, logger: self.logger)
        }
    }
}
