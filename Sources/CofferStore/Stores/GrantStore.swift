import CofferCore
import Foundation

/// Support's grants: created, claimed by the app, cancelled.
public protocol GrantStore: Sendable {
    // MARK: Grants

    /// Adds a grant with the audit entries that record it, in one transaction (an entry whose id is taken is
    /// written under an id of its own). Throws ``StoreError/alreadyExists(_:)`` for a grant id taken.
    func createGrant(_ grant: Grant, audit: [AuditEvent]) async throws
    /// The grant with this id in an environment.
    func grant(id: UUID, environment: AppStoreEnvironment) async throws -> Grant?
    /// Grants of an environment, newest first, optionally for one recipient and one status.
    func grants(environment: AppStoreEnvironment, recipient: UUID?, status: GrantStatus?, limit: Int) async throws
        -> [Grant]
    /// The credits of the grants one admin made at or after `since` and did not see cancelled: those whose
    /// `createdBy` is `holder` or starts with `holder from ` (the panel and the admin API add the address).
    func grantedCredits(environment: AppStoreEnvironment, holder: String, since: Date) async throws -> Int64
    /// Claims a grant as `claim` says (``Grant/claim(by:crediting:at:)``), in one transaction that holds the
    /// grant: `claim` is given the grant on file and answers it claimed, with the ledger request that credits
    /// it (applied in the same commit), or `nil` to leave it. Callers use
    /// ``claimGrant(id:recipient:environment:crediting:at:)``.
    ///
    /// - Returns: The grant as it is after.
    /// - Throws: ``StoreError/notFound(_:)``, or what `claim` throws.
    func claimGrant(
        id: UUID, environment: AppStoreEnvironment, _ claim: @escaping @Sendable (Grant) throws -> GrantClaim?
    )
        async throws -> Grant
    /// Cancels a grant as `cancel` says (``Grant/cancel(by:at:)``), in one transaction that holds the grant, so
    /// a claim and a cancellation never both happen: `cancel` is given the grant on file and answers it
    /// cancelled, or `nil` to leave it; `audit`'s entries for the grant cancelled are written in that transaction.
    ///
    /// - Returns: The grant as it is after.
    /// - Throws: ``StoreError/notFound(_:)``.
    func cancelGrant(
        id: UUID, environment: AppStoreEnvironment, _ cancel: @escaping @Sendable (Grant) -> Grant?,
        audit: @escaping @Sendable (Grant) -> [AuditEvent]
    )
        async throws -> Grant
}

extension GrantStore {
    /// Adds a grant with no audit entry (tests, the import, which audits per customer).
    public func createGrant(_ grant: Grant) async throws {
        try await createGrant(grant, audit: [])
    }

    /// Marks a grant claimed by its recipient; claiming again returns it unchanged. With a `policy`, the
    /// grant's credits are applied to the ledger (`grant:<id>`) in the same commit (server wallet).
    ///
    /// - Throws: ``StoreError/notFound(_:)``, ``StoreError/wrongUser(_:)``, or ``StoreError/cancelled(_:)`` for a
    ///   grant support cancelled.
    public func claimGrant(
        id: UUID, recipient: UUID, environment: AppStoreEnvironment, crediting policy: DeficitPolicy?, at: Date
    ) async throws -> Grant {
        try await claimGrant(id: id, environment: environment) { grant in
            try grant.claim(by: recipient, crediting: policy, at: at)
        }
    }

    /// Cancels a pending grant, with the audit entries `audit` makes of it in the same transaction; a claimed one,
    /// or one cancelled before, is returned unchanged (nothing audited).
    ///
    /// - Throws: ``StoreError/notFound(_:)``.
    public func cancelGrant(
        id: UUID, environment: AppStoreEnvironment, by actor: String, at: Date,
        audit: @escaping @Sendable (Grant) -> [AuditEvent] = { _ in [] }
    ) async throws -> Grant {
        try await cancelGrant(id: id, environment: environment, { $0.cancel(by: actor, at: at) }, audit: audit)
    }
}
