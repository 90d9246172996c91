// swift-format-ignore-file: AllPublicDeclarationsHaveDocumentation

// The public methods here are the store protocols' requirements, documented there (`CofferStore/Stores`).
import CofferCore
import CofferLedgerSQLite
import CofferStore
import Foundation
import GRDB

/// The webhooks' endpoints, outbox and deliveries, and the triggers that write the outbox in the transaction of
/// each change while the environment has an endpoint.
enum WebhookTables {
    /// What a trigger checks before it writes: the environment has an endpoint.
    private static let heard = """
        EXISTS (SELECT 1 FROM webhook_endpoints WHERE environment = NEW.environment AND id NOT LIKE 'forward-%')
        """
    private static let columns = """
        environment, source, kind, support_id, entry_key, amount, balance_delta, deficit_delta, balance, deficit,
        transaction_id, product_id, reason, detail, created_at, original_transaction_id
        """

    static let sql = """
        CREATE TABLE webhook_endpoints (
            environment TEXT NOT NULL,
            id TEXT NOT NULL,
            url TEXT NOT NULL,
            secret TEXT NOT NULL,
            previous_secret TEXT,
            events TEXT NOT NULL,
            created_at INTEGER NOT NULL,
            PRIMARY KEY (environment, id)
        ) WITHOUT ROWID;
        CREATE TABLE webhook_outbox (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            environment TEXT NOT NULL,
            source TEXT NOT NULL,
            kind TEXT NOT NULL,
            support_id TEXT NOT NULL,
            entry_key TEXT,
            amount INTEGER,
            balance_delta INTEGER,
            deficit_delta INTEGER,
            balance INTEGER,
            deficit INTEGER,
            transaction_id TEXT,
            product_id TEXT,
            reason TEXT,
            detail TEXT,
            original_transaction_id TEXT,
            created_at INTEGER NOT NULL,
            routed INTEGER NOT NULL DEFAULT 0,
            event_id TEXT,
            type TEXT,
            body TEXT
        );
        CREATE INDEX webhook_outbox_unrouted ON webhook_outbox (environment, seq) WHERE routed = 0;
        CREATE INDEX webhook_outbox_by_created ON webhook_outbox (environment, created_at);
        CREATE TABLE webhook_deliveries (
            environment TEXT NOT NULL,
            endpoint TEXT NOT NULL,
            seq INTEGER NOT NULL,
            support_id TEXT NOT NULL,
            state TEXT NOT NULL CHECK (state IN ('pending', 'delivered', 'dead')),
            attempts INTEGER NOT NULL DEFAULT 0,
            first_attempt_at INTEGER,
            next_at INTEGER NOT NULL,
            lease_holder TEXT,
            lease_until INTEGER,
            last_status INTEGER,
            last_error TEXT,
            delivered_at INTEGER,
            PRIMARY KEY (environment, endpoint, seq)
        ) WITHOUT ROWID;
        CREATE INDEX webhook_deliveries_due ON webhook_deliveries (environment, next_at) WHERE state = 'pending';
        CREATE INDEX webhook_deliveries_in_order ON webhook_deliveries (environment, endpoint, support_id, seq)
            WHERE state = 'pending';
        CREATE INDEX webhook_deliveries_by_seq ON webhook_deliveries (environment, seq);
        CREATE INDEX webhook_deliveries_pending ON webhook_deliveries (environment, seq) WHERE state = 'pending';
        CREATE INDEX webhook_deliveries_dead ON webhook_deliveries (environment, seq) WHERE state = 'dead';
        CREATE TRIGGER webhook_outbox_ledger AFTER INSERT ON ledger_entries
        WHEN NEW.kind <> 'merge' AND \(heard)
        BEGIN
            INSERT INTO webhook_outbox (\(columns))
            VALUES (NEW.environment, 'ledger', NEW.kind,
                COALESCE((SELECT support_id FROM users WHERE id = NEW.owner), ''), NEW.key, NEW.amount,
                NEW.balance_delta, NEW.deficit_delta, NEW.balance_after, NEW.deficit_after, NEW.transaction_id,
                NEW.product_id, NEW.reason, NULL, NEW.created_at,
                    (SELECT original_transaction_id FROM receipts
                        WHERE environment = NEW.environment AND transaction_id = NEW.transaction_id));
        END;
        CREATE TRIGGER webhook_outbox_audit AFTER INSERT ON audit_events
        WHEN NEW.action IN ('grant.create', 'grant.cancel', 'user.merge', 'customer.delete') AND \(heard)
        BEGIN
            INSERT INTO webhook_outbox (\(columns))
            VALUES (NEW.environment, 'audit', NEW.action, NEW.subject, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
                NULL, NEW.after, NEW.at, NULL);
        END;
        CREATE TRIGGER webhook_outbox_expired AFTER INSERT ON notifications
        WHEN NEW.type = 'EXPIRED' AND NEW.owner IS NOT NULL AND \(heard)
        BEGIN
            INSERT INTO webhook_outbox (\(columns))
            VALUES (NEW.environment, 'notification', NEW.type,
                COALESCE((SELECT support_id FROM users WHERE id = NEW.owner), ''), NULL, NULL, NULL, NULL, NULL, NULL,
                NEW.transaction_id, NULL, NEW.subtype, NULL, NEW.received_at, NEW.original_transaction_id);
        END;
        """
}

