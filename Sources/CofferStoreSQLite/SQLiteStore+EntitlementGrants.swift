// swift-format-ignore-file: AllPublicDeclarationsHaveDocumentation

// The public methods here are the store protocols' requirements, documented there (`CofferStore/Stores`).
import CofferCore
import CofferLedgerSQLite
import CofferStore
import Foundation
import GRDB

/// Support's entitlements for a time.
enum EntitlementGrantTables {
    static let sql = """
        CREATE TABLE entitlement_grants (
            id TEXT PRIMARY KEY NOT NULL,
            environment TEXT NOT NULL,
            recipient TEXT NOT NULL REFERENCES users (id),
            entitlement TEXT NOT NULL,
            starts_at INTEGER NOT NULL,
            ends_at INTEGER NOT NULL,
            reason TEXT NOT NULL,
            created_by TEXT NOT NULL,
            cancelled_at INTEGER,
            cancelled_by TEXT
        );
        CREATE INDEX entitlement_grants_by_recipient ON entitlement_grants (recipient, environment, starts_at);
        """
}

extension SQLiteStore {
    public func createEntitlementGrant(_ grant: EntitlementGrant, audit events: [AuditEvent]) async throws {
        try await write { db in
            guard try Self.userExists(db, id: grant.recipient, environment: grant.environment, live: true) else {
                throw StoreError.notFound("user \(grant.recipient)")
            }
            do {
                try db.execute(
                    cached: """
                        INSERT INTO entitlement_grants (id, environment, recipient, entitlement, starts_at, ends_at,
                            reason, created_by)
                        VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                        """,
                    arguments: [
                        grant.id.uuidString, grant.environment.rawValue, grant.recipient.uuidString, grant.entitlement,
                        Millis.from(grant.startsAt), Millis.from(grant.endsAt), grant.reason, grant.createdBy,
                    ])
            } catch let error as DatabaseError where error.resultCode == .SQLITE_CONSTRAINT {
                throw StoreError.alreadyExists("entitlement grant \(grant.id)")
            }
            try Self.insertAudit(db, events)
        }
    }

    public func entitlementGrants(environment: AppStoreEnvironment, recipient: UUID) async throws
        -> [EntitlementGrant]
    {
        try await readStatement { db in try Self.entitlementGrants(db, environment: environment, recipient: recipient) }
    }

    /// A customer's entitlement grants, newest first, read on `db`.
    static func entitlementGrants(_ db: Database, environment: AppStoreEnvironment, recipient: UUID) throws
        -> [EntitlementGrant]
    {
        try Row.fetchAll(
            db,
            cached: """
                SELECT * FROM entitlement_grants WHERE recipient = ? AND environment = ?
                ORDER BY starts_at DESC, id DESC LIMIT 200
                """,
            arguments: [recipient.uuidString, environment.rawValue]
        ).map(Self.entitlementGrant)
    }

    public func cancelEntitlementGrant(
        id: UUID, environment: AppStoreEnvironment, by actor: String, at: Date,
        audit events: @escaping @Sendable (EntitlementGrant) -> [AuditEvent]
    ) async throws -> EntitlementGrant {
        try await write { db in
            guard
                var grant = try Row.fetchOne(
                    db, cached: "SELECT * FROM entitlement_grants WHERE id = ? AND environment = ?",
                    arguments: [id.uuidString, environment.rawValue]
                ).map(Self.entitlementGrant)
            else { throw StoreError.notFound("entitlement grant \(id)") }
            guard grant.cancelledAt == nil else { return grant }
            (grant.cancelledAt, grant.cancelledBy) = (at, actor)
            try db.execute(
                cached: "UPDATE entitlement_grants SET cancelled_at = ?, cancelled_by = ? WHERE id = ?",
                arguments: [Millis.from(at), actor, id.uuidString])
            try Self.insertAudit(db, events(grant))
            return grant
        }
    }

    static func entitlementGrant(_ row: Row) throws -> EntitlementGrant {
        EntitlementGrant(
            id: try RowValue.uuid(row, "id"), environment: try RowValue.environment(row),
            recipient: try RowValue.uuid(row, "recipient"), entitlement: row["entitlement"],
            startsAt: Millis.date(row["starts_at"]), endsAt: Millis.date(row["ends_at"]), reason: row["reason"],
            createdBy: row["created_by"], cancelledAt: (row["cancelled_at"] as Int64?).map(Millis.date),
            cancelledBy: row["cancelled_by"])
    }
}
