// swift-format-ignore-file: AllPublicDeclarationsHaveDocumentation

// The public methods here are the store protocols' requirements, documented there (`CofferStore/Stores`).
import CofferCore
import CofferLedgerSQLite
import CofferStore
import Foundation
import GRDB

extension SQLiteStore {
    public func createGrant(_ grant: Grant, audit events: [AuditEvent]) async throws {
        try await write { db in
            guard try Self.userExists(db, id: grant.recipient, environment: grant.environment, live: true) else {
                throw StoreError.notFound("user \(grant.recipient)")
            }
            do {
                try db.execute(
                    cached: """
                        INSERT INTO grants (id, environment, recipient, credits, reason, created_by, created_at, claimed_at,
                            credit_currency, expires_in_days)
                        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                        """,
                    arguments: [
                        grant.id.uuidString, grant.environment.rawValue, grant.recipient.uuidString, grant.credits,
                        grant.reason, grant.createdBy, Millis.from(grant.createdAt), grant.claimedAt.map(Millis.from),
                        grant.currency?.rawValue, grant.expiresInDays,
                    ])
            } catch let error as DatabaseError where error.resultCode == .SQLITE_CONSTRAINT {
                throw StoreError.alreadyExists("grant \(grant.id)")
            }
            try Self.insertAudit(db, events)
        }
    }

    public func grant(id: UUID, environment: AppStoreEnvironment) async throws -> Grant? {
        try await one(
            "SELECT * FROM grants WHERE id = ? AND environment = ?", [id.uuidString, environment.rawValue], Self.grant)
    }

    public func grantedCredits(environment: AppStoreEnvironment, holder: String, since: Date) async throws -> Int64 {
        try await read { db in
            try Int64.fetchOne(
                db,
                cached: """
                    SELECT COALESCE(SUM(credits), 0) FROM grants
                    WHERE environment = ?1 AND created_at >= ?2 AND (claimed_at IS NOT NULL OR cancelled_at IS NULL)
                        AND (created_by = ?3 OR substr(created_by, 1, length(?4)) = ?4)
                    """, arguments: [environment.rawValue, Millis.from(since), holder, holder + " from "]) ?? 0
        }
    }

    public func grants(environment: AppStoreEnvironment, recipient: UUID?, status: GrantStatus?, limit: Int)
        async throws
        -> [Grant]
    {
        try await grants(environment: environment, recipient: recipient, status: status, limit: limit, marked: false)
    }

    /// Grants of an environment, newest first, optionally for one recipient, one status, or only to Sandbox-marked
    /// users.
    func grants(environment: AppStoreEnvironment, recipient: UUID?, status: GrantStatus?, limit: Int, marked: Bool)
        async throws -> [Grant]
    {
        try await read { db in
            // A customer's grants through their index (SQLite would otherwise walk the environment's); the
            // Sandbox-marked customers' from each of them (App Review's and TestFlight's testers: a few).
            var sql =
                marked
                ? """
                SELECT g.* FROM sandbox_marked m CROSS JOIN grants g INDEXED BY grants_by_recipient_created
                WHERE m.environment = ? AND g.recipient = m.owner AND g.environment = ?
                """
                : "SELECT * FROM grants g \(recipient == nil ? "" : "INDEXED BY grants_by_recipient_created ")"
                    + "WHERE g.environment = ?"
            var arguments: StatementArguments =
                marked ? [environment.rawValue, environment.rawValue] : [environment.rawValue]
            if let recipient {
                sql += " AND g.recipient = ?"
                arguments += [recipient.uuidString]
            }
            switch status {
            case .pending: sql += " AND g.claimed_at IS NULL AND g.cancelled_at IS NULL"
            case .claimed: sql += " AND g.claimed_at IS NOT NULL"
            case .cancelled: sql += " AND g.claimed_at IS NULL AND g.cancelled_at IS NOT NULL"
            case nil: break
            }
            sql += " ORDER BY g.created_at DESC, g.id DESC LIMIT ?"
            arguments += [max(0, limit)]
            return try Row.fetchAll(db, cached: sql, arguments: arguments).map(Self.grant)
        }
    }

    public func claimGrant(
        id: UUID, environment: AppStoreEnvironment, _ claim: @escaping @Sendable (Grant) throws -> GrantClaim?
    ) async throws -> Grant {
        try await write { db in
            let grant = try Self.grant(db, id: id, environment: environment)
            guard let claimed = try claim(grant) else { return grant }
            if let credit = claimed.credit {
                var context = SQLiteLedgerContext(db: db)
                let applied = try LedgerWriter.apply(credit, in: &context).get()
                try Self.updateLots(db, [credit], [.success(applied)])
            }
            try db.execute(
                cached: "UPDATE grants SET claimed_at = ? WHERE id = ?",
                arguments: [claimed.grant.claimedAt.map(Millis.from), id.uuidString])
            return claimed.grant
        }
    }

    public func cancelGrant(
        id: UUID, environment: AppStoreEnvironment, _ cancel: @escaping @Sendable (Grant) -> Grant?,
        audit: @escaping @Sendable (Grant) -> [AuditEvent]
    ) async throws -> Grant {
        try await write { db in
            let grant = try Self.grant(db, id: id, environment: environment)
            guard let cancelled = cancel(grant) else { return grant }
            try db.execute(
                cached: "UPDATE grants SET cancelled_at = ?, cancelled_by = ? WHERE id = ?",
                arguments: [cancelled.cancelledAt.map(Millis.from), cancelled.cancelledBy, id.uuidString])
            try Self.insertAudit(db, audit(cancelled))
            return cancelled
        }
    }

    /// The grant inside a write transaction, or ``StoreError/notFound(_:)``.
    static func grant(_ db: Database, id: UUID, environment: AppStoreEnvironment) throws -> Grant {
        guard
            let grant = try Row.fetchOne(
                db, cached: "SELECT * FROM grants WHERE id = ? AND environment = ?",
                arguments: [id.uuidString, environment.rawValue]
            ).map(Self.grant)
        else { throw StoreError.notFound("grant \(id)") }
        return grant
    }
}
