// swift-format-ignore-file: AllPublicDeclarationsHaveDocumentation

// The public methods here are the store protocols' requirements, documented there (`CofferStore/Stores`).
import CofferCore
import CofferStore
import Foundation
import Logging
import PostgresNIO

/// The dashboard's rollups on PostgreSQL (``DashboardRollup``). Several instances write at once, so a trigger never
/// adds to a shared sum in place (every delivery would wait for the same row, and two transactions taking two sums in
/// opposite orders would deadlock): it appends its contribution to `dashboard_deltas`, and
/// ``PostgresStore/foldRollups()`` moves the deltas into `dashboard_rollups` every few seconds, one instance at a
/// time. A reading adds what is not folded yet, through an index (the folds leave dead rows behind until the table
/// is vacuumed, which it is after every 10,000: a queue's setting, not the default fifth of the table).
enum PostgresRollupTables {
    private static let into =
        "INSERT INTO dashboard_deltas (environment, figure, bucket, label, currency, count, amount)"

    private static let rows = RollupSQL(.postgres)
    private static let columns = """
        environment TEXT NOT NULL, figure TEXT NOT NULL, bucket BIGINT NOT NULL, label TEXT NOT NULL,
        currency TEXT NOT NULL, count BIGINT NOT NULL, amount BIGINT NOT NULL
        """

    /// A trigger function that appends what the old row counted for (taken away) and what the new one does.
    private static func function(_ name: String, _ contribution: (String, String) -> String, extra: String = "")
        -> String
    {
        """
        CREATE FUNCTION \(name)() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF TG_OP IN ('UPDATE', 'DELETE') THEN
                \(into) \(contribution("OLD", "-1"));
            END IF;
            IF TG_OP IN ('INSERT', 'UPDATE') THEN
                \(into) \(contribution("NEW", "1"));
            END IF;
            \(extra)
            RETURN NULL;
        END $$;
        """
    }

    /// A wallet table's function and three triggers: what a wallet in deficit counts for, added and taken away as it
    /// changes.
    private static func walletTriggers(_ name: String, on table: String, _ rows: @escaping (String, String) -> String)
        -> String
    {
        """
        \(function("coffer_rollup_\(name)", rows))
        CREATE TRIGGER rollup_\(name)_insert AFTER INSERT ON \(table)
            FOR EACH ROW WHEN (NEW.deficit > 0) EXECUTE FUNCTION coffer_rollup_\(name)();
        CREATE TRIGGER rollup_\(name)_update AFTER UPDATE OF deficit, user_id ON \(table)
            FOR EACH ROW WHEN (OLD.deficit IS DISTINCT FROM NEW.deficit OR OLD.user_id IS DISTINCT FROM NEW.user_id)
            EXECUTE FUNCTION coffer_rollup_\(name)();
        CREATE TRIGGER rollup_\(name)_delete AFTER DELETE ON \(table)
            FOR EACH ROW WHEN (OLD.deficit > 0) EXECUTE FUNCTION coffer_rollup_\(name)();
        """
    }

