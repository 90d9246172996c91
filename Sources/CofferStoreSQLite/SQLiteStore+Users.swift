import CofferCore
import CofferLedgerSQLite
import CofferStore
import Foundation
import GRDB

extension SQLiteStore {
    /// Adds a user. Throws ``StoreError/alreadyExists(_:)`` when the Support ID, token hash or
    /// `appAccountToken` is taken.
    public func createUser(_ user: User) async throws {
        try await write { db in
            do {
                try db.execute(
                    sql: """
                        INSERT INTO users (id, environment, support_id, token_hash, app_account_token, created_at)
                        VALUES (?, ?, ?, ?, ?, ?)
                        """,
                    arguments: [
                        user.id.uuidString, user.environment.rawValue, user.supportId.rawValue, user.tokenHash,
                        user.appAccountToken.uuidString, Millis.from(user.createdAt),
                    ])
                try db.execute(
                    sql: "INSERT INTO wallets (user_id, balance, deficit) VALUES (?, 0, 0)",
                    arguments: [user.id.uuidString])
            } catch let error as DatabaseError where error.resultCode == .SQLITE_CONSTRAINT {
                throw StoreError.alreadyExists("user (\(error.message ?? "unique constraint"))")
            }
        }
    }

    /// The user with this id.
    public func user(id: UUID) async throws -> User? {
        try await one("SELECT * FROM users WHERE id = ?", [id.uuidString], Self.user)
    }

    /// The user with this Support ID in `environment`.
    public func user(supportId: SupportID, environment: Environment) async throws -> User? {
        try await one(
            "SELECT * FROM users WHERE environment = ? AND support_id = ?", [environment.rawValue, supportId.rawValue],
            Self.user)
    }

    /// The user whose token hashes to `tokenHash`.
    public func user(tokenHash: String) async throws -> User? {
        try await one("SELECT * FROM users WHERE token_hash = ?", [tokenHash], Self.user)
    }

    /// The user whose `appAccountToken` this is, in `environment`.
    public func user(appAccountToken: UUID, environment: Environment) async throws -> User? {
        try await one(
            "SELECT * FROM users WHERE environment = ? AND app_account_token = ?",
            [environment.rawValue, appAccountToken.uuidString], Self.user)
    }

    /// Users of an environment, newest first, optionally whose Support ID starts with `supportIdPrefix`
    public func users(environment: Environment, supportIdPrefix: String?, limit: Int, offset: Int) async throws
        -> [User]
    {
        let prefix = supportIdPrefix?.lowercased() ?? ""
        return try await read { db in
            // Support IDs hold only `_`, 0-9 and a-f, so every ID with the prefix sorts below prefix + DEL.
            try Row.fetchAll(
                db,
                sql: """
                    SELECT * FROM users WHERE environment = ? AND support_id >= ? AND support_id < ?
                    ORDER BY created_at DESC, support_id DESC LIMIT ? OFFSET ?
                    """,
                arguments: [environment.rawValue, prefix, prefix + "\u{7F}", max(0, limit), max(0, offset)]
            ).map(Self.user)
        }
    }

    /// How many users an environment has.
    public func userCount(environment: Environment) async throws -> Int {
        try await read { db in
            try Int.fetchOne(
                db, sql: "SELECT COUNT(*) FROM users WHERE environment = ?", arguments: [environment.rawValue]) ?? 0
        }
    }
}
