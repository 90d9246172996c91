// swift-format-ignore-file: AllPublicDeclarationsHaveDocumentation

// The public methods here are the store protocols' requirements, documented there (`CofferStore/Stores`).
import CofferCore
import CofferStore
import Foundation
import Logging
import NIOSSL
import PostgresNIO

extension PostgresStore {
    public func createGrant(_ grant: Grant, audit events: [AuditEvent]) async throws {
        try await write { connection in
            // The recipient's wallet held as a merge or a deletion holds it, so a grant made meanwhile waits for
            // it: what the merge moves, or the deletion cancels, is what it counted.
            try await connection.query(
                "SELECT 1 FROM wallets WHERE user_id = \(grant.recipient.uuidString) FOR SHARE", logger: self.logger)
            try await Self.requireUser(connection, grant.recipient, grant.environment, live: true, logger: self.logger)
            do {
                try await connection.query(
                    """
                    INSERT INTO grants (id, environment, recipient, credits, reason, created_by, created_at, claimed_at,
                        credit_currency, expires_in_days)
                    VALUES (\(grant.id.uuidString), \(grant.environment.rawValue), \(grant.recipient.uuidString),
                        \(grant.credits), \(grant.reason), \(grant.createdBy), \(Millis.from(grant.createdAt)),
                        \(grant.claimedAt.map(Millis.from)), \(grant.currency?.rawValue),
                        \(grant.expiresInDays.map(Int64.init)))
                    """, logger: self.logger)
            } catch let error as PSQLError where error.sqlState == "23505" {
                throw StoreError.alreadyExists("grant \(grant.id)")
            }
            try await Self.insertAudit(connection, events, logger: self.logger)
        }
    }

    public func grant(id: UUID, environment: AppStoreEnvironment) async throws -> Grant? {
        try await all(
            "SELECT * FROM grants WHERE id = \(id.uuidString) AND environment = \(environment.rawValue)", Rows.grant
        ).first
    }

    public func grantedCredits(environment: AppStoreEnvironment, holder: String, since: Date) async throws -> Int64 {
        try await read { connection in
            try await Self.first(
                connection,
                """
                SELECT COALESCE(SUM(credits), 0)::BIGINT FROM grants
                WHERE environment = \(environment.rawValue) AND created_at >= \(Millis.from(since))
                    AND (claimed_at IS NOT NULL OR cancelled_at IS NULL)
                    AND (created_by = \(holder) OR starts_with(created_by, \(holder + " from ")))
                """, logger: self.logger
            ) { try $0.decode(Int64.self) } ?? 0
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
        let statusName = status?.rawValue
        return try await all(
            """
            SELECT * FROM grants WHERE environment = \(environment.rawValue)
            AND (\(recipient?.uuidString)::text IS NULL OR recipient = \(recipient?.uuidString))
            AND (NOT \(marked) OR recipient IN (
                SELECT owner FROM sandbox_marked WHERE environment = \(environment.rawValue)))
            AND (\(statusName)::text IS NULL
                OR (\(statusName) = 'pending' AND claimed_at IS NULL AND cancelled_at IS NULL)
                OR (\(statusName) = 'claimed' AND claimed_at IS NOT NULL)
                OR (\(statusName) = 'cancelled' AND claimed_at IS NULL AND cancelled_at IS NOT NULL))
            ORDER BY created_at DESC, id COLLATE "C" DESC LIMIT \(max(0, limit))
            """, Rows.grant)
    }

    public func claimGrant(
        id: UUID, environment: AppStoreEnvironment, _ claim: @escaping @Sendable (Grant) throws -> GrantClaim?
    ) async throws -> Grant {
        try await write { connection in
            let grant = try await self.lockedGrant(connection, id: id, environment: environment)
            guard let claimed = try claim(grant) else { return grant }
            if let credit = claimed.credit {
                let context = PostgresLedgerContext(connection: connection, logger: self.logger)
                let applied = try await LedgerWriter.apply(credit, in: context).get()
                try await self.updateLots(connection, [credit], [.success(applied)])
            }
            try await connection.query(
                "UPDATE grants SET claimed_at = \(claimed.grant.claimedAt.map(Millis.from)) WHERE id = \(id.uuidString)",
                logger: self.logger)
            return claimed.grant
        }
    }

    public func cancelGrant(
        id: UUID, environment: AppStoreEnvironment, _ cancel: @escaping @Sendable (Grant) -> Grant?,
        audit: @escaping @Sendable (Grant) -> [AuditEvent]
    ) async throws -> Grant {
        try await write { connection in
            let grant = try await self.lockedGrant(connection, id: id, environment: environment)
            guard let cancelled = cancel(grant) else { return grant }
            try await connection.query(
                """
                UPDATE grants SET cancelled_at = \(cancelled.cancelledAt.map(Millis.from)),
                    cancelled_by = \(cancelled.cancelledBy) WHERE id = \(id.uuidString)
                """, logger: self.logger)
            try await Self.insertAudit(connection, audit(cancelled), logger: self.logger)
            return cancelled
        }
    }

    /// The grant, its row locked for the transaction, or ``StoreError/notFound(_:)``.
    func lockedGrant(_ connection: PostgresConnection, id: UUID, environment: AppStoreEnvironment) async throws -> Grant
    {
        guard
            let grant = try await Self.first(
                connection,
                """
                SELECT * FROM grants WHERE id = \(id.uuidString) AND environment = \(environment.rawValue)
                FOR UPDATE
                """, logger: self.logger, Rows.grant)
        else { throw StoreError.notFound("grant \(id)") }
        return grant
    }
}
