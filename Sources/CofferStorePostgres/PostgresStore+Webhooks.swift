// swift-format-ignore-file: AllPublicDeclarationsHaveDocumentation

// The public methods here are the store protocols' requirements, documented there (`CofferStore/Stores`).
import CofferCore
import CofferStore
import Foundation
import Logging
import PostgresNIO

/// The webhooks' endpoints, outbox and deliveries, and the triggers that write the outbox in the transaction of
/// each change while the environment has an endpoint (as the SQLite store's).
enum PostgresWebhookTables {
    private static let heard = """
        EXISTS (SELECT 1 FROM webhook_endpoints WHERE environment = NEW.environment AND id NOT LIKE 'forward-%')
        """
    private static let columns = """
        environment, source, kind, support_id, entry_key, amount, balance_delta, deficit_delta, balance, deficit,
        transaction_id, product_id, reason, detail, created_at, original_transaction_id
        """
    private static let supportId = "COALESCE((SELECT support_id FROM users WHERE id = NEW.owner), '')"
    /// Held until the transaction ends, before a customer's record takes its number: a customer's records are
    /// numbered in the order their transactions commit (the ledger's own writes are in that order already, by the
    /// wallet's lock; support's audit entries and Apple's notifications take this one).
    static func customerLock(_ environment: String, _ supportId: String) -> String {
        "pg_advisory_xact_lock(hashtext('coffer-webhook:' || \(environment)), hashtext(\(supportId)))"
    }

    /// The ledger entries of the currencies other than the default reach the outbox as the default's do, each
    /// record saying its currency (`credit_currency`; `NULL`: the default's).
    static let currencies = """
        ALTER TABLE webhook_outbox ADD COLUMN credit_currency TEXT;
        CREATE FUNCTION coffer_webhook_currency() RETURNS trigger LANGUAGE plpgsql AS $$
        DECLARE customer TEXT;
        BEGIN
            IF NEW.kind <> 'merge' AND \(heard) THEN
                customer := \(supportId);
                PERFORM \(customerLock("NEW.environment", "customer"));
                INSERT INTO webhook_outbox (\(columns), credit_currency)
                VALUES (NEW.environment, 'ledger', NEW.kind, customer, NEW.key, NEW.amount, NEW.balance_delta,
                    NEW.deficit_delta, NEW.balance_after, NEW.deficit_after, NEW.transaction_id, NEW.product_id,
                    NEW.reason, NULL, NEW.created_at,
                    (SELECT original_transaction_id FROM currency_receipts
                        WHERE environment = NEW.environment AND transaction_id = NEW.transaction_id
                        AND credit_currency = NEW.credit_currency),
                    NEW.credit_currency);
            END IF;
            RETURN NULL;
        END $$;
        CREATE TRIGGER webhook_outbox_currency AFTER INSERT ON currency_entries
            FOR EACH ROW EXECUTE FUNCTION coffer_webhook_currency()
        """

