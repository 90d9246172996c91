// swift-format-ignore-file: AllPublicDeclarationsHaveDocumentation

// The public methods here are the store protocols' requirements, documented there (`CofferStore/Stores`).
import CofferCore
import CofferStore
import Foundation
import PostgresNIO

extension PostgresStore {
    public func recordMilestone(owner: UUID, name: String, at date: Date) async throws -> Bool {
        try await write { connection in
            guard
                try await Self.exists(
                    connection, "SELECT 1 FROM live_users WHERE id = \(owner.uuidString)",
                    logger: self.logger)
            else { throw StoreError.notFound("user \(owner)") }
            return try await Self.exists(
                connection,
                """
                INSERT INTO milestones (owner, name, reached_at) VALUES (\(owner.uuidString), \(name), \(Millis.from(date)))
                ON CONFLICT DO NOTHING RETURNING 1
                """, logger: self.logger)
        }
    }
}