    /// The tables, functions and triggers, and the sums of what is already there (migration v26).
    static let sql = """
        CREATE TABLE dashboard_rollups (
            \(columns),
            PRIMARY KEY (environment, figure, bucket, label, currency)
        );
        CREATE TABLE dashboard_deltas (seq BIGSERIAL PRIMARY KEY, \(columns))
            WITH (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 10000);
        CREATE INDEX dashboard_deltas_by_figure ON dashboard_deltas (environment, figure, bucket);
        CREATE TABLE subscription_chains (
            environment TEXT NOT NULL,
            original_transaction_id TEXT NOT NULL,
            own BOOLEAN NOT NULL,
            active_until BIGINT NOT NULL,
            PRIMARY KEY (environment, original_transaction_id, own)
        );
        CREATE INDEX subscription_chains_by_end ON subscription_chains (environment, own, active_until);
        CREATE FUNCTION coffer_refresh_chain(e TEXT, o TEXT) RETURNS void LANGUAGE plpgsql AS $$
        BEGIN
            -- The subscription's two rows (its own data's and the other environment's), made when new and locked:
            -- one transaction at a time recomputes a subscription, each reading what the one before wrote. Row locks,
            -- not advisory ones, which a transaction of many receipts would run out of.
            INSERT INTO subscription_chains (environment, original_transaction_id, own, active_until)
            VALUES (e, o, true, 0), (e, o, false, 0) ON CONFLICT DO NOTHING;
            PERFORM 1 FROM subscription_chains WHERE environment = e AND original_transaction_id = o FOR UPDATE;
            \(into) SELECT environment, CASE WHEN own THEN 'expiry' ELSE 'expiry.other' END, active_until / 3600000,
                '', '', -1, 0
            FROM subscription_chains WHERE environment = e AND original_transaction_id = o AND active_until > 0;
            UPDATE subscription_chains c SET active_until = (
                SELECT CASE WHEN count(*) = 0 THEN 0 ELSE GREATEST(COALESCE(max(r.expires_date), 0),
                    COALESCE((SELECT s.grace_period_expires_date FROM renewal_states s
                        WHERE s.environment = e AND s.original_transaction_id = o), 0)) END
                FROM receipts r
                WHERE r.environment = e AND r.original_transaction_id = o AND r.delivered_at IS NOT NULL
                    AND (r.revoked_at IS NULL OR r.revoked_at <= r.reversed_at)
                    AND (r.data_environment IS NULL OR r.data_environment = r.environment) = c.own)
            WHERE c.environment = e AND c.original_transaction_id = o;
            \(into) SELECT environment, CASE WHEN own THEN 'expiry' ELSE 'expiry.other' END, active_until / 3600000,
                '', '', 1, 0
            FROM subscription_chains WHERE environment = e AND original_transaction_id = o AND active_until > 0;
        END $$;
        \(function("coffer_rollup_receipt", { rows.receipt($0, $1) }, extra: """
            IF TG_OP = 'DELETE' THEN
                IF OLD.expires_date IS NOT NULL THEN
                    PERFORM coffer_refresh_chain(OLD.environment, OLD.original_transaction_id);
                END IF;
            ELSIF NEW.expires_date IS NOT NULL OR (TG_OP = 'UPDATE' AND OLD.expires_date IS NOT NULL) THEN
                PERFORM coffer_refresh_chain(NEW.environment, NEW.original_transaction_id);
                IF TG_OP = 'UPDATE' AND OLD.original_transaction_id IS DISTINCT FROM NEW.original_transaction_id THEN
                    PERFORM coffer_refresh_chain(OLD.environment, OLD.original_transaction_id);
                END IF;
            END IF;
            """))
        CREATE TRIGGER rollup_receipt_insert AFTER INSERT ON receipts
            FOR EACH ROW EXECUTE FUNCTION coffer_rollup_receipt();
        CREATE TRIGGER rollup_receipt_update AFTER UPDATE OF \(RollupSQL.receiptColumns) ON receipts
            FOR EACH ROW WHEN (\(rows.changed(RollupSQL.receiptColumnNames))) EXECUTE FUNCTION coffer_rollup_receipt();
        CREATE TRIGGER rollup_receipt_delete AFTER DELETE ON receipts
            FOR EACH ROW EXECUTE FUNCTION coffer_rollup_receipt();
        CREATE FUNCTION coffer_rollup_renewal() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF TG_OP = 'DELETE' THEN
                PERFORM coffer_refresh_chain(OLD.environment, OLD.original_transaction_id);
            ELSE
                PERFORM coffer_refresh_chain(NEW.environment, NEW.original_transaction_id);
            END IF;
            RETURN NULL;
        END $$;
        CREATE TRIGGER rollup_renewal_insert AFTER INSERT ON renewal_states
            FOR EACH ROW EXECUTE FUNCTION coffer_rollup_renewal();
        CREATE TRIGGER rollup_renewal_update AFTER UPDATE OF grace_period_expires_date ON renewal_states
            FOR EACH ROW WHEN (OLD.grace_period_expires_date IS DISTINCT FROM NEW.grace_period_expires_date)
            EXECUTE FUNCTION coffer_rollup_renewal();
        CREATE TRIGGER rollup_renewal_delete AFTER DELETE ON renewal_states
            FOR EACH ROW EXECUTE FUNCTION coffer_rollup_renewal();
        \(function("coffer_rollup_user", { rows.user($0, $1) }, extra: """
            IF TG_OP = 'UPDATE' THEN
                \(into) \(rows.deficit("OLD", "-1")) UNION ALL \(rows.deficit("NEW", "1"));
            END IF;
            """))
        CREATE TRIGGER rollup_user_insert AFTER INSERT ON users FOR EACH ROW EXECUTE FUNCTION coffer_rollup_user();
        CREATE TRIGGER rollup_user_update AFTER UPDATE OF app_transaction_environment ON users
            FOR EACH ROW WHEN (OLD.app_transaction_environment IS DISTINCT FROM NEW.app_transaction_environment)
            EXECUTE FUNCTION coffer_rollup_user();
        CREATE TRIGGER rollup_user_delete AFTER DELETE ON users FOR EACH ROW EXECUTE FUNCTION coffer_rollup_user();
        \(walletTriggers("wallet", on: "wallets") { rows.wallet($0, $1) })
        \(function("coffer_rollup_grant", { rows.grant($0, $1) }))
        CREATE TRIGGER rollup_grant_insert AFTER INSERT ON grants FOR EACH ROW EXECUTE FUNCTION coffer_rollup_grant();
        CREATE TRIGGER rollup_grant_update AFTER UPDATE OF claimed_at, cancelled_at ON grants
            FOR EACH ROW WHEN (\(rows.changed(["claimed_at", "cancelled_at"]))) EXECUTE FUNCTION coffer_rollup_grant();
        CREATE TRIGGER rollup_grant_delete AFTER DELETE ON grants FOR EACH ROW EXECUTE FUNCTION coffer_rollup_grant();
        \(function("coffer_rollup_milestone", { rows.milestone($0, $1) }))
        CREATE TRIGGER rollup_milestone_insert AFTER INSERT ON milestones
            FOR EACH ROW EXECUTE FUNCTION coffer_rollup_milestone();
        CREATE TRIGGER rollup_milestone_update AFTER UPDATE OF owner, name ON milestones
            FOR EACH ROW WHEN (\(rows.changed(["owner", "name"]))) EXECUTE FUNCTION coffer_rollup_milestone();
        CREATE TRIGGER rollup_milestone_delete AFTER DELETE ON milestones
            FOR EACH ROW EXECUTE FUNCTION coffer_rollup_milestone();
        \(function("coffer_rollup_notification", { rows.notification($0, $1) }))
        CREATE TRIGGER rollup_notification_insert AFTER INSERT ON notifications
            FOR EACH ROW EXECUTE FUNCTION coffer_rollup_notification();
        CREATE TRIGGER rollup_notification_delete AFTER DELETE ON notifications
            FOR EACH ROW EXECUTE FUNCTION coffer_rollup_notification();
        \(backfill)
        """

