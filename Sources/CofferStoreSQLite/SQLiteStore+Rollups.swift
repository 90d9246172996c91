import CofferStore
import Foundation
import GRDB

/// The dashboard's rollups on SQLite (``DashboardRollup``): a table of sums kept by triggers in the transaction of
/// each change to receipts, customers, wallets, grants, milestones, renewal states and notifications, and a table of
/// each subscription's end of access. SQLite has one writer, so the triggers add to the sums in place.
enum RollupTables {
    /// Adds a contribution row set to the sums.
    private static let upsert = """
        ON CONFLICT (environment, figure, bucket, label, currency)
        DO UPDATE SET count = count + excluded.count, amount = amount + excluded.amount
        """
    private static let into =
        "INSERT INTO dashboard_rollups (environment, figure, bucket, label, currency, count, amount)"

    private static let rows = RollupSQL(.sqlite)

    /// Recomputes one subscription's end of access (the latest end of its delivered, standing transactions, or
    /// Apple's grace period), moving it from its old day's expiry bucket to its new one.
    static func refreshChain(environment e: String, original o: String) -> String {
        let own = "(r.data_environment IS NULL OR r.data_environment = r.environment)"
        return """
            \(into) SELECT environment, CASE own WHEN 1 THEN 'expiry' ELSE 'expiry.other' END,
                active_until / 3600000, '', '', -1, 0
            FROM subscription_chains WHERE environment = \(e) AND original_transaction_id = \(o) \(upsert);
            DELETE FROM subscription_chains WHERE environment = \(e) AND original_transaction_id = \(o);
            INSERT INTO subscription_chains (environment, original_transaction_id, own, active_until)
            SELECT r.environment, r.original_transaction_id, \(own) AS own,
                max(COALESCE(max(r.expires_date), 0), COALESCE((SELECT s.grace_period_expires_date FROM renewal_states s
                    WHERE s.environment = r.environment AND s.original_transaction_id = r.original_transaction_id), 0))
                    AS until
            FROM receipts r INDEXED BY receipts_by_original
            WHERE r.environment = \(e) AND r.original_transaction_id = \(o) AND r.delivered_at IS NOT NULL
                AND (r.revoked_at IS NULL OR r.revoked_at <= r.reversed_at)
            GROUP BY own HAVING until > 0;
            \(into) SELECT environment, CASE own WHEN 1 THEN 'expiry' ELSE 'expiry.other' END,
                active_until / 3600000, '', '', 1, 0
            FROM subscription_chains WHERE environment = \(e) AND original_transaction_id = \(o) \(upsert);
            """
    }

    /// A wallet table's three triggers: what a wallet in deficit counts for, added and taken away as it changes.
    private static func walletTriggers(_ name: String, on table: String, _ rows: (String, String) -> String)
        -> String
    {
        """
        CREATE TRIGGER rollup_\(name)_insert AFTER INSERT ON \(table) WHEN NEW.deficit > 0 BEGIN
            \(into) \(rows("NEW", "1")) \(upsert);
        END;
        CREATE TRIGGER rollup_\(name)_update AFTER UPDATE OF deficit, user_id ON \(table)
        WHEN OLD.deficit IS NOT NEW.deficit OR OLD.user_id IS NOT NEW.user_id BEGIN
            \(into) \(rows("OLD", "-1")) UNION ALL \(rows("NEW", "1")) \(upsert);
        END;
        CREATE TRIGGER rollup_\(name)_delete AFTER DELETE ON \(table) WHEN OLD.deficit > 0 BEGIN
            \(into) \(rows("OLD", "-1")) \(upsert);
        END;
        """
    }

