import CofferLedgerSQLite
import GRDB

extension SQLiteStore {
    /// The schema, as frozen, named migrations: never edit one that has shipped; add a new one.
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1 users, ledger, receipts, backups, grants, audit") { db in
            try db.execute(
                sql: """
                    CREATE TABLE users (
                        id TEXT PRIMARY KEY NOT NULL,
                        environment TEXT NOT NULL CHECK (environment IN ('Sandbox', 'Production')),
                        support_id TEXT NOT NULL,
                        token_hash TEXT NOT NULL UNIQUE,
                        app_account_token TEXT NOT NULL,
                        created_at INTEGER NOT NULL,
                        UNIQUE (environment, support_id),
                        UNIQUE (environment, app_account_token)
                    );
                    CREATE INDEX users_by_created ON users (environment, created_at);
                    """)
            try db.execute(sql: LedgerTables.v1)
            try db.execute(
                sql: """
                    CREATE TABLE backups (
                        owner TEXT PRIMARY KEY NOT NULL REFERENCES users (id),
                        environment TEXT NOT NULL,
                        value INTEGER NOT NULL,
                        last_updated INTEGER NOT NULL,
                        version INTEGER NOT NULL,
                        writer_kind TEXT NOT NULL,
                        writer_name TEXT NOT NULL
                    );
                    CREATE TABLE grants (
                        id TEXT PRIMARY KEY NOT NULL,
                        environment TEXT NOT NULL,
                        recipient TEXT NOT NULL REFERENCES users (id),
                        credits INTEGER NOT NULL CHECK (credits > 0),
                        reason TEXT NOT NULL,
                        created_by TEXT NOT NULL,
                        created_at INTEGER NOT NULL,
                        claimed_at INTEGER
                    );
                    CREATE INDEX grants_by_environment ON grants (environment, created_at);
                    CREATE INDEX grants_by_recipient ON grants (recipient);
                    CREATE TABLE audit_events (
                        seq INTEGER PRIMARY KEY,
                        id TEXT NOT NULL UNIQUE,
                        environment TEXT NOT NULL,
                        actor TEXT NOT NULL,
                        action TEXT NOT NULL,
                        subject TEXT NOT NULL,
                        before TEXT,
                        after TEXT,
                        at INTEGER NOT NULL
                    );
                    """)
        }
        migrator.registerMigration("v2 notifications, renewal states, cursors") { db in
            try db.execute(
                sql: """
                    CREATE TABLE notifications (
                        seq INTEGER PRIMARY KEY,
                        environment TEXT NOT NULL,
                        uuid TEXT NOT NULL,
                        type TEXT NOT NULL,
                        subtype TEXT,
                        transaction_id TEXT,
                        original_transaction_id TEXT,
                        owner TEXT,
                        signed_date INTEGER NOT NULL,
                        received_at INTEGER NOT NULL,
                        outcome TEXT NOT NULL,
                        source TEXT NOT NULL,
                        UNIQUE (environment, uuid)
                    );
                    CREATE INDEX notifications_by_received ON notifications (environment, received_at);
                    CREATE INDEX notifications_by_transaction ON notifications (environment, transaction_id);
                    CREATE INDEX notifications_by_original ON notifications (environment, original_transaction_id);
                    CREATE TABLE renewal_states (
                        environment TEXT NOT NULL,
                        original_transaction_id TEXT NOT NULL,
                        owner TEXT NOT NULL REFERENCES users (id),
                        auto_renew_product_id TEXT,
                        auto_renews INTEGER NOT NULL,
                        in_billing_retry INTEGER NOT NULL,
                        grace_period_expires_date INTEGER,
                        signed_date INTEGER NOT NULL,
                        PRIMARY KEY (environment, original_transaction_id)
                    ) WITHOUT ROWID;
                    CREATE INDEX renewal_states_by_owner ON renewal_states (owner);
                    CREATE TABLE cursors (
                        environment TEXT NOT NULL,
                        name TEXT NOT NULL,
                        value TEXT NOT NULL,
                        PRIMARY KEY (environment, name)
                    ) WITHOUT ROWID;
                    """)
        }
        migrator.registerMigration("v3 receipts by owner and product") { db in
            try db.execute(sql: "CREATE INDEX receipts_by_owner_product ON receipts (owner, product_id)")
        }
        migrator.registerMigration("v4 admins, sessions, keys, signatures, backup history") { db in
            try db.execute(
                sql: """
                    CREATE TABLE backup_history (
                        seq INTEGER PRIMARY KEY,
                        owner TEXT NOT NULL REFERENCES users (id),
                        environment TEXT NOT NULL,
                        value INTEGER NOT NULL,
                        previous_value INTEGER,
                        last_updated INTEGER NOT NULL,
                        version INTEGER NOT NULL,
                        writer_kind TEXT NOT NULL,
                        writer_name TEXT NOT NULL
                    );
                    CREATE INDEX backup_history_by_owner ON backup_history (owner, seq);
                    CREATE INDEX audit_events_by_subject ON audit_events (environment, subject, seq);
                    CREATE INDEX receipts_by_delivered ON receipts (environment, delivered_at);
                    CREATE INDEX receipts_by_revoked ON receipts (environment, revoked_at);
                    CREATE TABLE admins (
                        id TEXT PRIMARY KEY NOT NULL,
                        name TEXT NOT NULL UNIQUE,
                        password_hash TEXT NOT NULL,
                        created_at INTEGER NOT NULL,
                        password_changed_at INTEGER NOT NULL
                    );
                    CREATE TABLE admin_sessions (
                        token_hash TEXT PRIMARY KEY NOT NULL,
                        admin_id TEXT NOT NULL REFERENCES admins (id),
                        admin_name TEXT NOT NULL,
                        csrf_token TEXT NOT NULL,
                        environment TEXT NOT NULL CHECK (environment IN ('Sandbox', 'Production')),
                        created_at INTEGER NOT NULL,
                        expires_at INTEGER NOT NULL
                    ) WITHOUT ROWID;
                    CREATE TABLE admin_keys (
                        id TEXT PRIMARY KEY NOT NULL,
                        name TEXT NOT NULL,
                        public_key_pem TEXT NOT NULL,
                        created_at INTEGER NOT NULL,
                        revoked_at INTEGER
                    ) WITHOUT ROWID;
                    CREATE TABLE admin_signatures (
                        digest TEXT PRIMARY KEY NOT NULL,
                        seen_at INTEGER NOT NULL
                    ) WITHOUT ROWID;
                    CREATE INDEX admin_signatures_by_seen ON admin_signatures (seen_at);
                    """)
        }
        migrator.registerMigration("v6 data environment of receipts and entries") { db in
            try db.execute(sql: LedgerTables.v2)
        }
        migrator.registerMigration("v7 Apple accounts and device tokens") { db in
            try db.execute(
                sql: """
                    ALTER TABLE users ADD COLUMN app_transaction_id TEXT;
                    ALTER TABLE users ADD COLUMN app_transaction_environment TEXT
                        CHECK (app_transaction_environment IN ('Sandbox', 'Production'));
                    CREATE UNIQUE INDEX users_by_apple_account
                        ON users (environment, app_transaction_environment, app_transaction_id);
                    CREATE TABLE user_tokens (
                        token_hash TEXT PRIMARY KEY NOT NULL,
                        owner TEXT NOT NULL REFERENCES users (id),
                        created_at INTEGER NOT NULL,
                        revoked_at INTEGER
                    ) WITHOUT ROWID;
                    CREATE INDEX user_tokens_by_owner ON user_tokens (owner);
                    """)
        }
        migrator.registerMigration("v8 merged users") { db in
            try db.execute(sql: "ALTER TABLE users ADD COLUMN merged_into TEXT REFERENCES users (id)")
        }
        migrator.registerMigration("v9 backup deficit") { db in
            try db.execute(
                sql: "ALTER TABLE backups ADD COLUMN deficit INTEGER NOT NULL DEFAULT 0 CHECK (deficit >= 0)")
        }
        migrator.registerMigration("v10 push tokens and milestones") { db in
            try db.execute(
                sql: """
                    CREATE TABLE push_tokens (
                        token TEXT PRIMARY KEY NOT NULL,
                        owner TEXT NOT NULL REFERENCES users (id),
                        environment TEXT NOT NULL,
                        gateway TEXT NOT NULL CHECK (gateway IN ('sandbox', 'production')),
                        updated_at INTEGER NOT NULL
                    ) WITHOUT ROWID;
                    CREATE INDEX push_tokens_by_owner ON push_tokens (owner, environment);
                    CREATE TABLE milestones (
                        owner TEXT NOT NULL REFERENCES users (id),
                        name TEXT NOT NULL,
                        reached_at INTEGER NOT NULL,
                        PRIMARY KEY (owner, name)
                    ) WITHOUT ROWID;
                    """)
        }
        // Every delivery writes a receipt: two of its six indexes were dead weight on that write. An owner's receipts
        // are found through (owner, product_id) as well as through (owner); refunds in a window through a partial
        // index of the few receipts refunded (a `revoked_at >= ?` condition implies the index's `IS NOT NULL`).
        migrator.registerMigration("v11 receipts' lighter indexes") { db in
            try db.execute(
                sql: """
                    DROP INDEX receipts_by_owner;
                    DROP INDEX receipts_by_revoked;
                    CREATE INDEX receipts_by_revoked ON receipts (environment, revoked_at) WHERE revoked_at IS NOT NULL;
                    """)
        }
        migrator.registerMigration("v12 grant cancellation, admin time zones") { db in
            try db.execute(
                sql: """
                    ALTER TABLE grants ADD COLUMN cancelled_at INTEGER;
                    ALTER TABLE grants ADD COLUMN cancelled_by TEXT;
                    ALTER TABLE admins ADD COLUMN time_zone TEXT;
                    """)
        }
        migrator.registerMigration("v13 admin roles and two-factor sign-in") { db in
            // Admins from before roles could do everything: they stay owners.
            try db.execute(
                sql: """
                    ALTER TABLE admins ADD COLUMN role TEXT NOT NULL DEFAULT 'owner' CHECK (role IN ('owner', 'support'));
                    ALTER TABLE admins ADD COLUMN grant_limit INTEGER;
                    ALTER TABLE admins ADD COLUMN two_factor_secret TEXT;
                    ALTER TABLE admins ADD COLUMN two_factor_last_step INTEGER;
                    ALTER TABLE admins ADD COLUMN recovery_codes TEXT NOT NULL DEFAULT '';
                    ALTER TABLE admin_sessions ADD COLUMN two_factor_pending INTEGER NOT NULL DEFAULT 0;
                    """)
        }
        migrator.registerMigration("v14 what the customer paid and why Apple refunded") { db in
            try db.execute(sql: LedgerTables.v3)
        }
        migrator.registerMigration("v15 deleted customers, Verify Purchases reports") { db in
            try db.execute(
                sql: """
                    ALTER TABLE users ADD COLUMN deleted_at INTEGER;
                    CREATE TABLE verify_reports (
                        owner TEXT PRIMARY KEY NOT NULL REFERENCES users (id),
                        environment TEXT NOT NULL,
                        reported_at INTEGER NOT NULL,
                        items TEXT NOT NULL
                    ) WITHOUT ROWID;
                    """)
        }
        // The user an import names is made after its record (an import stopped between the two makes it when run
        // again), so no foreign key.
        migrator.registerMigration("v16 customers imported from another system") { db in
            try db.execute(
                sql: """
                    CREATE TABLE imported_customers (
                        environment TEXT NOT NULL,
                        source TEXT NOT NULL,
                        external_id TEXT NOT NULL,
                        user_id TEXT NOT NULL,
                        imported_at INTEGER NOT NULL,
                        claimed_at INTEGER,
                        claim_key_hash TEXT,
                        PRIMARY KEY (environment, source, external_id)
                    ) WITHOUT ROWID;
                    """)
        }
        // The third security round: a claim's token never moves with a merge; an owner can take an admin off.
        migrator.registerMigration("v17 token origins, disabled admins, merge codes, shared failures") { db in
            try db.execute(
                sql: """
                    ALTER TABLE user_tokens ADD COLUMN origin TEXT NOT NULL DEFAULT 'device'
                        CHECK (origin IN ('device', 'claim'));
                    CREATE INDEX imported_customers_by_user ON imported_customers (user_id);
                    UPDATE user_tokens SET origin = 'claim'
                    WHERE owner IN (SELECT user_id FROM imported_customers)
                        AND owner IN (SELECT id FROM users WHERE app_transaction_id IS NULL);
                    ALTER TABLE admins ADD COLUMN disabled_at INTEGER;
                    ALTER TABLE admin_keys ADD COLUMN role TEXT NOT NULL DEFAULT 'owner'
                        CHECK (role IN ('owner', 'support'));
                    ALTER TABLE admin_keys ADD COLUMN grant_limit INTEGER;
                    CREATE TABLE failures (key TEXT NOT NULL, at INTEGER NOT NULL);
                    CREATE INDEX failures_by_key ON failures (key, at);
                    CREATE INDEX failures_by_time ON failures (at);
                    CREATE TABLE merge_codes (
                        owner TEXT PRIMARY KEY NOT NULL REFERENCES users (id),
                        environment TEXT NOT NULL,
                        code_hash TEXT NOT NULL,
                        created_at INTEGER NOT NULL,
                        expires_at INTEGER NOT NULL
                    ) WITHOUT ROWID;
                    """)
        }
        migrator.registerMigration("v18 purchases delivered before Coffer") { db in
            try db.execute(sql: LedgerTables.v4)
        }
        migrator.registerMigration("v19 the mailbox a backup holds") { db in
            try db.execute(sql: "ALTER TABLE backups ADD COLUMN applied TEXT NOT NULL DEFAULT '[]'")
        }
        migrator.registerMigration("v20 Xcode's data marked") { db in
            try db.execute(sql: LedgerTables.v5)
        }
        // "A deleted customer gets nothing new", written once: every query that may give a customer something new
        // reads them from here (`User.isLive` in Swift). SQLite reads the view's columns when it is used; a migration
        // that rebuilds users (a new table, copied, the old dropped, the new renamed) drops the view first and makes it
        // again after.
        migrator.registerMigration("v21 live users") { db in
            try db.execute(sql: "CREATE VIEW live_users AS SELECT * FROM users WHERE deleted_at IS NULL")
        }
        migrator.registerMigration("v22 the refund defence") { db in
            try db.execute(sql: ConsumptionTables.sql)
        }
        migrator.registerMigration("v23 entitlements for a time") { db in
            try db.execute(sql: EntitlementGrantTables.sql)
        }
        migrator.registerMigration("v24 signed webhooks") { db in
            try db.execute(sql: WebhookTables.sql)
        }
        migrator.registerMigration("v25 reconciliation with Apple") { db in
            try db.execute(sql: ReconciliationTables.sql)
        }
        migrator.registerMigration("v26 the dashboard's rollups") { db in
            try db.execute(sql: RollupTables.sql)
            try db.execute(sql: RollupTables.backfill)
        }
        migrator.registerMigration("v27 support's pages through their indexes") { db in
            try db.execute(
                sql: """
                    CREATE INDEX users_by_merged_into ON users (merged_into) WHERE merged_into IS NOT NULL;
                    CREATE INDEX users_by_created_support ON users (environment, created_at, support_id);
                    DROP INDEX users_by_created;
                    CREATE INDEX grants_by_recipient_created ON grants (recipient, environment, created_at, id);
                    DROP INDEX grants_by_recipient;
                    CREATE INDEX grants_by_environment_created ON grants (environment, created_at, id);
                    DROP INDEX grants_by_environment;
                    CREATE INDEX grants_pending ON grants (environment, created_at, id)
                        WHERE claimed_at IS NULL AND cancelled_at IS NULL;
                    CREATE INDEX grants_cancelled ON grants (environment, created_at, id)
                        WHERE claimed_at IS NULL AND cancelled_at IS NOT NULL;
                    CREATE INDEX webhook_deliveries_newest ON webhook_deliveries (environment, seq, endpoint);
                    DROP INDEX webhook_deliveries_by_seq;
                    DROP INDEX webhook_deliveries_pending;
                    CREATE INDEX webhook_deliveries_pending ON webhook_deliveries (environment, seq, endpoint)
                        WHERE state = 'pending';
                    DROP INDEX webhook_deliveries_dead;
                    CREATE INDEX webhook_deliveries_dead ON webhook_deliveries (environment, seq, endpoint) WHERE state = 'dead';
                    CREATE INDEX audit_events_by_environment ON audit_events (environment, seq);
                    """)
        }
        migrator.registerMigration("v28 Sandbox-marked customers kept") { db in
            try db.execute(sql: SandboxMarkTables.sql)
        }
        migrator.registerMigration("v29 several currencies") { db in
            try db.execute(sql: LedgerTables.v6)
        }
        migrator.registerMigration("v30 webhooks in every currency") { db in
            try db.execute(sql: WebhookTables.currencies)
        }
        migrator.registerMigration("v31 grants in a currency") { db in
            try db.execute(sql: "ALTER TABLE grants ADD COLUMN credit_currency TEXT")
        }
        migrator.registerMigration("v32 credits that expire") { db in
            try db.execute(sql: CreditLotTables.sql)
        }
        migrator.registerMigration("v33 deficits per currency on the dashboard") { db in
            try db.execute(sql: RollupTables.currencies)
        }
        migrator.registerMigration("v34 subscription allowances") { db in
            try db.execute(sql: CreditLotTables.allowances)
        }
        migrator.registerMigration("v35 backups in every currency") { db in
            try db.execute(sql: "ALTER TABLE backups ADD COLUMN currencies TEXT")
            try db.execute(sql: "ALTER TABLE backup_history ADD COLUMN currencies TEXT")
        }
        return migrator
    }
}
