import CofferCore
import CofferStore
import Foundation
import Logging
import NIOSSL
import PostgresNIO

extension PostgresStore {
    /// Adds a grant.
    public func createGrant(_ grant: Grant) async throws {
        try await write { connection in
            guard
                try await Self.exists(
                    connection,
                    """
                    SELECT 1 FROM users WHERE id = \(grant.recipient.uuidString)
                    AND environment = \(grant.environment.rawValue)
                    """, logger: self.logger)
            else { throw StoreError.notFound("user \(grant.recipient)") }
            do {
                try await connection.query(
                    """
                    INSERT INTO grants (id, environment, recipient, credits, reason, created_by, created_at, claimed_at)
                    VALUES (\(grant.id.uuidString), \(grant.environment.rawValue), \(grant.recipient.uuidString),
                        \(grant.credits), \(grant.reason), \(grant.createdBy), \(Millis.from(grant.createdAt)),
                        \(grant.claimedAt.map(Millis.from)))
                    """, logger: self.logger)
            } catch let error as PSQLError where error.sqlState == "23505" {
                throw StoreError.alreadyExists("grant \(grant.id)")
            }
        }
    }

    /// Grants of an environment, newest first, optionally for one recipient and one status.
    public func grants(environment: Environment, recipient: UUID?, status: GrantStatus?, limit: Int) async throws
        -> [Grant]
    {
        let statusName = status?.rawValue
        return try await all(
            """
            SELECT * FROM grants WHERE environment = \(environment.rawValue)
            AND (\(recipient?.uuidString)::text IS NULL OR recipient = \(recipient?.uuidString))
            AND (\(statusName)::text IS NULL
                OR (\(statusName) = 'pending' AND claimed_at IS NULL)
                OR (\(statusName) = 'claimed' AND claimed_at IS NOT NULL))
            ORDER BY created_at DESC, id COLLATE "C" DESC LIMIT \(max(0, limit))
            """, Rows.grant)
    }

    /// Marks a grant claimed by its recipient; claiming again returns it unchanged. With a `policy`, the
    /// grant's credits are applied to the ledger (`grant:<id>`) in the same commit (server wallet).
    public func claimGrant(
        id: UUID,
        recipient: UUID,
        environment: Environment,
        crediting policy: DeficitPolicy?,
        at: Date
    ) async throws -> Grant {
        try await write { connection in
            guard
                var grant = try await Self.first(
                    connection,
                    """
                    SELECT * FROM grants WHERE id = \(id.uuidString) AND environment = \(environment.rawValue)
                    FOR UPDATE
                    """, logger: self.logger, Rows.grant)
            else { throw StoreError.notFound("grant \(id)") }
            guard grant.recipient == recipient else { throw StoreError.wrongUser("grant \(id)") }
            guard grant.claimedAt == nil else { return grant }
            if let policy {
                let request = LedgerRequest(
                    owner: recipient, environment: environment,
                    event: .grant(id: id.uuidString.lowercased(), credits: grant.credits, reason: grant.reason),
                    policy: policy, at: at)
                let context = PostgresLedgerContext(connection: connection, logger: self.logger)
                _ = try await LedgerWriter.apply(request, in: context).get()
            }
            grant.claimedAt = at
            try await connection.query(
                "UPDATE grants SET claimed_at = \(Millis.from(at)) WHERE id = \(id.uuidString)", logger: self.logger)
            return grant
        }
    }
}
