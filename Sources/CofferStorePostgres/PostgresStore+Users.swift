import CofferCore
import CofferStore
import Foundation
import Logging
import NIOSSL
import PostgresNIO

extension PostgresStore {
    /// Adds a user. Throws ``StoreError/alreadyExists(_:)`` when the Support ID, token hash or
    /// `appAccountToken` is taken.
    public func createUser(_ user: User) async throws {
        try await write { connection in
            do {
                try await connection.query(
                    """
                    INSERT INTO users (id, environment, support_id, token_hash, app_account_token, created_at)
                    VALUES (\(user.id.uuidString), \(user.environment.rawValue), \(user.supportId.rawValue),
                        \(user.tokenHash), \(user.appAccountToken.uuidString), \(Millis.from(user.createdAt)))
                    """, logger: self.logger)
                try await connection.query(
                    "INSERT INTO wallets (user_id, balance, deficit) VALUES (\(user.id.uuidString), 0, 0)",
                    logger: self.logger)
            } catch let error as PSQLError where error.sqlState == "23505" {
                throw StoreError.alreadyExists("user (\(error.serverInfo?[.message] ?? "unique constraint"))")
            }
        }
    }

    /// The user with this id.
    public func user(id: UUID) async throws -> User? {
        try await first("SELECT * FROM users WHERE id = \(id.uuidString)", Rows.user)
    }

    /// The user with this Support ID in an environment.
    public func user(supportId: SupportID, environment: Environment) async throws -> User? {
        try await first(
            "SELECT * FROM users WHERE environment = \(environment.rawValue) AND support_id = \(supportId.rawValue)",
            Rows.user)
    }

    /// The user whose token hashes to `tokenHash`.
    public func user(tokenHash: String) async throws -> User? {
        try await first("SELECT * FROM users WHERE token_hash = \(tokenHash)", Rows.user)
    }

    /// The user who owns this `appAccountToken` in an environment.
    public func user(appAccountToken: UUID, environment: Environment) async throws -> User? {
        try await first(
            """
            SELECT * FROM users WHERE environment = \(environment.rawValue)
            AND app_account_token = \(appAccountToken.uuidString)
            """, Rows.user)
    }

    /// Users of an environment, newest first, optionally whose Support ID starts with `supportIdPrefix`
    /// (case-insensitive).
    public func users(environment: Environment, supportIdPrefix: String?, limit: Int, offset: Int) async throws
        -> [User]
    {
        let prefix = supportIdPrefix?.lowercased() ?? ""
        // A range in byte order, which the v5 index serves: Support IDs hold only `_`, 0-9 and a-f, so every ID
        // with the prefix sorts below prefix + DEL.
        let end = prefix + "\u{7F}"
        return try await all(
            """
            SELECT * FROM users WHERE environment = \(environment.rawValue)
                AND support_id COLLATE "C" >= \(prefix) AND support_id COLLATE "C" < \(end)
            ORDER BY created_at DESC, support_id COLLATE "C" DESC LIMIT \(max(0, limit)) OFFSET \(max(0, offset))
            """, Rows.user)
    }

    /// How many users an environment has.
    public func userCount(environment: Environment) async throws -> Int {
        try await first("SELECT count(*) FROM users WHERE environment = \(environment.rawValue)") {
            Int(try $0.decode(Int64.self))
        } ?? 0
    }
}
