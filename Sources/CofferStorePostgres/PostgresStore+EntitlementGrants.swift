// swift-format-ignore-file: AllPublicDeclarationsHaveDocumentation

// The public methods here are the store protocols' requirements, documented there (`CofferStore/Stores`).
import CofferCore
import CofferStore
import Foundation
import Logging
import PostgresNIO

extension PostgresStore {
    public func createEntitlementGrant(_ grant: EntitlementGrant, audit events: [AuditEvent]) async throws {
        try await write { connection in
            // The recipient's wallet held as a merge or a deletion holds it: a grant made meanwhile waits for it.
            try await connection.query(
                "SELECT 1 FROM wallets WHERE user_id = \(grant.recipient.uuidString) FOR SHARE", logger: self.logger)
            try await Self.requireUser(connection, grant.recipient, grant.environment, live: true, logger: self.logger)
            do {
                try await connection.query(
                    """
                    INSERT INTO entitlement_grants (id, environment, recipient, entitlement, starts_at, ends_at,
                        reason, created_by)
                    VALUES (\(grant.id.uuidString), \(grant.environment.rawValue), \(grant.recipient.uuidString),
                        \(grant.entitlement), \(Millis.from(grant.startsAt)), \(Millis.from(grant.endsAt)),
                        \(grant.reason), \(grant.createdBy))
                    """, logger: self.logger)
            } catch let error as PSQLError where error.sqlState == "23505" {
                throw StoreError.alreadyExists("entitlement grant \(grant.id)")
            }
            try await Self.insertAudit(connection, events, logger: self.logger)
        }
    }

    public func entitlementGrants(environment: AppStoreEnvironment, recipient: UUID) async throws
        -> [EntitlementGrant]
    {
        try await prepared(EntitlementGrantsOf(recipient: recipient, environment: environment))
    }

    public func cancelEntitlementGrant(
        id: UUID, environment: AppStoreEnvironment, by actor: String, at: Date,
        audit events: @escaping @Sendable (EntitlementGrant) -> [AuditEvent]
    ) async throws -> EntitlementGrant {
        try await write { connection in
            guard
                var grant = try await Self.first(
                    connection,
                    """
                    SELECT * FROM entitlement_grants WHERE id = \(id.uuidString)
                        AND environment = \(environment.rawValue)
                    FOR UPDATE
                    """, logger: self.logger, Self.entitlementGrant)
            else { throw StoreError.notFound("entitlement grant \(id)") }
            guard grant.cancelledAt == nil else { return grant }
            (grant.cancelledAt, grant.cancelledBy) = (at, actor)
            try await connection.query(
                """
                UPDATE entitlement_grants SET cancelled_at = \(Millis.from(at)), cancelled_by = \(actor)
                WHERE id = \(id.uuidString)
                """, logger: self.logger)
            try await Self.insertAudit(connection, events(grant), logger: self.logger)
            return grant
        }
    }

    static func entitlementGrant(_ postgresRow: PostgresRow) throws -> EntitlementGrant {
        let row = postgresRow.makeRandomAccess()
        return EntitlementGrant(
            id: try Rows.uuid(row, "id"), environment: try Rows.environment(row),
            recipient: try Rows.uuid(row, "recipient"),
            entitlement: try Rows.value(row, "entitlement"), startsAt: Millis.date(try Rows.value(row, "starts_at")),
            endsAt: Millis.date(try Rows.value(row, "ends_at")), reason: try Rows.value(row, "reason"),
            createdBy: try Rows.value(row, "created_by"), cancelledAt: try Rows.date(row, "cancelled_at"),
            cancelledBy: try Rows.value(row, "cancelled_by"))
    }
}