    static let sql = """
        CREATE TABLE webhook_endpoints (
            environment TEXT NOT NULL,
            id TEXT NOT NULL,
            url TEXT NOT NULL,
            secret TEXT NOT NULL,
            previous_secret TEXT,
            events TEXT NOT NULL,
            created_at BIGINT NOT NULL,
            PRIMARY KEY (environment, id)
        );
        CREATE TABLE webhook_outbox (
            seq BIGSERIAL PRIMARY KEY,
            environment TEXT NOT NULL,
            source TEXT NOT NULL,
            kind TEXT NOT NULL,
            support_id TEXT NOT NULL,
            entry_key TEXT,
            amount BIGINT,
            balance_delta BIGINT,
            deficit_delta BIGINT,
            balance BIGINT,
            deficit BIGINT,
            transaction_id TEXT,
            product_id TEXT,
            reason TEXT,
            detail TEXT,
            original_transaction_id TEXT,
            created_at BIGINT NOT NULL,
            routed BOOLEAN NOT NULL DEFAULT false,
            event_id TEXT,
            type TEXT,
            body TEXT
        );
        CREATE INDEX webhook_outbox_unrouted ON webhook_outbox (environment, seq) WHERE NOT routed;
        CREATE INDEX webhook_outbox_by_created ON webhook_outbox (environment, created_at);
        CREATE TABLE webhook_deliveries (
            environment TEXT NOT NULL,
            endpoint TEXT NOT NULL,
            seq BIGINT NOT NULL,
            support_id TEXT NOT NULL,
            state TEXT NOT NULL CHECK (state IN ('pending', 'delivered', 'dead')),
            attempts BIGINT NOT NULL DEFAULT 0,
            first_attempt_at BIGINT,
            next_at BIGINT NOT NULL,
            lease_holder TEXT,
            lease_until BIGINT,
            last_status BIGINT,
            last_error TEXT,
            delivered_at BIGINT,
            PRIMARY KEY (environment, endpoint, seq)
        );
        CREATE INDEX webhook_deliveries_due ON webhook_deliveries (environment, next_at) WHERE state = 'pending';
        CREATE INDEX webhook_deliveries_in_order ON webhook_deliveries (environment, endpoint, support_id, seq)
            WHERE state = 'pending';
        CREATE INDEX webhook_deliveries_by_seq ON webhook_deliveries (environment, seq);
        CREATE INDEX webhook_deliveries_pending ON webhook_deliveries (environment, seq) WHERE state = 'pending';
        CREATE INDEX webhook_deliveries_dead ON webhook_deliveries (environment, seq) WHERE state = 'dead';
        CREATE FUNCTION coffer_webhook_ledger() RETURNS trigger LANGUAGE plpgsql AS $$
        DECLARE customer TEXT;
        BEGIN
            IF NEW.kind <> 'merge' AND \(heard) THEN
                customer := \(supportId);
                PERFORM \(customerLock("NEW.environment", "customer"));
                INSERT INTO webhook_outbox (\(columns))
                VALUES (NEW.environment, 'ledger', NEW.kind, customer, NEW.key, NEW.amount, NEW.balance_delta,
                    NEW.deficit_delta, NEW.balance_after, NEW.deficit_after, NEW.transaction_id, NEW.product_id,
                    NEW.reason, NULL, NEW.created_at,
                    (SELECT original_transaction_id FROM receipts
                        WHERE environment = NEW.environment AND transaction_id = NEW.transaction_id));
            END IF;
            RETURN NULL;
        END $$;
        CREATE TRIGGER webhook_outbox_ledger AFTER INSERT ON ledger_entries
            FOR EACH ROW EXECUTE FUNCTION coffer_webhook_ledger();
        CREATE FUNCTION coffer_webhook_audit() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF NEW.action IN ('grant.create', 'grant.cancel', 'user.merge', 'customer.delete') AND \(heard) THEN
                PERFORM \(customerLock("NEW.environment", "NEW.subject"));
                INSERT INTO webhook_outbox (\(columns))
                VALUES (NEW.environment, 'audit', NEW.action, NEW.subject, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
                    NULL, NULL, NEW.after, NEW.at, NULL);
            END IF;
            RETURN NULL;
        END $$;
        CREATE TRIGGER webhook_outbox_audit AFTER INSERT ON audit_events
            FOR EACH ROW EXECUTE FUNCTION coffer_webhook_audit();
        CREATE FUNCTION coffer_webhook_expired() RETURNS trigger LANGUAGE plpgsql AS $$
        DECLARE customer TEXT;
        BEGIN
            IF NEW.type = 'EXPIRED' AND NEW.owner IS NOT NULL AND \(heard) THEN
                customer := \(supportId);
                PERFORM \(customerLock("NEW.environment", "customer"));
                INSERT INTO webhook_outbox (\(columns))
                VALUES (NEW.environment, 'notification', NEW.type, customer, NULL, NULL, NULL, NULL, NULL, NULL,
                    NEW.transaction_id, NULL, NEW.subtype, NULL, NEW.received_at, NEW.original_transaction_id);
            END IF;
            RETURN NULL;
        END $$;
        CREATE TRIGGER webhook_outbox_expired AFTER INSERT ON notifications
            FOR EACH ROW EXECUTE FUNCTION coffer_webhook_expired()
        """

    /// The advisory lock one instance holds while it makes outbox records events, so a customer's events are made
    /// in order by one instance at a time.
    static let routingLock: Int32 = 0x636F_7768
}

extension PostgresStore {
    public func webhookEndpoints(environment: AppStoreEnvironment) async throws -> [WebhookEndpoint] {
        try await all(
            "SELECT * FROM webhook_endpoints WHERE environment = \(environment.rawValue) ORDER BY created_at, id",
            Self.webhookEndpoint)
    }