    /// The other currencies' deficits (migration v35): triggers on `currency_wallets`, and on a customer's
    /// AppTransaction moving their deficits in or out of the dashboard's, with the sums of what is already there (as
    /// deltas the next fold moves).
    static let currencies = """
        \(walletTriggers("currency_wallet", on: "currency_wallets") { rows.currencyWallet($0, $1) })
        CREATE FUNCTION coffer_rollup_user_currencies() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            \(into) \(rows.currencyDeficit("OLD", "-1")) UNION ALL \(rows.currencyDeficit("NEW", "1"));
            RETURN NULL;
        END $$;
        CREATE TRIGGER rollup_user_update_currencies AFTER UPDATE OF app_transaction_environment ON users
            FOR EACH ROW WHEN (OLD.app_transaction_environment IS DISTINCT FROM NEW.app_transaction_environment)
            EXECUTE FUNCTION coffer_rollup_user_currencies();
        \(currencyBackfill)
        """

    /// The sums of the other currencies' deficits the database already holds, as deltas.
    static let currencyBackfill = """
        \(into)
        SELECT environment, figure, bucket, label, currency, sum(count)::BIGINT, sum(amount)::BIGINT FROM (
            \(rows.currencyWallet("x", "1", from: "FROM currency_wallets x"))
        ) AS c (environment, figure, bucket, label, currency, count, amount)
        GROUP BY environment, figure, bucket, label, currency
        """

    /// The sums of what the database already holds, written once when the rollups are made.
    static let backfill = """
        INSERT INTO dashboard_rollups (environment, figure, bucket, label, currency, count, amount)
        SELECT environment, figure, bucket, label, currency, sum(count)::BIGINT, sum(amount)::BIGINT FROM (
            \(rows.everything)
        ) AS c (environment, figure, bucket, label, currency, count, amount)
        GROUP BY environment, figure, bucket, label, currency;
        INSERT INTO subscription_chains (environment, original_transaction_id, own, active_until)
        SELECT r.environment, r.original_transaction_id, (r.data_environment IS NULL OR r.data_environment = r.environment),
            GREATEST(COALESCE(max(r.expires_date), 0), COALESCE(max(s.grace_period_expires_date), 0))
        FROM receipts r LEFT JOIN renewal_states s
            ON s.environment = r.environment AND s.original_transaction_id = r.original_transaction_id
        WHERE r.delivered_at IS NOT NULL AND (r.revoked_at IS NULL OR r.revoked_at <= r.reversed_at)
        GROUP BY r.environment, r.original_transaction_id, 3
        HAVING GREATEST(COALESCE(max(r.expires_date), 0), COALESCE(max(s.grace_period_expires_date), 0)) > 0;
        INSERT INTO dashboard_rollups (environment, figure, bucket, label, currency, count, amount)
        SELECT environment, CASE WHEN own THEN 'expiry' ELSE 'expiry.other' END, active_until / 3600000, '', '',
            count(*), 0
        FROM subscription_chains GROUP BY environment, own, active_until / 3600000
        """