    /// Three triggers on `table` that add what a row written counts for and take away what a row gone counted for
    /// (an update does both).
    private static func triggers(
        _ name: String, on table: String, updateOf columns: [String], _ rows: (String, String, String) -> String
    ) -> String {
        """
        CREATE TRIGGER rollup_\(name)_insert AFTER INSERT ON \(table) BEGIN
            \(into) \(rows("NEW", "1", "")) \(upsert);
        END;
        CREATE TRIGGER rollup_\(name)_update AFTER UPDATE OF \(columns.joined(separator: ", ")) ON \(table)
        WHEN \(Self.rows.changed(columns)) BEGIN
            \(into) \(rows("OLD", "-1", "")) UNION ALL \(rows("NEW", "1", "")) \(upsert);
        END;
        CREATE TRIGGER rollup_\(name)_delete AFTER DELETE ON \(table) BEGIN
            \(into) \(rows("OLD", "-1", "")) \(upsert);
        END;
        """
    }

    /// The tables, the triggers and the sums of what is already there (migration v26).
    static let sql = """
        CREATE TABLE dashboard_rollups (
            environment TEXT NOT NULL,
            figure TEXT NOT NULL,
            bucket INTEGER NOT NULL,
            label TEXT NOT NULL,
            currency TEXT NOT NULL,
            count INTEGER NOT NULL,
            amount INTEGER NOT NULL,
            PRIMARY KEY (environment, figure, bucket, label, currency)
        ) WITHOUT ROWID;
        CREATE TABLE subscription_chains (
            environment TEXT NOT NULL,
            original_transaction_id TEXT NOT NULL,
            own INTEGER NOT NULL,
            active_until INTEGER NOT NULL,
            PRIMARY KEY (environment, original_transaction_id, own)
        ) WITHOUT ROWID;
        CREATE INDEX subscription_chains_by_end ON subscription_chains (environment, own, active_until);

        \(triggers("receipt", on: "receipts", updateOf: RollupSQL.receiptColumnNames, rows.receipt))
        CREATE TRIGGER rollup_chain_insert AFTER INSERT ON receipts WHEN NEW.expires_date IS NOT NULL BEGIN
            \(refreshChain(environment: "NEW.environment", original: "NEW.original_transaction_id"))
        END;
        CREATE TRIGGER rollup_chain_update AFTER UPDATE OF \(RollupSQL.receiptColumns) ON receipts
        WHEN (NEW.expires_date IS NOT NULL OR OLD.expires_date IS NOT NULL)
            AND (\(rows.changed(RollupSQL.receiptColumnNames))) BEGIN
            \(refreshChain(environment: "NEW.environment", original: "NEW.original_transaction_id"))
        END;
        CREATE TRIGGER rollup_chain_moved AFTER UPDATE OF original_transaction_id ON receipts
        WHEN OLD.expires_date IS NOT NULL AND OLD.original_transaction_id IS NOT NEW.original_transaction_id BEGIN
            \(refreshChain(environment: "OLD.environment", original: "OLD.original_transaction_id"))
        END;
        CREATE TRIGGER rollup_chain_delete AFTER DELETE ON receipts WHEN OLD.expires_date IS NOT NULL BEGIN
            \(refreshChain(environment: "OLD.environment", original: "OLD.original_transaction_id"))
        END;
        CREATE TRIGGER rollup_renewal_insert AFTER INSERT ON renewal_states BEGIN
            \(refreshChain(environment: "NEW.environment", original: "NEW.original_transaction_id"))
        END;
        CREATE TRIGGER rollup_renewal_update AFTER UPDATE OF grace_period_expires_date ON renewal_states
        WHEN OLD.grace_period_expires_date IS NOT NEW.grace_period_expires_date BEGIN
            \(refreshChain(environment: "NEW.environment", original: "NEW.original_transaction_id"))
        END;
        CREATE TRIGGER rollup_renewal_delete AFTER DELETE ON renewal_states BEGIN
            \(refreshChain(environment: "OLD.environment", original: "OLD.original_transaction_id"))
        END;

        CREATE TRIGGER rollup_user_insert AFTER INSERT ON users BEGIN
            \(into) \(rows.user("NEW", "1")) \(upsert);
        END;
        CREATE TRIGGER rollup_user_update AFTER UPDATE OF app_transaction_environment ON users
        WHEN OLD.app_transaction_environment IS NOT NEW.app_transaction_environment BEGIN
            \(into) \(rows.user("OLD", "-1")) UNION ALL \(rows.user("NEW", "1"))
                UNION ALL \(rows.deficit("OLD", "-1")) UNION ALL \(rows.deficit("NEW", "1")) \(upsert);
        END;
        CREATE TRIGGER rollup_user_delete AFTER DELETE ON users BEGIN
            \(into) \(rows.user("OLD", "-1")) \(upsert);
        END;
        \(walletTriggers("wallet", on: "wallets") { rows.wallet($0, $1) })
        \(triggers("grant", on: "grants", updateOf: ["claimed_at", "cancelled_at"], rows.grant))
        \(triggers("milestone", on: "milestones", updateOf: ["owner", "name"], rows.milestone))
        CREATE TRIGGER rollup_notification_insert AFTER INSERT ON notifications BEGIN
            \(into) \(rows.notification("NEW", "1")) WHERE true \(upsert);
        END;
        CREATE TRIGGER rollup_notification_delete AFTER DELETE ON notifications BEGIN
            \(into) \(rows.notification("OLD", "-1")) WHERE true \(upsert);
        END;
        """