    public func saveWebhookEndpoint(_ endpoint: WebhookEndpoint) async throws {
        try await write { connection in
            try await connection.query(
                """
                INSERT INTO webhook_endpoints (environment, id, url, secret, previous_secret, events, created_at)
                VALUES (\(endpoint.environment.rawValue), \(endpoint.id), \(endpoint.url), \(endpoint.secret),
                    \(endpoint.previousSecret), \(endpoint.events.joined(separator: ",")),
                    \(Millis.from(endpoint.createdAt)))
                ON CONFLICT (environment, id) DO UPDATE SET url = excluded.url, secret = excluded.secret,
                    previous_secret = excluded.previous_secret, events = excluded.events
                """, logger: self.logger)
        }
    }

    public func removeWebhookEndpoint(id: String, environment: AppStoreEnvironment) async throws -> Bool {
        try await write { connection in
            try await connection.query(
                "DELETE FROM webhook_deliveries WHERE environment = \(environment.rawValue) AND endpoint = \(id)",
                logger: self.logger)
            return try await Self.exists(
                connection,
                """
                DELETE FROM webhook_endpoints WHERE environment = \(environment.rawValue) AND id = \(id) RETURNING 1
                """, logger: self.logger)
        }
    }

    public func routeWebhookEvents(
        environment: AppStoreEnvironment, limit: Int, at: Date,
        _ route: @escaping @Sendable (OutboxRecord) -> WebhookEvent?
    ) async throws -> Int {
        try await write { connection in
            try await self.route(connection, environment: environment, limit: limit, at: at, route)
        }
    }

    public func leaseWebhookDeliveries(
        environment: AppStoreEnvironment, holder: String, limit: Int, at: Date, until: Date, endpoints: [String]?
    ) async throws -> [WebhookDelivery] {
        try await write { connection in
            try await self.lease(
                connection, environment: environment, holder: holder, limit: limit, at: at, until: until,
                endpoints: endpoints)
        }
    }

    public func finishWebhookAttempts(_ attempts: [WebhookAttempt], environment: AppStoreEnvironment, holder: String)
        async throws -> [Bool]
    {
        try await write { connection in
            var finished: [Bool] = []
            for attempt in attempts {
                finished.append(try await self.finish(attempt, connection, environment: environment, holder: holder))
            }
            return finished
        }
    }

    public func webhookRound(
        _ request: WebhookRoundRequest, route: @escaping @Sendable (OutboxRecord) -> WebhookEvent?
    ) async throws -> WebhookRoundResult {
        try await write { connection in
            var finished: [Bool] = []
            for attempt in request.finishing {
                finished.append(
                    try await self.finish(
                        attempt, connection, environment: request.environment, holder: request.holder))
            }
            let routed = try await self.route(
                connection, environment: request.environment, limit: request.routeLimit, at: request.at, route)
            let leased = try await self.lease(
                connection, environment: request.environment, holder: request.holder, limit: request.leaseLimit,
                at: request.at, until: request.until, endpoints: request.endpoints)
            return WebhookRoundResult(finished: finished, routed: routed, leased: leased)
        }
    }

    /// Makes up to `limit` outbox records events in `connection`'s transaction, unless another instance is doing so.
    private func route(
        _ connection: PostgresConnection, environment: AppStoreEnvironment, limit: Int, at: Date,
        _ route: @Sendable (OutboxRecord) -> WebhookEvent?
    ) async throws -> Int {
        // One instance makes events at a time; another finds the lock taken and leaves the work to it.
        guard
            try await Self.first(
                connection,
                """
                SELECT pg_try_advisory_xact_lock(\(PostgresWebhookTables.routingLock),
                    hashtext(\(environment.rawValue)))
                """,
                logger: self.logger, { try $0.decode(Bool.self) }) == true
        else { return 0 }
        var records: [OutboxRecord] = []
        for try await row in try await connection.query(
            """
            SELECT o.*, r.original_transaction_id AS receipt_original FROM webhook_outbox o
            LEFT JOIN receipts r ON r.environment = o.environment AND r.transaction_id = o.transaction_id
            WHERE o.environment = \(environment.rawValue) AND NOT o.routed ORDER BY o.seq LIMIT \(max(0, limit))
            """, logger: self.logger)
        {
            records.append(try Self.outboxRecord(row))
        }
        for record in records {
            let event = route(record)
            try await connection.query(
                """
                UPDATE webhook_outbox SET routed = true, event_id = \(event?.id.uuidString.lowercased()),
                    type = \(event?.type), body = \(event?.body)
                WHERE seq = \(record.seq)
                """, logger: self.logger)
            let endpoints = Set(event?.endpoints ?? []).sorted()
            guard !endpoints.isEmpty else { continue }
            try await connection.query(
                """
                INSERT INTO webhook_deliveries (environment, endpoint, seq, support_id, state, next_at)
                SELECT \(environment.rawValue), e, \(record.seq), \(record.supportId), 'pending', \(Millis.from(at))
                FROM unnest(\(endpoints)::text[]) AS e
                ON CONFLICT DO NOTHING
                """, logger: self.logger)
        }
        return records.count
    }

