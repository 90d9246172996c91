// swift-format-ignore-file: AllPublicDeclarationsHaveDocumentation

// The public methods here are the store protocols' requirements, documented there (`CofferStore/Stores`).
import CofferCore
import CofferLedgerSQLite
import CofferStore
import Foundation
import GRDB

extension SQLiteStore {
    public func recordMilestone(owner: UUID, name: String, at date: Date) async throws -> Bool {
        try await write { db in
            guard
                try Self.isLive(db, owner)
            else { throw StoreError.notFound("user \(owner)") }
            try db.execute(
                cached: "INSERT INTO milestones (owner, name, reached_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                arguments: [owner.uuidString, name, Millis.from(date)])
            return db.changesCount > 0
        }
    }
}