    /// The advisory lock one instance holds while it folds the deltas.
    static let foldLock: Int64 = 0x636F_726F_6C6C
    /// Deltas one fold moves at most.
    static let foldLimit = 50_000
    /// Deltas an instance folds before it vacuums their table itself once the backlog is drained: a burst (a
    /// backfill, a catch-up, a bulk load) leaves that many dead rows, which every dashboard's read of the deltas
    /// and every fold would walk until autovacuum came round (a dashboard took 1.8 s after ten million).
    static let vacuumAfter = 100_000
    /// The advisory lock an instance holds while it vacuums the contributions' table (one at a time).
    static let vacuumLock: Int64 = foldLock + 1
}

extension PostgresStore {
    public func foldRollups() async throws -> Int {
        // Another instance folding now: nothing folded here, and nothing for this instance to count.
        guard let folded = try await foldOnce() else { return 0 }
        // The instance that folded this round also keeps the statistics up with fast growth (two instances analyzing
        // at once skip each other's table: SKIP_LOCKED).
        do {
            try await analyzeGrown()
        } catch {
            logger.warning("a table that grew was not analyzed; autovacuum will: \(error)")
        }
        let due = foldedSinceVacuum.withLock { total in
            total += folded
            guard folded < PostgresRollupTables.foldLimit, total >= PostgresRollupTables.vacuumAfter else {
                return false
            }
            total = 0
            return true
        }
        if due {
            // The fold is done whatever becomes of the vacuum; autovacuum comes round later if this one failed.
            do {
                try await vacuum("dashboard_deltas", lock: PostgresRollupTables.vacuumLock)
            } catch {
                logger.warning("the rollups' contributions were folded but their table was not vacuumed: \(error)")
            }
        }
        return folded
    }