extension WebhookTables {
    /// The ledger entries of the currencies other than the default reach the outbox as the default's do, each
    /// record saying its currency (`credit_currency`; `NULL`: the default's).
    static let currencies = """
        ALTER TABLE webhook_outbox ADD COLUMN credit_currency TEXT;
        CREATE TRIGGER webhook_outbox_currency AFTER INSERT ON currency_entries
        WHEN NEW.kind <> 'merge' AND \(heard)
        BEGIN
            INSERT INTO webhook_outbox (\(columns), credit_currency)
            VALUES (NEW.environment, 'ledger', NEW.kind,
                COALESCE((SELECT support_id FROM users WHERE id = NEW.owner), ''), NEW.key, NEW.amount,
                NEW.balance_delta, NEW.deficit_delta, NEW.balance_after, NEW.deficit_after, NEW.transaction_id,
                NEW.product_id, NEW.reason, NULL, NEW.created_at,
                    (SELECT original_transaction_id FROM currency_receipts
                        WHERE environment = NEW.environment AND transaction_id = NEW.transaction_id
                        AND credit_currency = NEW.credit_currency),
                NEW.credit_currency);
        END;
        """

    /// Apple's notification, its body unchanged, written with its record while the environment forwards
    /// (`apple.forward.url`).
    static let forward = """
        INSERT INTO webhook_outbox (environment, source, kind, support_id, transaction_id, reason, detail, created_at)
        SELECT ?, 'apple', ?, COALESCE((SELECT support_id FROM users WHERE id = ?), ''), ?, ?, ?, ?
        WHERE EXISTS (SELECT 1 FROM webhook_endpoints WHERE environment = ? AND id LIKE 'forward-%')
        """
}

extension SQLiteStore {
    public func webhookEndpoints(environment: AppStoreEnvironment) async throws -> [WebhookEndpoint] {
        try await all(
            "SELECT * FROM webhook_endpoints WHERE environment = ? ORDER BY created_at, id", [environment.rawValue],
            Self.webhookEndpoint)
    }

    public func saveWebhookEndpoint(_ endpoint: WebhookEndpoint) async throws {
        try await write { db in
            try db.execute(
                cached: """
                    INSERT INTO webhook_endpoints (environment, id, url, secret, previous_secret, events, created_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?)
                    ON CONFLICT (environment, id) DO UPDATE SET url = excluded.url, secret = excluded.secret,
                        previous_secret = excluded.previous_secret, events = excluded.events
                    """,
                arguments: [
                    endpoint.environment.rawValue, endpoint.id, endpoint.url, endpoint.secret, endpoint.previousSecret,
                    endpoint.events.joined(separator: ","), Millis.from(endpoint.createdAt),
                ])
        }
    }

