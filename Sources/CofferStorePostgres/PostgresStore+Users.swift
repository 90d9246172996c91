// swift-format-ignore-file: AllPublicDeclarationsHaveDocumentation

// The public methods here are the store protocols' requirements, documented there (`CofferStore/Stores`).
import CofferCore
import CofferStore
import Foundation
import Logging
import NIOSSL
import PostgresNIO

extension PostgresStore {
    public func ping() async throws {
        try await read { connection in
            _ = try await connection.query("SELECT 1", logger: self.logger)
        }
    }

    public func createUser(_ user: User) async throws {
        try await write { connection in
            do {
                try await connection.query(
                    """
                    INSERT INTO users (id, environment, support_id, token_hash, app_account_token, created_at,
                        app_transaction_id, app_transaction_environment)
                    VALUES (\(user.id.uuidString), \(user.environment.rawValue), \(user.supportId.rawValue),
                        \(user.tokenHash), \(user.appAccountToken.uuidString), \(Millis.from(user.createdAt)),
                        \(user.appleAccount?.appTransactionId), \(user.appleAccount?.environment.rawValue))
                    """, logger: self.logger)
                try await connection.query(
                    "INSERT INTO wallets (user_id, balance, deficit) VALUES (\(user.id.uuidString), 0, 0)",
                    logger: self.logger)
            } catch let error as PSQLError where error.sqlState == "23505" {
                throw StoreError.alreadyExists("user (\(error.serverInfo?[.message] ?? "unique constraint"))")
            }
        }
    }

    public func user(id: UUID) async throws -> User? {
        try await first("SELECT * FROM users WHERE id = \(id.uuidString)", Rows.user)
    }

    public func user(supportId: SupportID, environment: AppStoreEnvironment) async throws -> User? {
        try await first(
            "SELECT * FROM users WHERE environment = \(environment.rawValue) AND support_id = \(supportId.rawValue)",
            Rows.user)
    }

    public func user(tokenHash: String) async throws -> User? {
        try await prepared(UserByToken(tokenHash: tokenHash)).first
    }

    public func user(appleAccount: AppleAccount, environment: AppStoreEnvironment) async throws -> User? {
        try await first(
            """
            SELECT * FROM users WHERE environment = \(environment.rawValue)
                AND app_transaction_environment = \(appleAccount.environment.rawValue)
                AND app_transaction_id = \(appleAccount.appTransactionId)
            """, Rows.user)
    }

    public func addToken(tokenHash: String, owner: UUID, origin: TokenOrigin, at date: Date) async throws {
        let added = try await write { connection in
            do {
                return try await Self.exists(
                    connection,
                    """
                    INSERT INTO user_tokens (token_hash, owner, created_at, origin)
                    SELECT \(tokenHash), id, \(Millis.from(date)), \(origin.rawValue) FROM live_users
                    WHERE id = \(owner.uuidString) AND merged_into IS NULL AND NOT EXISTS (SELECT 1 FROM users WHERE token_hash = \(tokenHash))
                    RETURNING 1
                    """, logger: self.logger)
            } catch let error as PSQLError where error.sqlState == "23505" {
                throw StoreError.alreadyExists("token")
            }
        }
        guard added else {
            let user = try await user(id: owner)
            throw user?.isOwnCustomer != true
                ? StoreError.notFound("user \(owner)") : StoreError.alreadyExists("token")
        }
    }

    public func revokeOldTokens(owner: UUID, keeping: Int, at date: Date) async throws -> Int {
        let id = owner.uuidString
        return try await write { connection in
            // The first token lives in users: kept as a row here so it is counted and revoked like the others.
            try await connection.query(
                """
                INSERT INTO user_tokens (token_hash, owner, created_at)
                SELECT token_hash, id, created_at FROM live_users u WHERE id = \(id)
                    AND NOT EXISTS (SELECT 1 FROM user_tokens t WHERE t.token_hash = u.token_hash)
                    AND NOT EXISTS (SELECT 1 FROM imported_customers i WHERE i.user_id = \(id))
                ON CONFLICT DO NOTHING
                """, logger: self.logger)
            return try await Self.count(
                connection,
                """
                WITH revoked AS (
                    UPDATE user_tokens SET revoked_at = \(Millis.from(date))
                    WHERE owner = \(id) AND revoked_at IS NULL AND origin = 'device' AND token_hash NOT IN (
                        SELECT token_hash FROM user_tokens WHERE owner = \(id) AND revoked_at IS NULL
                            AND origin = 'device'
                        ORDER BY created_at DESC, token_hash DESC LIMIT \(max(0, keeping)))
                    RETURNING 1)
                SELECT count(*) FROM revoked
                """, logger: self.logger)
        }
    }