    /// Leases due deliveries in `connection`'s transaction (rows another instance holds locked are passed over).
    private func lease(
        _ connection: PostgresConnection, environment: AppStoreEnvironment, holder: String, limit: Int, at: Date,
        until: Date, endpoints: [String]?
    ) async throws -> [WebhookDelivery] {
        if let endpoints, endpoints.isEmpty { return [] }
        let now = Millis.from(at)
        let (any, named) = (endpoints == nil, endpoints ?? [])
        var leased: [WebhookDelivery] = []
        for try await row in try await connection.query(
            """
            WITH picked AS (
                SELECT d.endpoint, d.seq FROM webhook_deliveries d
                WHERE d.environment = \(environment.rawValue) AND d.state = 'pending' AND d.next_at <= \(now)
                    AND (d.lease_until IS NULL OR d.lease_until <= \(now))
                    AND (\(any) OR d.endpoint = ANY(\(named)::text[]))
                    AND NOT EXISTS (SELECT 1 FROM webhook_deliveries e WHERE e.environment = d.environment
                        AND e.endpoint = d.endpoint AND e.support_id = d.support_id AND e.state = 'pending'
                        AND e.seq < d.seq)
                ORDER BY d.next_at, d.seq LIMIT \(max(0, limit))
                FOR UPDATE SKIP LOCKED
            ), leased AS (
                UPDATE webhook_deliveries d SET lease_holder = \(holder), lease_until = \(Millis.from(until))
                FROM picked WHERE d.environment = \(environment.rawValue) AND d.endpoint = picked.endpoint
                    AND d.seq = picked.seq
                RETURNING d.*
            )
            SELECT \(unescaped: Self.deliveryColumns) FROM leased d JOIN webhook_outbox o ON o.seq = d.seq
            ORDER BY d.next_at, d.seq
            """, logger: self.logger)
        {
            leased.append(try Self.delivery(row))
        }
        return leased
    }

    /// Records one attempt in `connection`'s transaction.
    private func finish(
        _ attempt: WebhookAttempt, _ connection: PostgresConnection, environment: AppStoreEnvironment, holder: String
    ) async throws -> Bool {
        let (state, next, delivered): (WebhookDeliveryState, Date?, Date?) =
            switch attempt.outcome {
            case .delivered: (.delivered, nil, attempt.at)
            case .failed(let retryAt): (retryAt == nil ? .dead : .pending, retryAt, nil)
            }
        let status = attempt.status.map(Int64.init)
        let error = attempt.error.map { String($0.prefix(500)) }
        do {
            let finished = try await Self.first(
                connection,
                """
                UPDATE webhook_deliveries SET state = \(state.rawValue), attempts = attempts + 1,
                    first_attempt_at = COALESCE(first_attempt_at, \(Millis.from(attempt.at))),
                    next_at = COALESCE(\(next.map(Millis.from))::bigint, next_at), last_status = \(status),
                    last_error = \(error), delivered_at = \(delivered.map(Millis.from)), lease_holder = NULL,
                    lease_until = NULL
                WHERE environment = \(environment.rawValue) AND endpoint = \(attempt.endpoint)
                    AND seq = \(attempt.seq) AND lease_holder = \(holder) AND state = 'pending'
                RETURNING support_id
                """, logger: self.logger, { try $0.decode(String.self) })
            guard let customer = finished else { return false }
            if state == .pending, let next {
                // The customer's later deliveries wait behind this one: not due before its retry.
                try await connection.query(
                    """
                    UPDATE webhook_deliveries SET next_at = \(Millis.from(next))
                    WHERE environment = \(environment.rawValue) AND endpoint = \(attempt.endpoint)
                        AND support_id = \(customer) AND state = 'pending' AND seq > \(attempt.seq)
                        AND next_at < \(Millis.from(next))
                    """, logger: self.logger)
            }
            return true
        }
    }