    public func removeWebhookEndpoint(id: String, environment: AppStoreEnvironment) async throws -> Bool {
        try await write { db in
            try db.execute(
                cached: "DELETE FROM webhook_deliveries WHERE environment = ? AND endpoint = ?",
                arguments: [environment.rawValue, id])
            try db.execute(
                cached: "DELETE FROM webhook_endpoints WHERE environment = ? AND id = ?",
                arguments: [environment.rawValue, id])
            return db.changesCount > 0
        }
    }

    public func routeWebhookEvents(
        environment: AppStoreEnvironment, limit: Int, at: Date,
        _ route: @escaping @Sendable (OutboxRecord) -> WebhookEvent?
    ) async throws -> Int {
        try await write { db in try Self.route(db, environment: environment, limit: limit, at: at, route) }
    }

    /// The round's records are read and made events before its write transaction (a snapshot read, beside the
    /// writer), so the one writer is held only to record, mark and lease: a record another instance made an event in
    /// the meantime is passed over, and one whose reasons a customer's deletion scrubbed meanwhile is made an event
    /// again as it is now.
    public func webhookRound(
        _ request: WebhookRoundRequest, route: @escaping @Sendable (OutboxRecord) -> WebhookEvent?
    ) async throws -> WebhookRoundResult {
        let records = try await read { db in
            try Self.unrouted(db, environment: request.environment, limit: request.routeLimit)
        }
        let events = records.map { ($0, route($0)) }
        return try await write { db in
            let finished = try request.finishing.map {
                try Self.finish($0, db, environment: request.environment, holder: request.holder)
            }
            var routed = 0
            for (record, event) in events {
                if try Self.markRouted(
                    db, record, event, environment: request.environment, at: request.at, asRead: true) == 1
                {
                    routed += 1
                } else if let fresh = try Self.unrouted(db, seq: record.seq) {
                    // Changed since it was read (a deletion scrubbed support's reasons): made an event as it is now.
                    routed += try Self.markRouted(
                        db, fresh, route(fresh), environment: request.environment, at: request.at)
                }
            }
            let leased = try Self.lease(
                db, environment: request.environment, holder: request.holder, limit: request.leaseLimit,
                at: request.at, until: request.until, endpoints: request.endpoints)
            return WebhookRoundResult(finished: finished, routed: routed, leased: leased)
        }
    }

    /// Makes up to `limit` outbox records events in `db`'s transaction.
    static func route(
        _ db: Database, environment: AppStoreEnvironment, limit: Int, at: Date,
        _ route: (OutboxRecord) -> WebhookEvent?
    ) throws -> Int {
        var routed = 0
        for record in try unrouted(db, environment: environment, limit: limit) {
            routed += try markRouted(db, record, route(record), environment: environment, at: at)
        }
        return routed
    }

    /// The record `seq` while it is not made an event yet.
    static func unrouted(_ db: Database, seq: Int64) throws -> OutboxRecord? {
        try Row.fetchOne(
            db,
            cached: """
                SELECT o.*, r.original_transaction_id AS receipt_original FROM webhook_outbox o
                LEFT JOIN receipts r ON r.environment = o.environment AND r.transaction_id = o.transaction_id
                WHERE o.seq = ? AND o.routed = 0
                """, arguments: [seq]
        ).map(Self.outboxRecord)
    }

    /// The oldest records not made events yet.
    static func unrouted(_ db: Database, environment: AppStoreEnvironment, limit: Int) throws -> [OutboxRecord] {
        guard limit > 0 else { return [] }
        return try Row.fetchAll(
            db,
            cached: """
                SELECT o.*, r.original_transaction_id AS receipt_original FROM webhook_outbox o
                LEFT JOIN receipts r ON r.environment = o.environment AND r.transaction_id = o.transaction_id
                WHERE o.environment = ? AND o.routed = 0 ORDER BY o.seq LIMIT ?
                """, arguments: [environment.rawValue, limit]
        ).map(Self.outboxRecord)
    }