    /// The other currencies' deficits (migration v33): triggers on `currency_wallets`, and on a customer's
    /// AppTransaction moving their deficits in or out of the dashboard's, with the sums of what is already there.
    static let currencies = """
        \(walletTriggers("currency_wallet", on: "currency_wallets") { rows.currencyWallet($0, $1) })
        CREATE TRIGGER rollup_user_update_currencies AFTER UPDATE OF app_transaction_environment ON users
        WHEN OLD.app_transaction_environment IS NOT NEW.app_transaction_environment BEGIN
            \(into) \(rows.currencyDeficit("OLD", "-1")) UNION ALL \(rows.currencyDeficit("NEW", "1")) \(upsert);
        END;
        \(currencyBackfill)
        """

    /// The sums of the other currencies' deficits the database already holds.
    static let currencyBackfill = """
        \(into) WITH c (environment, figure, bucket, label, currency, count, amount) AS (
            \(rows.currencyWallet("x", "1", from: "FROM currency_wallets x"))
        )
        SELECT environment, figure, bucket, label, currency, sum(count), sum(amount) FROM c
        GROUP BY environment, figure, bucket, label, currency;
        """

    /// The sums of what the database already holds, written once when the rollups are made.
    static let backfill = """
        \(into) WITH c (environment, figure, bucket, label, currency, count, amount) AS (
            \(rows.everything)
        )
        SELECT environment, figure, bucket, label, currency, sum(count), sum(amount) FROM c
        GROUP BY environment, figure, bucket, label, currency;
        INSERT INTO subscription_chains (environment, original_transaction_id, own, active_until)
        SELECT r.environment, r.original_transaction_id,
            (r.data_environment IS NULL OR r.data_environment = r.environment) AS own,
            max(COALESCE(max(r.expires_date), 0), COALESCE(s.grace_period_expires_date, 0)) AS until
        FROM receipts r LEFT JOIN renewal_states s
            ON s.environment = r.environment AND s.original_transaction_id = r.original_transaction_id
        WHERE r.delivered_at IS NOT NULL AND (r.revoked_at IS NULL OR r.revoked_at <= r.reversed_at)
        GROUP BY r.environment, r.original_transaction_id, own HAVING until > 0;
        \(into) SELECT environment, CASE own WHEN 1 THEN 'expiry' ELSE 'expiry.other' END, active_until / 3600000,
            '', '', count(*), 0
        FROM subscription_chains GROUP BY environment, own, active_until / 3600000;
        """
}
