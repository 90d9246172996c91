import CofferCore
import CofferLedgerSQLite
import CofferStore
import Foundation
import GRDB

extension SQLiteStore {
    /// Records a milestone the app reached for a customer, once: true when this call recorded it, false when
    /// it was on file already.
    public func recordMilestone(owner: UUID, name: String, at date: Date) async throws -> Bool {
        try await write { db in
            guard
                try Bool.fetchOne(
                    db, sql: "SELECT EXISTS (SELECT 1 FROM users WHERE id = ? AND deleted_at IS NULL)",
                    arguments: [owner.uuidString]) == true
            else { throw StoreError.notFound("user \(owner)") }
            try db.execute(
                sql: "INSERT INTO milestones (owner, name, reached_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                arguments: [owner.uuidString, name, Millis.from(date)])
            return db.changesCount > 0
        }
    }
}