    /// Marks `record` made `event` and queues a delivery to each of its endpoints, unless it was made one already
    /// or, `asRead`, its reasons changed since `record` was read (the event was made of what it held then).
    ///
    /// - Returns: 1 when this call made it, else 0.
    static func markRouted(
        _ db: Database, _ record: OutboxRecord, _ event: WebhookEvent?, environment: AppStoreEnvironment, at: Date,
        asRead: Bool = false
    ) throws -> Int {
        if asRead {
            try db.execute(
                cached: """
                    UPDATE webhook_outbox SET routed = 1, event_id = ?, type = ?, body = ?
                    WHERE seq = ? AND routed = 0 AND reason IS ? AND detail IS ?
                    """,
                arguments: [
                    event?.id.uuidString.lowercased(), event?.type, event?.body, record.seq, record.reason,
                    record.detail,
                ])
        } else {
            try db.execute(
                cached:
                    "UPDATE webhook_outbox SET routed = 1, event_id = ?, type = ?, body = ? WHERE seq = ? AND routed = 0",
                arguments: [event?.id.uuidString.lowercased(), event?.type, event?.body, record.seq])
        }
        guard db.changesCount > 0 else { return 0 }
        for endpoint in Set(event?.endpoints ?? []).sorted() {
            try db.execute(
                cached: """
                    INSERT INTO webhook_deliveries (environment, endpoint, seq, support_id, state, next_at)
                    VALUES (?, ?, ?, ?, 'pending', ?) ON CONFLICT DO NOTHING
                    """,
                arguments: [environment.rawValue, endpoint, record.seq, record.supportId, Millis.from(at)])
        }
        return 1
    }

    /// The due deliveries a round may lease: each endpoint's and customer's oldest pending one. A customer's earlier
    /// pending deliveries are looked up through `webhook_deliveries_in_order` (the primary key would read every
    /// delivery the endpoint ever had).
    static func leaseQuery(endpoints: Int?) -> String {
        let named = endpoints.map { " AND d.endpoint IN (\(Array(repeating: "?", count: $0).joined(separator: ", ")))" }
        return """
            SELECT d.endpoint, d.seq FROM webhook_deliveries d
            WHERE d.environment = ? AND d.state = 'pending' AND d.next_at <= ?
                AND (d.lease_until IS NULL OR d.lease_until <= ?)\(named ?? "")
                AND NOT EXISTS (SELECT 1 FROM webhook_deliveries e INDEXED BY webhook_deliveries_in_order
                    WHERE e.environment = d.environment AND e.endpoint = d.endpoint
                    AND e.support_id = d.support_id AND e.state = 'pending' AND e.seq < d.seq)
            ORDER BY d.next_at, d.seq LIMIT ?
            """
    }

    public func leaseWebhookDeliveries(
        environment: AppStoreEnvironment, holder: String, limit: Int, at: Date, until: Date, endpoints: [String]?
    ) async throws -> [WebhookDelivery] {
        if let endpoints, endpoints.isEmpty { return [] }
        return try await write { db in
            try Self.lease(
                db, environment: environment, holder: holder, limit: limit, at: at, until: until, endpoints: endpoints)
        }
    }

    /// Leases due deliveries in `db`'s transaction.
    static func lease(
        _ db: Database, environment: AppStoreEnvironment, holder: String, limit: Int, at: Date, until: Date,
        endpoints: [String]?
    ) throws -> [WebhookDelivery] {
        if let endpoints, endpoints.isEmpty { return [] }
        let now = Millis.from(at)
        let picked = try Row.fetchAll(
            db, cached: Self.leaseQuery(endpoints: endpoints?.count),
            arguments: StatementArguments(
                [environment.rawValue, now, now] as [any DatabaseValueConvertible] + (endpoints ?? [])
                    + [max(0, limit)]))
        var leased: [WebhookDelivery] = []
        for row in picked {
            let (endpoint, seq): (String, Int64) = (row["endpoint"], row["seq"])
            try db.execute(
                cached: """
                    UPDATE webhook_deliveries SET lease_holder = ?, lease_until = ?
                    WHERE environment = ? AND endpoint = ? AND seq = ?
                    """, arguments: [holder, Millis.from(until), environment.rawValue, endpoint, seq])
            if let delivery = try Self.delivery(db, environment, endpoint: endpoint, seq: seq) {
                leased.append(delivery)
            }
        }
        return leased
    }

