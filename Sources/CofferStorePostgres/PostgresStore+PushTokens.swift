// swift-format-ignore-file: AllPublicDeclarationsHaveDocumentation

// The public methods here are the store protocols' requirements, documented there (`CofferStore/Stores`).
import CofferCore
import CofferStore
import Foundation
import PostgresNIO

extension PostgresStore {
    public func savePushToken(_ token: PushToken) async throws {
        let saved = try await write { connection in
            let inserted = try await Self.exists(
                connection,
                """
                INSERT INTO push_tokens (token, owner, environment, gateway, updated_at)
                SELECT \(token.token), id, \(token.environment.rawValue), \(token.gateway.rawValue),
                    \(Millis.from(token.updatedAt))
                FROM live_users WHERE id = \(token.owner.uuidString)
                ON CONFLICT (token) DO UPDATE SET owner = excluded.owner, environment = excluded.environment,
                    gateway = excluded.gateway, updated_at = excluded.updated_at
                RETURNING 1
                """, logger: self.logger)
            // The user keeps the newest few.
            if inserted {
                try await connection.query(
                    """
                    DELETE FROM push_tokens WHERE owner = \(token.owner.uuidString) AND token NOT IN (
                        SELECT token FROM push_tokens WHERE owner = \(token.owner.uuidString)
                        ORDER BY updated_at DESC, token COLLATE "C" DESC LIMIT \(PushToken.keptPerUser))
                    """, logger: self.logger)
            }
            return inserted
        }
        guard saved else { throw StoreError.notFound("user \(token.owner)") }
    }

    public func pushTokens(owner: UUID, environment: AppStoreEnvironment) async throws -> [PushToken] {
        try await all(
            """
            SELECT * FROM push_tokens WHERE owner = \(owner.uuidString) AND environment = \(environment.rawValue)
            ORDER BY updated_at DESC, token COLLATE "C" DESC
            """, Rows.pushToken)
    }

    @discardableResult
    public func deletePushToken(_ token: String, owner: UUID) async throws -> Bool {
        try await write { connection in
            try await Self.exists(
                connection,
                "DELETE FROM push_tokens WHERE token = \(token) AND owner = \(owner.uuidString) RETURNING 1",
                logger: self.logger)
        }
    }
}

extension Rows {
    static func pushToken(_ postgresRow: PostgresRow) throws -> PushToken {
        let row = postgresRow.makeRandomAccess()
        guard let gateway = PushToken.Gateway(rawValue: try value(row, "gateway", as: String.self)) else {
            throw StoreError.storage("corrupt gateway column")
        }
        return PushToken(
            token: try value(row, "token"), owner: try uuid(row, "owner"), environment: try environment(row),
            gateway: gateway, updatedAt: Millis.date(try value(row, "updated_at")))
    }
}