    public func tokenCounts(owner: UUID) async throws -> TokenCounts {
        try await read { connection in try await Self.tokenCounts(connection, owner: owner.uuidString, self.logger) }
    }

    static func tokenCounts(_ connection: PostgresConnection, owner: String, _ logger: Logger) async throws
        -> TokenCounts
    {
        try await first(
            connection,
            """
            SELECT
                (SELECT count(*) FROM user_tokens WHERE owner = \(owner) AND revoked_at IS NULL AND origin = 'device')
                + (SELECT count(*) FROM live_users u WHERE u.id = \(owner)
                    AND NOT EXISTS (SELECT 1 FROM user_tokens t WHERE t.token_hash = u.token_hash)
                    AND NOT EXISTS (SELECT 1 FROM imported_customers i WHERE i.user_id = u.id)),
                (SELECT count(*) FROM user_tokens WHERE owner = \(owner) AND revoked_at IS NULL AND origin = 'claim')
            """, logger: logger
        ) { row in
            let (devices, claims) = try row.decode((Int64, Int64).self)
            return TokenCounts(devices: Int(devices), claims: Int(claims))
        } ?? TokenCounts(devices: 0, claims: 0)
    }

    public func revokeToken(tokenHash: String, at date: Date) async throws -> Bool {
        do {
            return try await revokeTokenOnce(tokenHash: tokenHash, at: date)
        } catch let error as StoreError {
            // Two revocations of a first token at once: one inserted the revoked row, the other lost.
            guard try await user(tokenHash: tokenHash) == nil else { throw error }
            return false
        }
    }

    private func revokeTokenOnce(tokenHash: String, at date: Date) async throws -> Bool {
        try await write { connection in
            // A user's first token lives in users; revoking it keeps a revoked row in user_tokens.
            try await Self.exists(
                connection,
                """
                WITH revoked AS (
                    UPDATE user_tokens SET revoked_at = \(Millis.from(date))
                    WHERE token_hash = \(tokenHash) AND revoked_at IS NULL RETURNING 1
                ), initial AS (
                    INSERT INTO user_tokens (token_hash, owner, created_at, revoked_at)
                    SELECT token_hash, id, created_at, \(Millis.from(date)) FROM users WHERE token_hash = \(tokenHash)
                        AND NOT EXISTS (SELECT 1 FROM user_tokens WHERE token_hash = \(tokenHash))
                    RETURNING 1
                )
                SELECT 1 FROM revoked UNION ALL SELECT 1 FROM initial
                """, logger: self.logger)
        }
    }

    public func user(appAccountToken: UUID, environment: AppStoreEnvironment) async throws -> User? {
        let named = try await first(
            """
            SELECT * FROM users WHERE environment = \(environment.rawValue)
            AND app_account_token = \(appAccountToken.uuidString)
            """, Rows.user)
        guard let merged = named?.mergedInto else { return named }
        return try await user(id: merged)
    }

    public func saveMergeCode(_ code: MergeCode) async throws {
        let saved = try await write { connection in
            try await Self.exists(
                connection,
                """
                INSERT INTO merge_codes (owner, environment, code_hash, created_at, expires_at)
                SELECT id, \(code.environment.rawValue), \(code.codeHash), \(Millis.from(code.createdAt)),
                    \(Millis.from(code.expiresAt))
                FROM live_users WHERE id = \(code.owner.uuidString) AND merged_into IS NULL
                ON CONFLICT (owner) DO UPDATE SET code_hash = excluded.code_hash, created_at = excluded.created_at,
                    expires_at = excluded.expires_at
                RETURNING 1
                """, logger: self.logger)
        }
        guard saved else { throw StoreError.notFound("user \(code.owner)") }
    }

