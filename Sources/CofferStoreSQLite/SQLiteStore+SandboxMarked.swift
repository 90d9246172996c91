// swift-format-ignore-file: AllPublicDeclarationsHaveDocumentation

// The public methods here are the store protocols' requirements, documented there (`CofferStore/Stores`).
import CofferCore
import CofferStore
import Foundation
import GRDB

extension SQLiteStore {
    public func sandboxMarkedUsers(
        environment: AppStoreEnvironment, supportIdPrefix: String?, limit: Int, offset: Int
    ) async throws -> [User] {
        let prefix = supportIdPrefix?.lowercased() ?? ""
        return try await read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT u.* FROM users u WHERE u.environment = ? AND u.support_id >= ? AND u.support_id < ?
                        AND \(SandboxMark.sql)
                    ORDER BY u.created_at DESC, u.support_id DESC LIMIT ? OFFSET ?
                    """,
                arguments: [environment.rawValue, prefix, prefix + "\u{7F}", max(0, limit), max(0, offset)]
            ).map(Self.user)
        }
    }

    public func sandboxMarkedGrants(environment: AppStoreEnvironment, status: GrantStatus?, limit: Int) async throws
        -> [Grant]
    {
        try await grants(environment: environment, recipient: nil, status: status, limit: limit, marked: true)
    }

    public func deleteSandboxMarkedGrants(environment: AppStoreEnvironment) async throws -> Int {
        try await write { db in
            try db.execute(
                sql: """
                    DELETE FROM grants WHERE environment = ? AND recipient IN (
                        SELECT u.id FROM users u WHERE u.environment = ? AND \(SandboxMark.sql))
                    """,
                arguments: [environment.rawValue, environment.rawValue])
            return db.changesCount
        }
    }
}
