import CofferCore
import Foundation

/// The outbox and the deliveries of signed webhooks, shared by every instance on one database.
///
/// The outbox is written by the store itself, in the transaction of each change (a ledger entry, an audit entry of
/// `grant.create`, `grant.cancel`, `user.merge` or `customer.delete`, Apple's `EXPIRED` notification), while the
/// environment has an endpoint: nothing is acknowledged without its event. The delivery service makes each record an
/// event once (``routeWebhookEvents(environment:limit:at:_:)``), then leases deliveries so that no two instances send
/// one at once and a customer's events go in order.
public protocol WebhookStore: Sendable {
    /// The environment's endpoints, oldest first.
    func webhookEndpoints(environment: AppStoreEnvironment) async throws -> [WebhookEndpoint]
    /// Adds an endpoint or replaces the one of its id (its url, secrets and events).
    func saveWebhookEndpoint(_ endpoint: WebhookEndpoint) async throws
    /// Removes an endpoint and the deliveries it had not received yet.
    ///
    /// - Returns: Whether there was one.
    func removeWebhookEndpoint(id: String, environment: AppStoreEnvironment) async throws -> Bool
    /// Makes up to `limit` outbox records events, oldest first, in one transaction: `route` names each one's id,
    /// type, body and endpoints (`nil`: the record makes none), and each endpoint gets a pending delivery due at `at`.
    /// Records another instance is making events at the same moment are left to it.
    ///
    /// - Returns: How many records were made events (or passed over).
    func routeWebhookEvents(
        environment: AppStoreEnvironment, limit: Int, at: Date,
        _ route: @escaping @Sendable (OutboxRecord) -> WebhookEvent?
    ) async throws -> Int
    /// Leases up to `limit` pending deliveries due at `at` to `holder` until `until`, of the endpoints named (`nil`:
    /// any; an instance leases only those it can sign for): for each endpoint and customer, only the oldest pending
    /// one, so a customer's events go in order; none leased to another holder whose lease runs.
    func leaseWebhookDeliveries(
        environment: AppStoreEnvironment, holder: String, limit: Int, at: Date, until: Date, endpoints: [String]?
    ) async throws -> [WebhookDelivery]
    /// Records attempts of deliveries leased to `holder`, in one transaction, and ends their leases. A failure to be
    /// retried holds the customer's later deliveries to that endpoint until the retry (they wait behind it anyway),
    /// so a down endpoint's backlog is not read again every round.
    ///
    /// - Returns: For each attempt, whether its lease was still `holder`'s (otherwise nothing changed for it).
    func finishWebhookAttempts(_ attempts: [WebhookAttempt], environment: AppStoreEnvironment, holder: String)
        async throws -> [Bool]
    /// One round of the delivery service in one write transaction: records the last round's answers (as
    /// ``finishWebhookAttempts(_:environment:holder:)``), makes new records events (as
    /// ``routeWebhookEvents(environment:limit:at:_:)``), then leases due deliveries (as
    /// ``leaseWebhookDeliveries(environment:holder:limit:at:until:endpoints:)``). One commit a round, not three or
    /// more, beside the ledger's own (on SQLite, the one writer's fsyncs are what a delivery waits for).
    func webhookRound(_ request: WebhookRoundRequest, route: @escaping @Sendable (OutboxRecord) -> WebhookEvent?)
        async throws -> WebhookRoundResult
    /// The environment's deliveries, newest event first: all of them, or those in one state.
    func webhookDeliveries(environment: AppStoreEnvironment, state: WebhookDeliveryState?, limit: Int) async throws
        -> [WebhookDelivery]
    /// Sends a delivery again: pending from `at`, with 3 days of retries again. Throws ``StoreError/notFound(_:)``.
    func resendWebhookDelivery(endpoint: String, seq: Int64, environment: AppStoreEnvironment, at: Date) async throws
    /// Sends an endpoint every event the outbox keeps that was written at or after `since` again (as the same events),
    /// delivered or not. Throws ``StoreError/notFound(_:)`` for an unknown endpoint.
    ///
    /// - Returns: How many.
    func replayWebhookEvents(endpoint: String, environment: AppStoreEnvironment, since: Date, at: Date) async throws
        -> Int
    /// The environment's backlog.
    func webhookBacklog(environment: AppStoreEnvironment) async throws -> WebhookBacklog
    /// Forgets events written before `before` whose deliveries are all done (delivered or dead).
    ///
    /// - Returns: How many.
    func pruneWebhookEvents(environment: AppStoreEnvironment, before: Date) async throws -> Int
}

extension WebhookStore {
    /// The round as three transactions, for stores whose every call is already atomic (the in-memory store) and for
    /// wrappers that count or fail calls.
    public func webhookRound(
        _ request: WebhookRoundRequest, route: @escaping @Sendable (OutboxRecord) -> WebhookEvent?
    ) async throws -> WebhookRoundResult {
        let finished =
            request.finishing.isEmpty
            ? []
            : try await finishWebhookAttempts(
                request.finishing, environment: request.environment, holder: request.holder)
        let routed = try await routeWebhookEvents(
            environment: request.environment, limit: request.routeLimit, at: request.at, route)
        let leased = try await leaseWebhookDeliveries(
            environment: request.environment, holder: request.holder, limit: request.leaseLimit, at: request.at,
            until: request.until, endpoints: request.endpoints)
        return WebhookRoundResult(finished: finished, routed: routed, leased: leased)
    }

    /// Records one attempt (``finishWebhookAttempts(_:environment:holder:)``).
    ///
    /// - Returns: Whether the lease was still `holder`'s.
    public func finishWebhookAttempt(_ attempt: WebhookAttempt, environment: AppStoreEnvironment, holder: String)
        async throws -> Bool
    {
        try await finishWebhookAttempts([attempt], environment: environment, holder: holder).first ?? false
    }

    /// Leases deliveries of any endpoint (``leaseWebhookDeliveries(environment:holder:limit:at:until:endpoints:)``).
    public func leaseWebhookDeliveries(
        environment: AppStoreEnvironment, holder: String, limit: Int, at: Date, until: Date
    ) async throws -> [WebhookDelivery] {
        try await leaseWebhookDeliveries(
            environment: environment, holder: holder, limit: limit, at: at, until: until, endpoints: nil)
    }
}
