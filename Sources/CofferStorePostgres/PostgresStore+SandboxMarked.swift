// swift-format-ignore-file: AllPublicDeclarationsHaveDocumentation

// The public methods here are the store protocols' requirements, documented there (`CofferStore/Stores`).
import CofferCore
import CofferStore
import Foundation
import PostgresNIO

extension PostgresStore {
    public func sandboxMarkedUsers(
        environment: AppStoreEnvironment, supportIdPrefix: String?, limit: Int, offset: Int
    ) async throws -> [User] {
        let prefix = supportIdPrefix?.lowercased() ?? ""
        let end = prefix + "\u{7F}"
        return try await all(
            """
            SELECT u.* FROM users u WHERE u.environment = \(environment.rawValue)
                AND u.support_id COLLATE "C" >= \(prefix) AND u.support_id COLLATE "C" < \(end)
                AND \(unescaped: SandboxMark.sql)
            ORDER BY u.created_at DESC, u.support_id COLLATE "C" DESC LIMIT \(max(0, limit)) OFFSET \(max(0, offset))
            """, Rows.user)
    }

    public func sandboxMarkedGrants(environment: AppStoreEnvironment, status: GrantStatus?, limit: Int) async throws
        -> [Grant]
    {
        try await grants(environment: environment, recipient: nil, status: status, limit: limit, marked: true)
    }

    public func deleteSandboxMarkedGrants(environment: AppStoreEnvironment) async throws -> Int {
        try await write { connection in
            try await Self.count(
                connection,
                """
                WITH deleted AS (
                    DELETE FROM grants WHERE environment = \(environment.rawValue) AND recipient IN (
                        SELECT u.id FROM users u WHERE u.environment = \(environment.rawValue)
                        AND \(unescaped: SandboxMark.sql))
                    RETURNING 1)
                SELECT count(*) FROM deleted
                """, logger: self.logger)
        }
    }
}