    public func finishWebhookAttempts(_ attempts: [WebhookAttempt], environment: AppStoreEnvironment, holder: String)
        async throws -> [Bool]
    {
        try await write { db in
            try attempts.map { try Self.finish($0, db, environment: environment, holder: holder) }
        }
    }

    /// Records one attempt in `db`'s transaction.
    static func finish(_ attempt: WebhookAttempt, _ db: Database, environment: AppStoreEnvironment, holder: String)
        throws -> Bool
    {
        do {
            let (state, next, delivered): (WebhookDeliveryState, Date?, Date?) =
                switch attempt.outcome {
                case .delivered: (.delivered, nil, attempt.at)
                case .failed(let retryAt): (retryAt == nil ? .dead : .pending, retryAt, nil)
                }
            try db.execute(
                cached: """
                    UPDATE webhook_deliveries SET state = ?, attempts = attempts + 1,
                        first_attempt_at = COALESCE(first_attempt_at, ?), next_at = COALESCE(?, next_at),
                        last_status = ?, last_error = ?, delivered_at = ?, lease_holder = NULL, lease_until = NULL
                    WHERE environment = ? AND endpoint = ? AND seq = ? AND lease_holder = ? AND state = 'pending'
                    """,
                arguments: [
                    state.rawValue, Millis.from(attempt.at), next.map(Millis.from), attempt.status,
                    attempt.error.map { String($0.prefix(500)) }, delivered.map(Millis.from), environment.rawValue,
                    attempt.endpoint, attempt.seq, holder,
                ])
            guard db.changesCount > 0 else { return false }
            if state == .pending, let next {
                // The customer's later deliveries wait behind this one: not due before its retry.
                try db.execute(
                    cached: """
                        UPDATE webhook_deliveries SET next_at = ?
                        WHERE environment = ? AND endpoint = ? AND state = 'pending' AND next_at < ? AND seq > ?
                            AND support_id = (SELECT support_id FROM webhook_deliveries
                                WHERE environment = ? AND endpoint = ? AND seq = ?)
                        """,
                    arguments: [
                        Millis.from(next), environment.rawValue, attempt.endpoint, Millis.from(next), attempt.seq,
                        environment.rawValue, attempt.endpoint, attempt.seq,
                    ])
            }
            return true
        }
    }

    public func webhookDeliveries(environment: AppStoreEnvironment, state: WebhookDeliveryState?, limit: Int)
        async throws -> [WebhookDelivery]
    {
        // Newest first through an index in that order: every delivery's, or one state's (its partial index, which
        // SQLite takes only for the state written out, not bound).
        let index =
            switch state {
            case nil: "webhook_deliveries_newest"
            case .pending: "webhook_deliveries_pending"
            case .dead: "webhook_deliveries_dead"
            case .delivered: "webhook_deliveries_newest"
            }
        return try await read { db in
            try Row.fetchAll(
                db,
                cached: """
                    SELECT \(Self.deliveryColumns) FROM webhook_deliveries d INDEXED BY \(index)
                    JOIN webhook_outbox o ON o.seq = d.seq
                    WHERE d.environment = ? \(state.map { "AND d.state = '\($0.rawValue)'" } ?? "")
                    ORDER BY d.seq DESC, d.endpoint DESC LIMIT ?
                    """,
                arguments: [environment.rawValue, max(0, limit)]
            ).map(Self.delivery)
        }
    }

