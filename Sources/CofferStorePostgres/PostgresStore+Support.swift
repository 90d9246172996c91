// swift-format-ignore-file: AllPublicDeclarationsHaveDocumentation

// The public methods here are the store protocols' requirements, documented there (`CofferStore/Stores`).
import CofferCore
import CofferStore
import Foundation
import Logging
import NIOSSL
import PostgresNIO

extension PostgresStore {
    public func backupHistory(owner: UUID, environment: AppStoreEnvironment, limit: Int) async throws
        -> [BackupHistoryItem]
    {
        try await all(
            """
            SELECT * FROM backup_history WHERE owner = \(owner.uuidString) AND environment = \(environment.rawValue)
            ORDER BY seq DESC LIMIT \(max(0, limit))
            """, Rows.backupHistoryItem)
    }

    public func deleteGrants(environment: AppStoreEnvironment) async throws -> Int {
        try await write { connection in
            try await Self.count(
                connection,
                """
                WITH deleted AS (DELETE FROM grants WHERE environment = \(environment.rawValue) RETURNING 1)
                SELECT count(*) FROM deleted
                """, logger: self.logger)
        }
    }
}
