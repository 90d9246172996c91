import CofferCore
import CofferStore
import Logging
import PostgresNIO

/// The PostgreSQL schema as frozen, named migrations (never edit one that has shipped; add a new one),
/// and the runner that applies them once, in order, recorded in `coffer_migrations`.
enum PostgresMigrations {
    /// Every migration, oldest first. The names match the SQLite store's (v5 is PostgreSQL's own; SQLite has
    /// none).
    static let all: [(name: String, sql: String)] = [
        (
            "v1 users, ledger, receipts, backups, grants, audit",
            """
            CREATE TABLE users (
                id TEXT PRIMARY KEY,
                environment TEXT NOT NULL CHECK (environment IN ('Sandbox', 'Production')),
                support_id TEXT NOT NULL,
                token_hash TEXT NOT NULL UNIQUE,
                app_account_token TEXT NOT NULL,
                created_at BIGINT NOT NULL,
                UNIQUE (environment, support_id),
                UNIQUE (environment, app_account_token)
            );
            CREATE INDEX users_by_created ON users (environment, created_at);
            CREATE TABLE wallets (
                user_id TEXT PRIMARY KEY REFERENCES users (id),
                balance BIGINT NOT NULL CHECK (balance >= 0),
                deficit BIGINT NOT NULL CHECK (deficit >= 0)
            );
            CREATE TABLE receipts (
                environment TEXT NOT NULL,
                transaction_id TEXT NOT NULL,
                owner TEXT NOT NULL REFERENCES users (id),
                original_transaction_id TEXT NOT NULL,
                product_id TEXT NOT NULL,
                quantity BIGINT NOT NULL,
                purchase_date BIGINT NOT NULL,
                expires_date BIGINT,
                revocation_date BIGINT,
                family_shared BOOLEAN NOT NULL,
                trial BOOLEAN NOT NULL,
                upgraded BOOLEAN NOT NULL,
                delivered_credits BIGINT,
                delivered_at BIGINT,
                revoked_at BIGINT,
                taken_from_balance BIGINT NOT NULL,
                added_to_deficit BIGINT NOT NULL,
                reversed_at BIGINT,
                PRIMARY KEY (environment, transaction_id)
            );
            CREATE INDEX receipts_by_owner ON receipts (owner);
            CREATE INDEX receipts_by_original ON receipts (environment, original_transaction_id);
            CREATE TABLE ledger_entries (
                seq BIGSERIAL PRIMARY KEY,
                environment TEXT NOT NULL,
                owner TEXT NOT NULL REFERENCES users (id),
                key TEXT NOT NULL,
                kind TEXT NOT NULL,
                amount BIGINT NOT NULL,
                balance_delta BIGINT NOT NULL,
                deficit_delta BIGINT NOT NULL,
                balance_after BIGINT NOT NULL,
                deficit_after BIGINT NOT NULL,
                transaction_id TEXT,
                product_id TEXT,
                reason TEXT,
                created_at BIGINT NOT NULL,
                UNIQUE (environment, owner, key)
            );
            CREATE TABLE backups (
                owner TEXT PRIMARY KEY REFERENCES users (id),
                environment TEXT NOT NULL,
                value BIGINT NOT NULL,
                last_updated BIGINT NOT NULL,
                version BIGINT NOT NULL,
                writer_kind TEXT NOT NULL,
                writer_name TEXT NOT NULL
            );
            CREATE TABLE grants (
                id TEXT PRIMARY KEY,
                environment TEXT NOT NULL,
                recipient TEXT NOT NULL REFERENCES users (id),
                credits BIGINT NOT NULL CHECK (credits > 0),
                reason TEXT NOT NULL,
                created_by TEXT NOT NULL,
                created_at BIGINT NOT NULL,
                claimed_at BIGINT
            );
            CREATE INDEX grants_by_environment ON grants (environment, created_at);
            CREATE INDEX grants_by_recipient ON grants (recipient);
            CREATE TABLE audit_events (
                seq BIGSERIAL PRIMARY KEY,
                id TEXT NOT NULL UNIQUE,
                environment TEXT NOT NULL,
                actor TEXT NOT NULL,
                action TEXT NOT NULL,
                subject TEXT NOT NULL,
                before TEXT,
                after TEXT,
                at BIGINT NOT NULL
            );
            """
        ),
        (
            "v2 notifications, renewal states, cursors",
            """
            CREATE TABLE notifications (
                seq BIGSERIAL PRIMARY KEY,
                environment TEXT NOT NULL,
                uuid TEXT NOT NULL,
                type TEXT NOT NULL,
                subtype TEXT,
                transaction_id TEXT,
                original_transaction_id TEXT,
                owner TEXT,
                signed_date BIGINT NOT NULL,
                received_at BIGINT NOT NULL,
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
                auto_renews BOOLEAN NOT NULL,
                in_billing_retry BOOLEAN NOT NULL,
                grace_period_expires_date BIGINT,
                signed_date BIGINT NOT NULL,
                PRIMARY KEY (environment, original_transaction_id)
            );
            CREATE INDEX renewal_states_by_owner ON renewal_states (owner);
            CREATE TABLE cursors (
                environment TEXT NOT NULL,
                name TEXT NOT NULL,
                value TEXT NOT NULL,
                PRIMARY KEY (environment, name)
            );
            """
        ),
        (
            "v3 receipts by owner and product",
            "CREATE INDEX receipts_by_owner_product ON receipts (owner, product_id)"
        ),
        (
            "v4 admins, sessions, keys, signatures, backup history",
            """
            CREATE TABLE backup_history (
                seq BIGSERIAL PRIMARY KEY,
                owner TEXT NOT NULL REFERENCES users (id),
                environment TEXT NOT NULL,
                value BIGINT NOT NULL,
                previous_value BIGINT,
                last_updated BIGINT NOT NULL,
                version BIGINT NOT NULL,
                writer_kind TEXT NOT NULL,
                writer_name TEXT NOT NULL
            );
            CREATE INDEX backup_history_by_owner ON backup_history (owner, seq);
            CREATE INDEX audit_events_by_subject ON audit_events (environment, subject, seq);
            CREATE INDEX receipts_by_delivered ON receipts (environment, delivered_at);
            CREATE INDEX receipts_by_revoked ON receipts (environment, revoked_at);
            CREATE TABLE admins (
                id TEXT PRIMARY KEY,
                name TEXT NOT NULL UNIQUE,
                password_hash TEXT NOT NULL,
                created_at BIGINT NOT NULL,
                password_changed_at BIGINT NOT NULL
            );
            CREATE TABLE admin_sessions (
                token_hash TEXT PRIMARY KEY,
                admin_id TEXT NOT NULL REFERENCES admins (id),
                admin_name TEXT NOT NULL,
                csrf_token TEXT NOT NULL,
                environment TEXT NOT NULL CHECK (environment IN ('Sandbox', 'Production')),
                created_at BIGINT NOT NULL,
                expires_at BIGINT NOT NULL
            );
            CREATE TABLE admin_keys (
                id TEXT PRIMARY KEY,
                name TEXT NOT NULL,
                public_key_pem TEXT NOT NULL,
                created_at BIGINT NOT NULL,
                revoked_at BIGINT
            );
            CREATE TABLE admin_signatures (
                digest TEXT PRIMARY KEY,
                seen_at BIGINT NOT NULL
            );
            CREATE INDEX admin_signatures_by_seen ON admin_signatures (seen_at);
            """
        ),
        (
            // PostgreSQL's own: support's Support ID prefix search as an index range. The unique index of v1
            // uses the database's collation, which a range of bytes cannot use (SQLite's compares bytes).
            "v5 users by Support ID in byte order",
            "CREATE INDEX users_by_support_id ON users (environment, support_id COLLATE \"C\")"
        ),
        (
            // The environment Apple's data named: Sandbox on a Production server marks App Review and TestFlight.
            "v6 data environment of receipts and entries",
            """
            ALTER TABLE receipts ADD COLUMN data_environment TEXT
                CHECK (data_environment IN ('Sandbox', 'Production'));
            ALTER TABLE ledger_entries ADD COLUMN data_environment TEXT
                CHECK (data_environment IN ('Sandbox', 'Production'));
            UPDATE receipts SET data_environment = environment
            """
        ),
        (
            "v7 Apple accounts and device tokens",
            """
            ALTER TABLE users ADD COLUMN app_transaction_id TEXT;
            ALTER TABLE users ADD COLUMN app_transaction_environment TEXT
                CHECK (app_transaction_environment IN ('Sandbox', 'Production'));
            CREATE UNIQUE INDEX users_by_apple_account
                ON users (environment, app_transaction_environment, app_transaction_id);
            CREATE TABLE user_tokens (
                token_hash TEXT PRIMARY KEY,
                owner TEXT NOT NULL REFERENCES users (id),
                created_at BIGINT NOT NULL,
                revoked_at BIGINT
            );
            CREATE INDEX user_tokens_by_owner ON user_tokens (owner)
            """
        ),
        ("v8 merged users", "ALTER TABLE users ADD COLUMN merged_into TEXT REFERENCES users (id)"),
        ("v9 backup deficit", "ALTER TABLE backups ADD COLUMN deficit BIGINT NOT NULL DEFAULT 0 CHECK (deficit >= 0)"),
        (
            "v10 push tokens and milestones",
            """
            CREATE TABLE push_tokens (
                token TEXT PRIMARY KEY,
                owner TEXT NOT NULL REFERENCES users (id),
                environment TEXT NOT NULL,
                gateway TEXT NOT NULL CHECK (gateway IN ('sandbox', 'production')),
                updated_at BIGINT NOT NULL
            );
            CREATE INDEX push_tokens_by_owner ON push_tokens (owner, environment);
            CREATE TABLE milestones (
                owner TEXT NOT NULL REFERENCES users (id),
                name TEXT NOT NULL,
                reached_at BIGINT NOT NULL,
                PRIMARY KEY (owner, name)
            )
            """
        ),
        // As SQLite's v11: an owner's receipts are found through (owner, product_id); refunds in a window through a
        // partial index of the receipts refunded.
        (
            "v11 receipts' lighter indexes",
            """
            DROP INDEX receipts_by_owner;
            DROP INDEX receipts_by_revoked;
            CREATE INDEX receipts_by_revoked ON receipts (environment, revoked_at) WHERE revoked_at IS NOT NULL
            """
        ),
        (
            "v12 grant cancellation, admin time zones",
            """
            ALTER TABLE grants ADD COLUMN cancelled_at BIGINT;
            ALTER TABLE grants ADD COLUMN cancelled_by TEXT;
            ALTER TABLE admins ADD COLUMN time_zone TEXT
            """
        ),
        (
            "v13 admin roles and two-factor sign-in",
            """
            ALTER TABLE admins ADD COLUMN role TEXT NOT NULL DEFAULT 'owner' CHECK (role IN ('owner', 'support'));
            ALTER TABLE admins ADD COLUMN grant_limit BIGINT;
            ALTER TABLE admins ADD COLUMN two_factor_secret TEXT;
            ALTER TABLE admins ADD COLUMN two_factor_last_step BIGINT;
            ALTER TABLE admins ADD COLUMN recovery_codes TEXT NOT NULL DEFAULT '';
            ALTER TABLE admin_sessions ADD COLUMN two_factor_pending BOOLEAN NOT NULL DEFAULT false
            """
        ),
        (
            "v14 what the customer paid and why Apple refunded",
            """
            ALTER TABLE receipts ADD COLUMN price BIGINT;
            ALTER TABLE receipts ADD COLUMN currency TEXT;
            ALTER TABLE receipts ADD COLUMN storefront TEXT;
            ALTER TABLE receipts ADD COLUMN revocation_reason BIGINT
            """
        ),
        (
            "v15 deleted customers, Verify Purchases reports",
            """
            ALTER TABLE users ADD COLUMN deleted_at BIGINT;
            CREATE TABLE verify_reports (
                owner TEXT PRIMARY KEY REFERENCES users (id),
                environment TEXT NOT NULL,
                reported_at BIGINT NOT NULL,
                items TEXT NOT NULL
            )
            """
        ),
        (
            "v16 customers imported from another system",
            """
            CREATE TABLE imported_customers (
                environment TEXT NOT NULL,
                source TEXT NOT NULL,
                external_id TEXT NOT NULL,
                user_id TEXT NOT NULL,
                imported_at BIGINT NOT NULL,
                claimed_at BIGINT,
                claim_key_hash TEXT,
                PRIMARY KEY (environment, source, external_id)
            )
            """
        ),
        (
            "v17 token origins, disabled admins, merge codes, shared failures",
            """
            ALTER TABLE user_tokens ADD COLUMN origin TEXT NOT NULL DEFAULT 'device'
                CHECK (origin IN ('device', 'claim'));
            CREATE INDEX imported_customers_by_user ON imported_customers (user_id);
            UPDATE user_tokens SET origin = 'claim'
            WHERE owner IN (SELECT user_id FROM imported_customers)
                AND owner IN (SELECT id FROM users WHERE app_transaction_id IS NULL);
            ALTER TABLE admins ADD COLUMN disabled_at BIGINT;
            ALTER TABLE admin_keys ADD COLUMN role TEXT NOT NULL DEFAULT 'owner' CHECK (role IN ('owner', 'support'));
            ALTER TABLE admin_keys ADD COLUMN grant_limit BIGINT;
            CREATE TABLE failures (key TEXT NOT NULL, at BIGINT NOT NULL);
            CREATE INDEX failures_by_key ON failures (key, at);
            CREATE INDEX failures_by_time ON failures (at);
            CREATE TABLE merge_codes (
                owner TEXT PRIMARY KEY REFERENCES users (id),
                environment TEXT NOT NULL,
                code_hash TEXT NOT NULL,
                created_at BIGINT NOT NULL,
                expires_at BIGINT NOT NULL
            )
            """
        ),
        (
            "v18 purchases delivered before Coffer",
            "ALTER TABLE receipts ADD COLUMN delivered_before_coffer BOOLEAN NOT NULL DEFAULT false"
        ),
        ("v19 the mailbox a backup holds", "ALTER TABLE backups ADD COLUMN applied TEXT NOT NULL DEFAULT '[]'"),
        (
            "v20 Xcode's data marked",
            """
            ALTER TABLE receipts ADD COLUMN signed_by_xcode BOOLEAN NOT NULL DEFAULT false;
            ALTER TABLE ledger_entries ADD COLUMN signed_by_xcode BOOLEAN NOT NULL DEFAULT false
            """
        ),
        // "A deleted customer gets nothing new", written once: every query that may give a customer something new
        // reads them from here (`User.isLive` in Swift). PostgreSQL fixes a view's columns when it is made: a
        // migration that adds a column to users makes the view again (CREATE OR REPLACE VIEW).
        ("v21 live users", "CREATE VIEW live_users AS SELECT * FROM users WHERE deleted_at IS NULL"),
        (
            "v22 the refund defence",
            """
            CREATE TABLE consumption_consents (
                owner TEXT PRIMARY KEY REFERENCES users (id),
                environment TEXT NOT NULL,
                consented BOOLEAN NOT NULL,
                at BIGINT NOT NULL
            );
            CREATE TABLE consumption_answers (
                environment TEXT NOT NULL,
                notification_uuid TEXT NOT NULL,
                owner TEXT NOT NULL REFERENCES users (id),
                transaction_id TEXT NOT NULL,
                requested_at BIGINT NOT NULL,
                answered_at BIGINT NOT NULL,
                sent BOOLEAN NOT NULL,
                body TEXT,
                reason TEXT NOT NULL,
                PRIMARY KEY (environment, notification_uuid)
            );
            CREATE INDEX consumption_answers_by_owner ON consumption_answers (owner, environment, requested_at)
            """
        ),
        (
            "v23 entitlements for a time",
            """
            CREATE TABLE entitlement_grants (
                id TEXT PRIMARY KEY,
                environment TEXT NOT NULL,
                recipient TEXT NOT NULL REFERENCES users (id),
                entitlement TEXT NOT NULL,
                starts_at BIGINT NOT NULL,
                ends_at BIGINT NOT NULL,
                reason TEXT NOT NULL,
                created_by TEXT NOT NULL,
                cancelled_at BIGINT,
                cancelled_by TEXT
            );
            CREATE INDEX entitlement_grants_by_recipient ON entitlement_grants (recipient, environment, starts_at)
            """
        ),
        ("v24 signed webhooks", PostgresWebhookTables.sql),
        (
            "v25 reconciliation with Apple",
            """
            CREATE TABLE discrepancies (
                environment TEXT NOT NULL,
                owner TEXT NOT NULL REFERENCES users (id),
                transaction_id TEXT NOT NULL,
                kind TEXT NOT NULL,
                product_id TEXT NOT NULL,
                detail TEXT NOT NULL,
                found_at BIGINT NOT NULL,
                repaired_at BIGINT,
                PRIMARY KEY (environment, owner, transaction_id, kind)
            );
            CREATE INDEX receipts_by_environment_owner ON receipts (environment, owner)
            """
        ),
        ("v26 the dashboard's rollups", PostgresRollupTables.sql),
        (
            "v27 support's pages through their indexes",
            """
            CREATE INDEX users_by_merged_into ON users (merged_into) WHERE merged_into IS NOT NULL;
            CREATE INDEX users_by_created_support ON users (environment, created_at, support_id COLLATE "C");
            DROP INDEX users_by_created;
            CREATE INDEX grants_by_recipient_created ON grants (recipient, environment, created_at, id COLLATE "C");
            DROP INDEX grants_by_recipient;
            CREATE INDEX grants_by_environment_created ON grants (environment, created_at, id COLLATE "C");
            DROP INDEX grants_by_environment;
            CREATE INDEX grants_pending ON grants (environment, created_at, id COLLATE "C")
                WHERE claimed_at IS NULL AND cancelled_at IS NULL;
            CREATE INDEX grants_cancelled ON grants (environment, created_at, id COLLATE "C")
                WHERE claimed_at IS NULL AND cancelled_at IS NOT NULL;
            CREATE INDEX webhook_deliveries_newest ON webhook_deliveries (environment, seq, endpoint);
            DROP INDEX webhook_deliveries_by_seq;
            DROP INDEX webhook_deliveries_pending;
            CREATE INDEX webhook_deliveries_pending ON webhook_deliveries (environment, seq, endpoint)
                WHERE state = 'pending';
            DROP INDEX webhook_deliveries_dead;
            CREATE INDEX webhook_deliveries_dead ON webhook_deliveries (environment, seq, endpoint) WHERE state = 'dead';
            CREATE INDEX audit_events_by_environment ON audit_events (environment, seq)
            """
        ),
        ("v28 Sandbox-marked customers kept", PostgresSandboxMarkTables.sql),
        (
            // The newest notification (the dashboard's Apple card) in the index's order: by arrival alone, every
            // notification that arrived in the same millisecond was sorted by seq first (120 ms at three million).
            // SQLite's index ends with the rowid, which is seq, already.
            "v29 notifications newest first",
            """
            CREATE INDEX notifications_by_received_seq ON notifications (environment, received_at, seq);
            DROP INDEX notifications_by_received
            """
        ),
        ("v30 the receipts' Sandbox mark trigger by operation", PostgresSandboxMarkTables.receiptFunction),
        ("v31 several currencies", PostgresCurrencyTables.sql),
        ("v32 webhooks in every currency", PostgresWebhookTables.currencies),
        ("v33 grants in a currency", "ALTER TABLE grants ADD COLUMN credit_currency TEXT"),
        ("v34 credits that expire", PostgresCreditLotTables.sql),
        ("v35 deficits per currency on the dashboard", PostgresRollupTables.currencies),
        ("v36 subscription allowances", PostgresCreditLotTables.allowances),
        (
            "v37 backups in every currency",
            """
            ALTER TABLE backups ADD COLUMN currencies TEXT;
            ALTER TABLE backup_history ADD COLUMN currencies TEXT
            """
        ),
    ]