    public func resendWebhookDelivery(endpoint: String, seq: Int64, environment: AppStoreEnvironment, at: Date)
        async throws
    {
        try await write { db in
            try db.execute(
                cached: """
                    UPDATE webhook_deliveries SET state = 'pending', attempts = 0, first_attempt_at = NULL,
                        next_at = ?, delivered_at = NULL
                    WHERE environment = ? AND endpoint = ? AND seq = ?
                    """, arguments: [Millis.from(at), environment.rawValue, endpoint, seq])
            guard db.changesCount > 0 else { throw StoreError.notFound("delivery \(seq) to \(endpoint)") }
        }
    }

    public func replayWebhookEvents(endpoint: String, environment: AppStoreEnvironment, since: Date, at: Date)
        async throws -> Int
    {
        try await write { db in
            guard
                let heard = try Row.fetchOne(
                    db, cached: "SELECT * FROM webhook_endpoints WHERE environment = ? AND id = ?",
                    arguments: [environment.rawValue, endpoint]
                ).map(Self.webhookEndpoint)
            else { throw StoreError.notFound("webhook endpoint \(endpoint)") }
            let types = heard.replayedTypes
            let marks = Array(repeating: "?", count: types.count).joined(separator: ", ")
            try db.execute(
                cached: """
                    INSERT INTO webhook_deliveries (environment, endpoint, seq, support_id, state, next_at)
                    SELECT environment, ?, seq, support_id, 'pending', ? FROM webhook_outbox
                    WHERE environment = ? AND routed = 1 AND event_id IS NOT NULL AND created_at >= ?
                        AND type IN (\(marks))
                    ORDER BY seq
                    ON CONFLICT (environment, endpoint, seq) DO UPDATE SET state = 'pending', attempts = 0,
                        first_attempt_at = NULL, next_at = excluded.next_at, delivered_at = NULL
                    """,
                arguments: StatementArguments(
                    [endpoint, Millis.from(at), environment.rawValue, Millis.from(since)]
                        as [any DatabaseValueConvertible] + types))
            return db.changesCount
        }
    }

    public func webhookBacklog(environment: AppStoreEnvironment) async throws -> WebhookBacklog {
        try await read { db in
            let env = environment.rawValue
            let cap = WebhookBacklog.countLimit
            // Each count reads its partial index up to the cap.
            let counts = try Row.fetchOne(
                db,
                cached: """
                    SELECT
                        (SELECT count(*) FROM (SELECT 1 FROM webhook_deliveries INDEXED BY webhook_deliveries_pending
                            WHERE environment = ?1 AND state = 'pending' LIMIT \(cap))) AS pending,
                        (SELECT count(*) FROM (SELECT 1 FROM webhook_deliveries INDEXED BY webhook_deliveries_dead
                            WHERE environment = ?1 AND state = 'dead' LIMIT \(cap))) AS dead,
                        (SELECT count(*) FROM (SELECT 1 FROM webhook_outbox INDEXED BY webhook_outbox_unrouted
                            WHERE environment = ?1 AND routed = 0 LIMIT \(cap))) AS unrouted,
                        (SELECT min(created_at) FROM webhook_outbox INDEXED BY webhook_outbox_unrouted
                            WHERE environment = ?1 AND routed = 0) AS unrouted_at,
                        (SELECT o.created_at FROM webhook_outbox o WHERE o.seq = (SELECT seq
                            FROM webhook_deliveries INDEXED BY webhook_deliveries_pending
                            WHERE environment = ?1 AND state = 'pending' ORDER BY seq LIMIT 1)) AS pending_at
                    """, arguments: [env])
            let oldest = [counts?["unrouted_at"] as Int64?, counts?["pending_at"] as Int64?].compactMap { $0 }.min()
            return WebhookBacklog(
                pending: counts?["pending"] ?? 0, dead: counts?["dead"] ?? 0, unrouted: counts?["unrouted"] ?? 0,
                oldest: oldest.map(Millis.date))
        }
    }

