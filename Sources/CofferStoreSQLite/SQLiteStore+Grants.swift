import CofferCore
import CofferLedgerSQLite
import CofferStore
import Foundation
import GRDB

extension SQLiteStore {
    /// Adds a grant.
    public func createGrant(_ grant: Grant) async throws {
        try await write { db in
            guard try Self.userExists(db, id: grant.recipient, environment: grant.environment) else {
                throw StoreError.notFound("user \(grant.recipient)")
            }
            do {
                try db.execute(
                    sql: """
                        INSERT INTO grants (id, environment, recipient, credits, reason, created_by, created_at, claimed_at)
                        VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                        """,
                    arguments: [
                        grant.id.uuidString, grant.environment.rawValue, grant.recipient.uuidString, grant.credits,
                        grant.reason, grant.createdBy, Millis.from(grant.createdAt), grant.claimedAt.map(Millis.from),
                    ])
            } catch let error as DatabaseError where error.resultCode == .SQLITE_CONSTRAINT {
                throw StoreError.alreadyExists("grant \(grant.id)")
            }
        }
    }

    /// Grants of an environment, newest first, optionally for one recipient and one status.
    public func grants(environment: Environment, recipient: UUID?, status: GrantStatus?, limit: Int) async throws
        -> [Grant]
    {
        try await read { db in
            var sql = "SELECT * FROM grants WHERE environment = ?"
            var arguments: StatementArguments = [environment.rawValue]
            if let recipient {
                sql += " AND recipient = ?"
                arguments += [recipient.uuidString]
            }
            switch status {
            case .pending: sql += " AND claimed_at IS NULL"
            case .claimed: sql += " AND claimed_at IS NOT NULL"
            case nil: break
            }
            sql += " ORDER BY created_at DESC, id DESC LIMIT ?"
            arguments += [max(0, limit)]
            return try Row.fetchAll(db, sql: sql, arguments: arguments).map(Self.grant)
        }
    }

    /// Marks a grant claimed by its recipient; claiming again returns it unchanged. With a `policy`, the
    public func claimGrant(
        id: UUID,
        recipient: UUID,
        environment: Environment,
        crediting policy: DeficitPolicy?,
        at: Date
    ) async throws -> Grant {
        try await write { db in
            guard
                var grant = try Row.fetchOne(
                    db, sql: "SELECT * FROM grants WHERE id = ? AND environment = ?",
                    arguments: [id.uuidString, environment.rawValue]
                ).map(Self.grant)
            else { throw StoreError.notFound("grant \(id)") }
            guard grant.recipient == recipient else { throw StoreError.wrongUser("grant \(id)") }
            guard grant.claimedAt == nil else { return grant }
            if let policy {
                var context = SQLiteLedgerContext(db: db)
                let request = LedgerRequest(
                    owner: recipient, environment: environment,
                    event: .grant(id: id.uuidString.lowercased(), credits: grant.credits, reason: grant.reason),
                    policy: policy, at: at)
                _ = try LedgerWriter.apply(request, in: &context).get()
            }
            grant.claimedAt = at
            try db.execute(
                sql: "UPDATE grants SET claimed_at = ? WHERE id = ?", arguments: [Millis.from(at), id.uuidString])
            return grant
        }
    }
}