    /// An arbitrary, fixed key for the advisory lock that serializes migration runs.
    static let lockKey: Int64 = 0x636F_6666_6572

    /// Applies the migrations not yet applied, each in its own transaction, under an advisory lock.
    static func migrate(_ client: PostgresClient, logger: Logger) async throws {
        do {
            try await client.withConnection { connection in
                // A migration may take long on a large database, and another instance may wait for it behind
                // the lock: no statement limit while migrating.
                try await connection.query("SET statement_timeout = 0", logger: logger)
                try await connection.query("SELECT pg_advisory_lock(\(lockKey))", logger: logger)
                do {
                    try await connection.query(
                        """
                        CREATE TABLE IF NOT EXISTS coffer_migrations (
                            name TEXT PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())
                        """, logger: logger)
                    let done = Set(try await applied(connection, logger: logger))
                    for migration in all where !done.contains(migration.name) {
                        try await connection.query("BEGIN", logger: logger)
                        do {
                            // A migration is several statements, run one by one (none holds a ";" in a string;
                            // a function's body between `$$` is one statement).
                            for statement in statements(migration.sql) where !statement.allSatisfy(\.isWhitespace) {
                                try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                            }
                            try await connection.query(
                                "INSERT INTO coffer_migrations (name) VALUES (\(migration.name))", logger: logger)
                            try await connection.query("COMMIT", logger: logger)
                        } catch {
                            _ = try? await connection.query("ROLLBACK", logger: logger)
                            throw error
                        }
                        logger.info("applied migration \(migration.name)")
                    }
                    try await checkLiveUsers(connection, logger: logger)
                } catch {
                    _ = try? await connection.query("SELECT pg_advisory_unlock(\(lockKey))", logger: logger)
                    _ = try? await connection.query("RESET statement_timeout", logger: logger)
                    throw error
                }
                try await connection.query("SELECT pg_advisory_unlock(\(lockKey))", logger: logger)
                try await connection.query("RESET statement_timeout", logger: logger)
            }
        } catch let error as PSQLError {
            throw StoreError.storage("migration failed: \(PostgresStore.describe(error))")
        }
    }