    public func pruneWebhookEvents(environment: AppStoreEnvironment, before: Date) async throws -> Int {
        try await write { db in
            let done = """
                SELECT seq FROM webhook_outbox o WHERE o.environment = ? AND o.routed = 1 AND o.created_at < ?
                    AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.environment = o.environment
                        AND d.seq = o.seq AND d.state = 'pending')
                """
            let arguments: StatementArguments = [environment.rawValue, Millis.from(before)]
            try db.execute(
                cached: "DELETE FROM webhook_deliveries WHERE environment = ? AND seq IN (\(done))",
                arguments: [environment.rawValue] + arguments)
            try db.execute(cached: "DELETE FROM webhook_outbox WHERE seq IN (\(done))", arguments: arguments)
            return db.changesCount
        }
    }

    static let deliveryColumns = """
        d.endpoint, d.seq, d.support_id, d.state, d.attempts, d.first_attempt_at, d.next_at, d.last_status,
        d.last_error, d.delivered_at, o.event_id, o.type, o.body, o.created_at
        """

    static func delivery(_ db: Database, _ environment: AppStoreEnvironment, endpoint: String, seq: Int64) throws
        -> WebhookDelivery?
    {
        try Row.fetchOne(
            db,
            cached: """
                SELECT \(deliveryColumns) FROM webhook_deliveries d JOIN webhook_outbox o ON o.seq = d.seq
                WHERE d.environment = ? AND d.endpoint = ? AND d.seq = ?
                """, arguments: [environment.rawValue, endpoint, seq]
        ).map(delivery)
    }

    static func delivery(_ row: Row) throws -> WebhookDelivery {
        guard let state = WebhookDeliveryState(rawValue: row["state"]) else {
            throw StoreError.storage("corrupt webhook delivery state")
        }
        return WebhookDelivery(
            endpoint: row["endpoint"], seq: row["seq"], eventId: try RowValue.uuid(row, "event_id"), type: row["type"],
            supportId: row["support_id"], body: row["body"], state: state, attempts: row["attempts"],
            firstAttemptAt: (row["first_attempt_at"] as Int64?).map(Millis.date),
            nextAttemptAt: Millis.date(row["next_at"]), lastStatus: row["last_status"], lastError: row["last_error"],
            deliveredAt: (row["delivered_at"] as Int64?).map(Millis.date), createdAt: Millis.date(row["created_at"]))
    }

    static func webhookEndpoint(_ row: Row) throws -> WebhookEndpoint {
        let events: String = row["events"]
        return WebhookEndpoint(
            id: row["id"], environment: try RowValue.environment(row), url: row["url"], secret: row["secret"],
            previousSecret: row["previous_secret"], events: events.split(separator: ",").map(String.init),
            createdAt: Millis.date(row["created_at"]))
    }

    static func outboxRecord(_ row: Row) throws -> OutboxRecord {
        guard let source = OutboxRecord.Source(rawValue: row["source"]) else {
            throw StoreError.storage("corrupt webhook outbox source")
        }
        return OutboxRecord(
            seq: row["seq"], environment: try RowValue.environment(row), source: source, kind: row["kind"],
            supportId: row["support_id"], entryKey: row["entry_key"], amount: row["amount"],
            balanceDelta: row["balance_delta"], deficitDelta: row["deficit_delta"], balance: row["balance"],
            deficit: row["deficit"], transactionId: row["transaction_id"],
            originalTransactionId: (row["original_transaction_id"] as String?) ?? (row["receipt_original"] as String?),
            productId: row["product_id"],
            reason: row["reason"], detail: row["detail"], createdAt: Millis.date(row["created_at"]),
            currency: try (row["credit_currency"] as String?).map(Self.currency))
    }

    /// A currency id from the outbox, refusing a corrupt one.
    static func currency(_ id: String) throws -> Currency {
        guard let currency = Currency(rawValue: id) else { throw StoreError.storage("corrupt credit_currency column") }
        return currency
    }
}