    public func useMergeCode(owner: UUID, codeHash: String, at date: Date) async throws -> Bool {
        try await write { connection in
            try await Self.exists(
                connection,
                """
                DELETE FROM merge_codes
                WHERE owner = \(owner.uuidString) AND code_hash = \(codeHash) AND expires_at > \(Millis.from(date))
                RETURNING 1
                """, logger: self.logger)
        }
    }

    public func users(ids: Set<UUID>) async throws -> [User] {
        guard !ids.isEmpty else { return [] }
        return try await all("SELECT * FROM users WHERE id = ANY(\(ids.map(\.uuidString))::text[])", Rows.user)
    }

    public func users(mergedInto user: UUID) async throws -> [User] {
        try await all(
            "SELECT * FROM users WHERE merged_into = \(user.uuidString) ORDER BY created_at, support_id", Rows.user)
    }

    public func mergeUser(
        _ merge: UserMerge, audit events: @escaping @Sendable (UserMergeResult) throws -> [AuditEvent]
    ) async throws -> UserMergeResult {
        try await write { connection in
            let env = merge.environment.rawValue
            let (from, into) = (merge.from.uuidString, merge.into.uuidString)
            // Both wallets locked, in a fixed order so two merges never wait on each other in a cycle; what the
            // plan reads is read after the locks.
            var wallets: [String: Wallet] = [:]
            for try await (id, balance, deficit) in try await connection.query(
                """
                SELECT user_id, balance, deficit FROM wallets WHERE user_id IN (\(from), \(into))
                ORDER BY user_id FOR UPDATE
                """, logger: self.logger
            ).decode((String, Int64, Int64).self) {
                wallets[id] = Wallet(balance: balance, deficit: deficit)
            }
            let user = { (id: String) in
                try await Self.first(connection, "SELECT * FROM users WHERE id = \(id)", logger: self.logger, Rows.user)
            }
            let context = PostgresLedgerContext(connection: connection, logger: self.logger)
            var found = UserMergeState(
                from: try await user(from), into: try await user(into), fromWallet: wallets[from] ?? .empty,
                intoWallet: wallets[into] ?? .empty,
                backup: try await Self.first(
                    connection, "SELECT value FROM backups WHERE owner = \(from)", logger: self.logger
                ) { try $0.decode(Int64.self) },
                tokens: try await Self.tokenCounts(connection, owner: from, self.logger),
                receipts: try await Self.count(
                    connection, "SELECT count(*) FROM receipts WHERE owner = \(from) AND environment = \(env)",
                    logger: self.logger),
                grants: try await Self.count(
                    connection, "SELECT count(*) FROM grants WHERE recipient = \(from)", logger: self.logger))
            found.currencyWallets = (
                try await context.currencyWallets(owner: merge.from),
                try await context.currencyWallets(owner: merge.into)
            )
            found.backupCurrencies = try BackupCurrencies.wallets(
                try await Self.first(
                    connection, "SELECT currencies FROM backups WHERE owner = \(from)", logger: self.logger
                ) { try $0.decode(String?.self) } ?? nil)
            let plan = try merge.plan(found, audit: events)
            let marked = try await Self.exists(
                connection,
                "UPDATE users SET merged_into = \(into) WHERE id = \(from) AND merged_into IS NULL RETURNING 1",
                logger: self.logger)
            guard marked else { throw StoreError.alreadyExists("merge of user \(from)") }
            try await context.save(plan.from, owner: merge.from, environment: merge.environment)
            try await context.save(plan.into, owner: merge.into, environment: merge.environment)
            for (currency, fromDecision, intoDecision) in plan.otherCurrencies {
                try await context.save(
                    fromDecision, owner: merge.from, environment: merge.environment, currency: currency)
                try await context.save(
                    intoDecision, owner: merge.into, environment: merge.environment, currency: currency)
            }
            try await connection.query(
                """
                WITH moved AS (
                    UPDATE currency_receipts SET owner = \(into) WHERE owner = \(from) AND environment = \(env)
                ), lots AS (
                    UPDATE credit_lots SET owner = \(into) WHERE owner = \(from) AND environment = \(env)
                )
                UPDATE receipts SET owner = \(into) WHERE owner = \(from) AND environment = \(env)
                """, logger: self.logger)
            try await connection.query(
                "UPDATE grants SET recipient = \(into) WHERE recipient = \(from)", logger: self.logger)
            try await connection.query(
                "UPDATE entitlement_grants SET recipient = \(into) WHERE recipient = \(from)", logger: self.logger)
            // The merged customer's receipts are the other's now: the next reconciliation checks them there.
            try await connection.query("DELETE FROM discrepancies WHERE owner = \(from)", logger: self.logger)
            try await connection.query(
                "UPDATE renewal_states SET owner = \(into) WHERE owner = \(from)", logger: self.logger)
            let at = Millis.from(merge.at)
            // A claim's tokens end with the merge; they never sign in as the account user. Without the account
            // owner's word the installs' tokens end too. A merged customer is settled: its imported record name
            // claims nothing from now on.
            let ending = !merge.movesTokens
            try await connection.query(
                """
                WITH ended AS (
                    UPDATE user_tokens SET revoked_at = \(at)
                    WHERE owner = \(from) AND revoked_at IS NULL AND (origin = 'claim' OR \(ending))
                )
                UPDATE imported_customers SET claimed_at = COALESCE(claimed_at, \(at)),
                    claim_key_hash = \(ImportedCustomer.mergedKeyHash)
                WHERE user_id = \(from)
                """, logger: self.logger)
            // The merged install's first token: the account user's from now on, or kept revoked (an import's first
            // token was never an install's).
            let firstOwner = merge.movesTokens ? into : from
            let firstRevoked: Int64? = merge.movesTokens ? nil : at
            try await connection.query(
                """
                INSERT INTO user_tokens (token_hash, owner, created_at, revoked_at)
                SELECT token_hash, \(firstOwner), created_at, \(firstRevoked) FROM users WHERE id = \(from)
                    AND NOT EXISTS (SELECT 1 FROM user_tokens t WHERE t.token_hash = users.token_hash)
                    AND NOT EXISTS (SELECT 1 FROM imported_customers i WHERE i.user_id = \(from))
                """, logger: self.logger)
            if merge.movesTokens {
                try await connection.query(
                    "UPDATE user_tokens SET owner = \(into) WHERE owner = \(from) AND origin = 'device'",
                    logger: self.logger)
            }
            try await Self.insertAudit(connection, plan.audit, logger: self.logger)
            return plan.result
        }
    }