    /// PostgreSQL fixes a view's columns when it is made: `live_users` must still hold every column of `users`, or
    /// reading a user through it would miss one on this engine only. A migration that adds a column to `users` makes
    /// the view again (`CREATE OR REPLACE VIEW`); one that forgets fails here, in every PostgreSQL test.
    static func checkLiveUsers(_ connection: PostgresConnection, logger: Logger) async throws {
        let rows = try await connection.query(
            """
            SELECT count(*) FROM information_schema.columns u
            WHERE u.table_schema = current_schema() AND u.table_name = 'users' AND NOT EXISTS (
                SELECT 1 FROM information_schema.columns v WHERE v.table_schema = current_schema()
                    AND v.table_name = 'live_users' AND v.column_name = u.column_name)
            """, logger: logger)
        var missing: Int64 = 0
        for try await value in rows.decode(Int64.self) { missing = value }
        guard missing == 0 else {
            throw StoreError.storage(
                "the live_users view lacks \(missing) column(s) of users: the migration that added them must make "
                    + "the view again (CREATE OR REPLACE VIEW)")
        }
    }

    /// A migration's statements: split at each `;` outside a `$$`-quoted function body.
    static func statements(_ sql: String) -> [String] {
        var statements: [String] = []
        for (index, part) in sql.components(separatedBy: "$$").enumerated() {
            // Even parts are outside a body; an odd one is a body, kept whole with its quotes.
            if index % 2 == 1 {
                statements[statements.count - 1] += "$$" + part + "$$"
                continue
            }
            let pieces = part.split(separator: ";", omittingEmptySubsequences: false).map(String.init)
            if index > 0, let first = pieces.first {
                statements[statements.count - 1] += first
                statements += pieces.dropFirst()
            } else {
                statements += pieces
            }
        }
        return statements
    }

    /// The applied migrations' names, oldest first.
    static func applied(_ connection: PostgresConnection, logger: Logger) async throws -> [String] {
        var names: [String] = []
        let rows = try await connection.query(
            "SELECT name FROM coffer_migrations ORDER BY applied_at, name", logger: logger)
        for try await name in rows.decode(String.self) { names.append(name) }
        return names
    }
}