    public func webhookDeliveries(environment: AppStoreEnvironment, state: WebhookDeliveryState?, limit: Int)
        async throws -> [WebhookDelivery]
    {
        // Newest first through an index in that order: every delivery's, or one state's (its partial index).
        guard let state else {
            return try await all(
                """
                SELECT \(unescaped: Self.deliveryColumns) FROM webhook_deliveries d JOIN webhook_outbox o ON o.seq = d.seq
                WHERE d.environment = \(environment.rawValue)
                ORDER BY d.seq DESC, d.endpoint DESC LIMIT \(max(0, limit))
                """, Self.delivery)
        }
        return try await all(
            """
            SELECT \(unescaped: Self.deliveryColumns) FROM webhook_deliveries d JOIN webhook_outbox o ON o.seq = d.seq
            WHERE d.environment = \(environment.rawValue) AND d.state = \(state.rawValue)
            ORDER BY d.seq DESC, d.endpoint DESC LIMIT \(max(0, limit))
            """, Self.delivery)
    }

    public func resendWebhookDelivery(endpoint: String, seq: Int64, environment: AppStoreEnvironment, at: Date)
        async throws
    {
        try await write { connection in
            guard
                try await Self.exists(
                    connection,
                    """
                    UPDATE webhook_deliveries SET state = 'pending', attempts = 0, first_attempt_at = NULL,
                        next_at = \(Millis.from(at)), delivered_at = NULL
                    WHERE environment = \(environment.rawValue) AND endpoint = \(endpoint) AND seq = \(seq)
                    RETURNING 1
                    """, logger: self.logger)
            else { throw StoreError.notFound("delivery \(seq) to \(endpoint)") }
        }
    }

    public func replayWebhookEvents(endpoint: String, environment: AppStoreEnvironment, since: Date, at: Date)
        async throws -> Int
    {
        try await write { connection in
            guard
                let heard = try await Self.first(
                    connection,
                    """
                    SELECT * FROM webhook_endpoints WHERE environment = \(environment.rawValue) AND id = \(endpoint)
                    """, logger: self.logger, Self.webhookEndpoint)
            else { throw StoreError.notFound("webhook endpoint \(endpoint)") }
            return try await Self.count(
                connection,
                """
                WITH replayed AS (
                    INSERT INTO webhook_deliveries (environment, endpoint, seq, support_id, state, next_at)
                    SELECT environment, \(endpoint), seq, support_id, 'pending', \(Millis.from(at))
                    FROM webhook_outbox
                    WHERE environment = \(environment.rawValue) AND routed AND event_id IS NOT NULL
                        AND created_at >= \(Millis.from(since))
                        AND type = ANY(\(heard.replayedTypes)::text[])
                    ON CONFLICT (environment, endpoint, seq) DO UPDATE SET state = 'pending', attempts = 0,
                        first_attempt_at = NULL, next_at = excluded.next_at, delivered_at = NULL
                    RETURNING 1
                )
                SELECT count(*) FROM replayed
                """, logger: self.logger)
        }
    }

    public func webhookBacklog(environment: AppStoreEnvironment) async throws -> WebhookBacklog {
        let env = environment.rawValue
        let cap = WebhookBacklog.countLimit
        return try await read { connection in
            // Each count reads its partial index up to the cap.
            try await Self.first(
                connection,
                """
                SELECT
                    (SELECT count(*) FROM (SELECT 1 FROM webhook_deliveries WHERE environment = \(env)
                        AND state = 'pending' LIMIT \(cap)) AS p),
                    (SELECT count(*) FROM (SELECT 1 FROM webhook_deliveries WHERE environment = \(env)
                        AND state = 'dead' LIMIT \(cap)) AS d),
                    (SELECT count(*) FROM (SELECT 1 FROM webhook_outbox WHERE environment = \(env) AND NOT routed
                        LIMIT \(cap)) AS u),
                    (SELECT min(created_at) FROM webhook_outbox WHERE environment = \(env) AND NOT routed),
                    (SELECT o.created_at FROM webhook_outbox o WHERE o.seq = (SELECT seq
                        FROM webhook_deliveries WHERE environment = \(env) AND state = 'pending' ORDER BY seq LIMIT 1))
                """, logger: self.logger
            ) { row in
                let (pending, dead, unrouted, unroutedAt, pendingAt) = try row.decode(
                    (Int64, Int64, Int64, Int64?, Int64?).self)
                return WebhookBacklog(
                    pending: Int(pending), dead: Int(dead), unrouted: Int(unrouted),
                    oldest: [unroutedAt, pendingAt].compactMap { $0 }.min().map(Millis.date))
            } ?? WebhookBacklog(pending: 0, dead: 0, unrouted: 0, oldest: nil)
        }
    }