    public func deleteUser(
        _ deletion: UserDeletion, audit events: @escaping @Sendable (UserDeletionResult) throws -> [AuditEvent]
    ) async throws -> UserDeletionResult {
        try await write { connection in
            let id = deletion.user.uuidString
            let env = deletion.environment.rawValue
            // The wallet locked first, as every ledger write locks it, so a purchase waits for the deletion; what
            // the plan reads is read after the lock.
            let wallet = try await Self.first(
                connection,
                """
                SELECT w.balance, w.deficit FROM wallets w JOIN users u ON u.id = w.user_id
                WHERE w.user_id = \(id) AND u.environment = \(env) AND u.merged_into IS NULL FOR UPDATE OF w
                """, logger: self.logger
            ) { row in
                let (balance, deficit) = try row.decode((Int64, Int64).self)
                return Wallet(balance: balance, deficit: deficit)
            }
            var merged: [String] = []
            for try await other in try await connection.query(
                "SELECT id FROM users WHERE merged_into = \(id)", logger: self.logger
            ).decode(String.self) {
                merged.append(other)
            }
            let context = PostgresLedgerContext(connection: connection, logger: self.logger)
            var found = UserDeletionState(
                user: try await Self.first(
                    connection, "SELECT * FROM users WHERE id = \(id)", logger: self.logger, Rows.user),
                wallet: wallet, merged: merged.compactMap(UUID.init(uuidString:)),
                pendingGrants: try await Self.count(
                    connection,
                    """
                    SELECT count(*) FROM grants WHERE recipient = ANY(\([id] + merged))
                        AND claimed_at IS NULL AND cancelled_at IS NULL
                    """, logger: self.logger))
            found.currencyWallets = try await context.currencyWallets(owner: deletion.user)
            let plan = try deletion.plan(found, audit: events)
            let ids = plan.owners.map(\.uuidString)
            try await connection.query(
                """
                WITH a AS (DELETE FROM user_tokens WHERE owner = ANY(\(ids))),
                    b AS (DELETE FROM push_tokens WHERE owner = ANY(\(ids))),
                    c AS (DELETE FROM backups WHERE owner = ANY(\(ids))),
                    d AS (DELETE FROM backup_history WHERE owner = ANY(\(ids))),
                    e AS (DELETE FROM merge_codes WHERE owner = ANY(\(ids))),
                    f AS (DELETE FROM consumption_consents WHERE owner = ANY(\(ids))),
                    g AS (DELETE FROM consumption_answers WHERE owner = ANY(\(ids))),
                    h AS (DELETE FROM discrepancies WHERE owner = ANY(\(ids)))
                DELETE FROM verify_reports WHERE owner = ANY(\(ids))
                """, logger: self.logger)
            let at = Millis.from(deletion.at)
            for owner in ids {
                // A token hash no token has, and a fresh appAccountToken Apple never saw: nothing finds the record.
                try await connection.query(
                    """
                    UPDATE users SET token_hash = \("deleted:" + owner), app_account_token = \(UUID().uuidString),
                        app_transaction_id = NULL, app_transaction_environment = NULL, deleted_at = \(at)
                    WHERE id = \(owner)
                    """, logger: self.logger)
            }
            try await connection.query(
                """
                UPDATE grants SET cancelled_at = \(at), cancelled_by = \(deletion.actor)
                WHERE recipient = ANY(\(ids)) AND claimed_at IS NULL AND cancelled_at IS NULL
                """, logger: self.logger)
            try await connection.query(
                "UPDATE grants SET reason = \(UserDeletion.removedReason) WHERE recipient = ANY(\(ids))",
                logger: self.logger)
            try await connection.query(
                """
                UPDATE entitlement_grants SET cancelled_at = \(at), cancelled_by = \(deletion.actor)
                WHERE recipient = ANY(\(ids)) AND cancelled_at IS NULL AND ends_at > \(at)
                """, logger: self.logger)
            try await connection.query(
                "UPDATE entitlement_grants SET reason = \(UserDeletion.removedReason) WHERE recipient = ANY(\(ids))",
                logger: self.logger)
            try await connection.query(
                """
                WITH other AS (
                    UPDATE currency_entries SET reason = \(UserDeletion.removedReason)
                    WHERE owner = ANY(\(ids)) AND reason IS NOT NULL AND kind IN ('grant', 'adjustment')
                )
                UPDATE ledger_entries SET reason = \(UserDeletion.removedReason)
                WHERE owner = ANY(\(ids)) AND reason IS NOT NULL AND kind IN ('grant', 'adjustment')
                """, logger: self.logger)
            // The audit log keeps who did what to the customer, without the reasons support wrote.
            try await connection.query(
                """
                UPDATE audit_events SET
                    before = CASE WHEN before LIKE '{%' AND before::jsonb ? 'reason'
                        THEN (before::jsonb || jsonb_build_object('reason', \(UserDeletion.removedReason)::text))::text
                        ELSE before END,
                    after = CASE WHEN after LIKE '{%' AND after::jsonb ? 'reason'
                        THEN (after::jsonb || jsonb_build_object('reason', \(UserDeletion.removedReason)::text))::text
                        ELSE after END
                WHERE environment = \(env)
                    AND subject IN (SELECT support_id FROM users WHERE id = ANY(\(ids)))
                """, logger: self.logger)
            // The webhooks' outbox keeps the customer's events (still owed to the endpoints), without the reasons.
            let removed = UserDeletion.removedReason
            try await connection.query(
                """
                UPDATE webhook_outbox SET reason = CASE WHEN reason IS NULL THEN NULL ELSE \(removed) END,
                    detail = CASE WHEN detail LIKE '{%' AND detail::jsonb ? 'reason'
                        THEN (detail::jsonb || jsonb_build_object('reason', \(removed)::text))::text ELSE detail END,
                    body = CASE WHEN body LIKE '{%' AND (body::jsonb -> 'data') ? 'reason'
                        THEN jsonb_set(body::jsonb, '{data,reason}', to_jsonb(\(removed)::text))::text ELSE body END
                WHERE environment = \(env) AND source IN ('ledger', 'audit')
                    AND support_id IN (SELECT support_id FROM users WHERE id = ANY(\(ids)))
                """, logger: self.logger)
            // What delivered no credits (a non-consumable, a subscription's access) is Apple's to give again: the
            // customer's next account restores it. What delivered credits, in any currency, stays theirs, never
            // credited twice.
            try await connection.query(
                """
                WITH other AS (
                    DELETE FROM currency_receipts c
                    WHERE owner = ANY(\(ids)) AND delivered_credits = 0 AND revoked_at IS NULL
                        AND NOT EXISTS (SELECT 1 FROM receipts r WHERE r.environment = c.environment
                            AND r.transaction_id = c.transaction_id AND r.delivered_credits > 0)
                        AND NOT EXISTS (SELECT 1 FROM currency_receipts o WHERE o.environment = c.environment
                            AND o.transaction_id = c.transaction_id AND o.delivered_credits > 0)
                )
                DELETE FROM receipts r
                WHERE owner = ANY(\(ids)) AND delivered_credits = 0 AND revoked_at IS NULL
                    AND NOT EXISTS (SELECT 1 FROM currency_receipts o WHERE o.environment = r.environment
                        AND o.transaction_id = r.transaction_id AND o.delivered_credits > 0)
                """, logger: self.logger)
            if let closing = plan.closing {
                try await context.save(closing, owner: deletion.user, environment: deletion.environment)
            }
            for (currency, closing) in plan.closingCurrencies {
                try await context.save(
                    closing, owner: deletion.user, environment: deletion.environment, currency: currency)
            }
            // The closing entries take every wallet to zero: nothing is left to expire.
            try await connection.query(
                "DELETE FROM credit_lots WHERE environment = \(env) AND owner = ANY(\(ids))", logger: self.logger)
            try await Self.insertAudit(connection, plan.audit, logger: self.logger)
            return plan.result
        }
    }

