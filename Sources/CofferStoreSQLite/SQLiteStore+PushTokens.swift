// swift-format-ignore-file: AllPublicDeclarationsHaveDocumentation

// The public methods here are the store protocols' requirements, documented there (`CofferStore/Stores`).
import CofferCore
import CofferLedgerSQLite
import CofferStore
import Foundation
import GRDB

extension SQLiteStore {
    public func savePushToken(_ token: PushToken) async throws {
        try await write { db in
            guard
                try Self.isLive(db, token.owner)
            else { throw StoreError.notFound("user \(token.owner)") }
            try db.execute(
                cached: """
                    INSERT INTO push_tokens (token, owner, environment, gateway, updated_at) VALUES (?, ?, ?, ?, ?)
                    ON CONFLICT (token) DO UPDATE SET owner = excluded.owner, environment = excluded.environment,
                        gateway = excluded.gateway, updated_at = excluded.updated_at
                    """,
                arguments: [
                    token.token, token.owner.uuidString, token.environment.rawValue, token.gateway.rawValue,
                    Millis.from(token.updatedAt),
                ])
            // The user keeps the newest few.
            try db.execute(
                cached: """
                    DELETE FROM push_tokens WHERE owner = ?1 AND token NOT IN (
                        SELECT token FROM push_tokens WHERE owner = ?1 ORDER BY updated_at DESC, token DESC LIMIT ?2)
                    """, arguments: [token.owner.uuidString, PushToken.keptPerUser])
        }
    }

    public func pushTokens(owner: UUID, environment: AppStoreEnvironment) async throws -> [PushToken] {
        try await all(
            """
            SELECT * FROM push_tokens WHERE owner = ? AND environment = ?
            ORDER BY updated_at DESC, token DESC
            """, [owner.uuidString, environment.rawValue], Self.pushToken)
    }

    @discardableResult
    public func deletePushToken(_ token: String, owner: UUID) async throws -> Bool {
        try await write { db in
            try db.execute(
                cached: "DELETE FROM push_tokens WHERE token = ? AND owner = ?", arguments: [token, owner.uuidString])
            return db.changesCount > 0
        }
    }

    static func pushToken(_ row: Row) throws -> PushToken {
        guard let owner = UUID(uuidString: row["owner"]),
            let environment = AppStoreEnvironment(rawValue: row["environment"]),
            let gateway = PushToken.Gateway(rawValue: row["gateway"])
        else { throw StoreError.storage("corrupt push token row") }
        return PushToken(
            token: row["token"], owner: owner, environment: environment, gateway: gateway,
            updatedAt: Millis.date(row["updated_at"]))
    }
}