    public func pruneWebhookEvents(environment: AppStoreEnvironment, before: Date) async throws -> Int {
        try await write { connection in
            try await Self.count(
                connection,
                """
                WITH done AS (
                    SELECT seq FROM webhook_outbox o WHERE o.environment = \(environment.rawValue) AND o.routed
                        AND o.created_at < \(Millis.from(before))
                        AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.environment = o.environment
                            AND d.seq = o.seq AND d.state = 'pending')
                ), deliveries AS (
                    DELETE FROM webhook_deliveries WHERE environment = \(environment.rawValue)
                        AND seq IN (SELECT seq FROM done)
                ), events AS (
                    DELETE FROM webhook_outbox WHERE seq IN (SELECT seq FROM done) RETURNING 1
                )
                SELECT count(*) FROM events
                """, logger: self.logger)
        }
    }

    static let deliveryColumns = """
        d.endpoint, d.seq, d.support_id, d.state, d.attempts, d.first_attempt_at, d.next_at, d.last_status,
        d.last_error, d.delivered_at, o.event_id, o.type, o.body, o.created_at
        """

    static func delivery(_ postgresRow: PostgresRow) throws -> WebhookDelivery {
        let row = postgresRow.makeRandomAccess()
        guard let state = WebhookDeliveryState(rawValue: try Rows.value(row, "state", as: String.self)) else {
            throw StoreError.storage("corrupt webhook delivery state")
        }
        return WebhookDelivery(
            endpoint: try Rows.value(row, "endpoint"), seq: try Rows.value(row, "seq"),
            eventId: try Rows.uuid(row, "event_id"), type: try Rows.value(row, "type"),
            supportId: try Rows.value(row, "support_id"), body: try Rows.value(row, "body"), state: state,
            attempts: Int(try Rows.value(row, "attempts", as: Int64.self)),
            firstAttemptAt: try Rows.date(row, "first_attempt_at"),
            nextAttemptAt: Millis.date(try Rows.value(row, "next_at")),
            lastStatus: try Rows.value(row, "last_status", as: Int64?.self).map(Int.init),
            lastError: try Rows.value(row, "last_error"), deliveredAt: try Rows.date(row, "delivered_at"),
            createdAt: Millis.date(try Rows.value(row, "created_at")))
    }

    static func webhookEndpoint(_ postgresRow: PostgresRow) throws -> WebhookEndpoint {
        let row = postgresRow.makeRandomAccess()
        let events = try Rows.value(row, "events", as: String.self)
        return WebhookEndpoint(
            id: try Rows.value(row, "id"), environment: try Rows.environment(row), url: try Rows.value(row, "url"),
            secret: try Rows.value(row, "secret"), previousSecret: try Rows.value(row, "previous_secret"),
            events: events.split(separator: ",").map(String.init),
            createdAt: Millis.date(try Rows.value(row, "created_at")))
    }

    static func outboxRecord(_ postgresRow: PostgresRow) throws -> OutboxRecord {
        let row = postgresRow.makeRandomAccess()
        guard let source = OutboxRecord.Source(rawValue: try Rows.value(row, "source", as: String.self)) else {
            throw StoreError.storage("corrupt webhook outbox source")
        }
        return OutboxRecord(
            seq: try Rows.value(row, "seq"), environment: try Rows.environment(row), source: source,
            kind: try Rows.value(row, "kind"), supportId: try Rows.value(row, "support_id"),
            entryKey: try Rows.value(row, "entry_key"), amount: try Rows.value(row, "amount"),
            balanceDelta: try Rows.value(row, "balance_delta"), deficitDelta: try Rows.value(row, "deficit_delta"),
            balance: try Rows.value(row, "balance"), deficit: try Rows.value(row, "deficit"),
            transactionId: try Rows.value(row, "transaction_id"),
            originalTransactionId: try Rows.value(row, "original_transaction_id", as: String?.self)
                ?? (try Rows.value(row, "receipt_original", as: String?.self)),
            productId: try Rows.value(row, "product_id"), reason: try Rows.value(row, "reason"),
            detail: try Rows.value(row, "detail"), createdAt: Millis.date(try Rows.value(row, "created_at")),
            currency: try Rows.value(row, "credit_currency", as: String?.self).map(Rows.currency))
    }
}