    public func saveVerifyReport(_ report: VerifyReport) async throws {
        try await write { connection in
            try await Self.requireUser(connection, report.owner, report.environment, live: true, logger: self.logger)
            try await connection.query(
                """
                INSERT INTO verify_reports (owner, environment, reported_at, items)
                VALUES (\(report.owner.uuidString), \(report.environment.rawValue), \(Millis.from(report.reportedAt)),
                    \(report.itemsText))
                ON CONFLICT (owner) DO UPDATE SET environment = excluded.environment,
                    reported_at = excluded.reported_at, items = excluded.items
                """, logger: self.logger)
        }
    }

    public func verifyReport(owner: UUID, environment: AppStoreEnvironment) async throws -> VerifyReport? {
        try await first(
            """
            SELECT reported_at, items FROM verify_reports
            WHERE owner = \(owner.uuidString) AND environment = \(environment.rawValue)
            """
        ) { row in
            let (reportedAt, items) = try row.decode((Int64, String).self)
            return VerifyReport(
                owner: owner, environment: environment, reportedAt: Millis.date(reportedAt),
                items: try VerifyReport.items(items))
        }
    }

    public func users(environment: AppStoreEnvironment, supportIdPrefix: String?, limit: Int, offset: Int) async throws
        -> [User]
    {
        let prefix = supportIdPrefix?.lowercased() ?? ""
        // A range in byte order, which the v5 index serves: Support IDs hold only `_`, 0-9 and a-f, so every ID
        // with the prefix sorts below prefix + DEL.
        let end = prefix + "\u{7F}"
        // Everyone, newest first: walked through the creation index, a page at a time.
        guard !["", "_"].contains(prefix) else {
            return try await all(
                """
                SELECT * FROM users WHERE environment = \(environment.rawValue)
                ORDER BY created_at DESC, support_id COLLATE "C" DESC LIMIT \(max(0, limit)) OFFSET \(max(0, offset))
                """, Rows.user)
        }
        return try await all(
            """
            SELECT * FROM users WHERE environment = \(environment.rawValue)
                AND support_id COLLATE "C" >= \(prefix) AND support_id COLLATE "C" < \(end)
            ORDER BY created_at DESC, support_id COLLATE "C" DESC LIMIT \(max(0, limit)) OFFSET \(max(0, offset))
            """, Rows.user)
    }

    public func userCount(environment: AppStoreEnvironment) async throws -> Int {
        try await first("SELECT count(*) FROM users WHERE environment = \(environment.rawValue)") {
            Int(try $0.decode(Int64.self))
        } ?? 0
    }
}