    /// Analyzes every table of the store's schema that holds more than twice the rows PostgreSQL last counted in
    /// it (or 50 rows, never analyzed). A statement's plan kept for any arguments (`plan_cache_mode=auto`) is made
    /// anew only when its tables' statistics change; autovacuum changes them as a table grows, but looks at each
    /// database once a minute, and in the first minute of a new database under load (an import, a launch) plans
    /// made on its empty tables scanned them as they grew: two instances delivered 836/s against 3,200 in a
    /// 20-second benchmark. A table that doubles is analyzed within a fold's interval here, a handful of times in
    /// its life; a table autovacuum or another session is analyzing is skipped.
    func analyzeGrown() async throws {
        let grown = try await all(
            """
            SELECT s.relname::text FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid
            WHERE s.schemaname = current_schema() AND s.n_live_tup >= 50 AND s.n_live_tup > 2 * GREATEST(c.reltuples, 0)
            ORDER BY s.relname
            """, { try $0.decode(String.self) })
        // A name of letters, digits and underscores only, quoted as it is written (a table another application keeps
        // in the same schema, in capitals, is analyzed under its own name).
        for table in grown where table.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" }) {
            _ = try await read { connection in
                try await connection.query(
                    PostgresQuery(unsafeSQL: "ANALYZE (SKIP_LOCKED) \"\(table)\""), logger: self.logger)
            }
        }
    }

    /// Folds up to ``PostgresRollupTables/foldLimit`` contributions; `nil` when another instance is folding.
    private func foldOnce() async throws -> Int? {
        try await write { connection -> Int? in
            guard
                try await Self.first(
                    connection, "SELECT pg_try_advisory_xact_lock(\(PostgresRollupTables.foldLock))",
                    logger: self.logger, { try $0.decode(Bool.self) }) == true
            else { return nil }
            return try await Self.count(
                connection,
                """
                WITH moved AS (
                    DELETE FROM dashboard_deltas WHERE seq IN (
                        SELECT seq FROM dashboard_deltas ORDER BY seq LIMIT \(PostgresRollupTables.foldLimit))
                    RETURNING environment, figure, bucket, label, currency, count, amount
                ), summed AS (
                    SELECT environment, figure, bucket, label, currency, sum(count)::BIGINT AS count,
                        sum(amount)::BIGINT AS amount, count(*) AS n
                    FROM moved GROUP BY environment, figure, bucket, label, currency
                ), written AS (
                    INSERT INTO dashboard_rollups AS t (environment, figure, bucket, label, currency, count, amount)
                    SELECT environment, figure, bucket, label, currency, count, amount FROM summed
                    ORDER BY environment, figure, bucket, label, currency
                    ON CONFLICT (environment, figure, bucket, label, currency)
                    DO UPDATE SET count = t.count + excluded.count, amount = t.amount + excluded.amount
                )
                SELECT COALESCE(sum(n), 0)::BIGINT FROM summed
                """, logger: self.logger)
        }
    }

    /// Rows of `dashboard_rollups` and the deltas not folded yet that match `filter` (on both tables), summed by
    /// key.
    static func rollups(_ connection: PostgresConnection, _ filter: PostgresQuery, logger: Logger) async throws
        -> [DashboardRollup.Row]
    {
        let sql = """
            SELECT figure, bucket, label, currency, sum(count)::BIGINT, sum(amount)::BIGINT FROM (
                SELECT figure, bucket, label, currency, count, amount FROM dashboard_rollups WHERE \(filter.sql)
                UNION ALL
                SELECT figure, bucket, label, currency, count, amount FROM dashboard_deltas WHERE \(filter.sql)
            ) AS r GROUP BY figure, bucket, label, currency
            """
        var rows: [DashboardRollup.Row] = []
        for try await (figure, bucket, label, currency, count, amount) in try await connection.query(
            PostgresQuery(unsafeSQL: sql, binds: filter.binds), logger: logger
        ).decode((String, Int64, String, String, Int64, Int64).self) {
            rows.append(
                DashboardRollup.Row(
                    figure: figure, bucket: bucket, label: label, currency: currency, count: count, amount: amount))
        }
        return rows
    }

    public func dashboard(environment: AppStoreEnvironment, days: Int, now: Date) async throws -> DashboardFigures {
        let start = DashboardFigures.windowStart(days: days, endingAt: now)
        let env = environment.rawValue
        let totals = DashboardRollup.Figure.totals.map(\.rawValue)
        let (firstDay, thisHour) = (DashboardRollup.day(start), DashboardRollup.hour(now))
        return try await readSnapshot { connection in
            // Three reads, each through the key's index: the totals, the window's days, the hours after this one.
            var rows: [DashboardRollup.Row] = []
            for filter: PostgresQuery in [
                "environment = \(env) AND figure = ANY(\(totals)::text[]) AND bucket = 0",
                "environment = \(env) AND figure IN ('purchase.day', 'refund.day') AND bucket >= \(firstDay)",
                "environment = \(env) AND figure IN ('expiry', 'expiry.other') AND bucket > \(thisHour)",
            ] {
                rows += try await Self.rollups(connection, filter, logger: self.logger)
            }
            var endingThisHour = (own: 0, other: 0)
            for try await (own, n) in try await connection.query(
                """
                SELECT own, count(*) FROM subscription_chains
                WHERE environment = \(env) AND own IN (true, false) AND active_until > \(Millis.from(now))
                    AND active_until < \(Millis.from(DashboardRollup.endOfHour(now)))
                GROUP BY own
                """, logger: self.logger
            ).decode((Bool, Int64).self) {
                if own { endingThisHour.own = Int(n) } else { endingThisHour.other = Int(n) }
            }
            return DashboardFigures(rollups: rows, days: days, now: now, endingThisHour: endingThisHour)
        }
    }

    public func notificationCounts(environment: AppStoreEnvironment, since: Date) async throws -> [String: Int] {
        let (firstHour, hourStart) = DashboardRollup.firstWholeHour(from: since)
        let env = environment.rawValue
        return try await read { connection in
            var edge: [String: Int] = [:]
            for try await (type, n) in try await connection.query(
                """
                SELECT type, count(*) FROM notifications WHERE environment = \(env)
                    AND received_at >= \(Millis.from(since)) AND received_at < \(Millis.from(hourStart))
                GROUP BY type
                """, logger: self.logger
            ).decode((String, Int64).self) {
                edge[type] = Int(n)
            }
            let hours = try await Self.rollups(
                connection,
                "environment = \(env) AND figure = 'notifications.hour' AND bucket >= \(firstHour)",
                logger: self.logger)
            return DashboardRollup.notificationCounts(hours: hours, firstHour: firstHour, edge: edge)
        }
    }
}
