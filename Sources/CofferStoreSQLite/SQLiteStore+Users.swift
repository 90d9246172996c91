// swift-format-ignore-file: AllPublicDeclarationsHaveDocumentation

// The public methods here are the store protocols' requirements, documented there (`CofferStore/Stores`).
import CofferCore
import CofferLedgerSQLite
import CofferStore
import Foundation
import GRDB

extension SQLiteStore {
    /// Whether a user exists and is live (``User/isLive``, the `live_users` view).
    static func isLive(_ db: Database, _ id: UUID) throws -> Bool {
        try Bool.fetchOne(
            db, cached: "SELECT EXISTS (SELECT 1 FROM live_users WHERE id = ?)", arguments: [id.uuidString]) == true
    }

    /// Whether a user exists and a token or a code may name it (``User/isOwnCustomer``).
    static func isOwnCustomer(_ db: Database, _ id: UUID) throws -> Bool {
        try Bool.fetchOne(
            db, cached: "SELECT EXISTS (SELECT 1 FROM live_users WHERE id = ? AND merged_into IS NULL)",
            arguments: [id.uuidString]) == true
    }

    public func ping() async throws {
        _ = try await read { db in try Int.fetchOne(db, cached: "SELECT 1") }
    }

    public func createUser(_ user: User) async throws {
        try await write { db in
            do {
                try db.execute(
                    cached: """
                        INSERT INTO users (id, environment, support_id, token_hash, app_account_token, created_at,
                            app_transaction_id, app_transaction_environment)
                        VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                        """,
                    arguments: [
                        user.id.uuidString, user.environment.rawValue, user.supportId.rawValue, user.tokenHash,
                        user.appAccountToken.uuidString, Millis.from(user.createdAt),
                        user.appleAccount?.appTransactionId, user.appleAccount?.environment.rawValue,
                    ])
                try db.execute(
                    cached: "INSERT INTO wallets (user_id, balance, deficit) VALUES (?, 0, 0)",
                    arguments: [user.id.uuidString])
            } catch let error as DatabaseError where error.resultCode == .SQLITE_CONSTRAINT {
                throw StoreError.alreadyExists("user (\(error.message ?? "unique constraint"))")
            }
        }
    }

    public func user(id: UUID) async throws -> User? {
        try await one("SELECT * FROM users WHERE id = ?", [id.uuidString], Self.user)
    }

    public func user(supportId: SupportID, environment: AppStoreEnvironment) async throws -> User? {
        try await one(
            "SELECT * FROM users WHERE environment = ? AND support_id = ?", [environment.rawValue, supportId.rawValue],
            Self.user)
    }

    public func user(tokenHash: String) async throws -> User? {
        try await one(
            """
            SELECT u.* FROM user_tokens t JOIN live_users u ON u.id = t.owner
            WHERE t.token_hash = ?1 AND t.revoked_at IS NULL AND u.merged_into IS NULL
            UNION ALL
            SELECT * FROM live_users WHERE token_hash = ?1 AND merged_into IS NULL
                AND NOT EXISTS (SELECT 1 FROM user_tokens WHERE token_hash = ?1)
            LIMIT 1
            """, [tokenHash], Self.user)
    }

    public func user(appleAccount: AppleAccount, environment: AppStoreEnvironment) async throws -> User? {
        try await one(
            """
            SELECT * FROM users WHERE environment = ? AND app_transaction_environment = ? AND app_transaction_id = ?
            """, [environment.rawValue, appleAccount.environment.rawValue, appleAccount.appTransactionId], Self.user)
    }

    public func addToken(tokenHash: String, owner: UUID, origin: TokenOrigin, at date: Date) async throws {
        try await write { db in
            guard try Self.isOwnCustomer(db, owner) else { throw StoreError.notFound("user \(owner)") }
            let taken = try Bool.fetchOne(
                db, cached: "SELECT EXISTS (SELECT 1 FROM users WHERE token_hash = ?)", arguments: [tokenHash])
            do {
                guard taken != true else { throw StoreError.alreadyExists("token") }
                try db.execute(
                    cached: "INSERT INTO user_tokens (token_hash, owner, created_at, origin) VALUES (?, ?, ?, ?)",
                    arguments: [tokenHash, owner.uuidString, Millis.from(date), origin.rawValue])
            } catch let error as DatabaseError where error.resultCode == .SQLITE_CONSTRAINT {
                throw StoreError.alreadyExists("token")
            }
        }
    }

    public func revokeOldTokens(owner: UUID, keeping: Int, at date: Date) async throws -> Int {
        try await write { db in
            // The first token lives in users: kept as a row here so it is counted and revoked like the others.
            try db.execute(
                cached: """
                    INSERT INTO user_tokens (token_hash, owner, created_at)
                    SELECT token_hash, id, created_at FROM live_users u WHERE id = ?1
                        AND NOT EXISTS (SELECT 1 FROM user_tokens t WHERE t.token_hash = u.token_hash)
                        AND NOT EXISTS (SELECT 1 FROM imported_customers i WHERE i.user_id = ?1)
                    """, arguments: [owner.uuidString])
            try db.execute(
                cached: """
                    UPDATE user_tokens SET revoked_at = ?1
                    WHERE owner = ?2 AND revoked_at IS NULL AND origin = 'device' AND token_hash NOT IN (
                        SELECT token_hash FROM user_tokens WHERE owner = ?2 AND revoked_at IS NULL AND origin = 'device'
                        ORDER BY created_at DESC, token_hash DESC LIMIT ?3)
                    """, arguments: [Millis.from(date), owner.uuidString, max(0, keeping)])
            return db.changesCount
        }
    }

    public func tokenCounts(owner: UUID) async throws -> TokenCounts {
        try await read { db in try Self.tokenCounts(db, owner: owner.uuidString) }
    }

    static func tokenCounts(_ db: Database, owner: String) throws -> TokenCounts {
        let row = try Row.fetchOne(
            db,
            cached: """
                SELECT
                    (SELECT COUNT(*) FROM user_tokens WHERE owner = ?1 AND revoked_at IS NULL AND origin = 'device')
                    + (SELECT COUNT(*) FROM live_users u WHERE u.id = ?1
                        AND NOT EXISTS (SELECT 1 FROM user_tokens t WHERE t.token_hash = u.token_hash)
                        AND NOT EXISTS (SELECT 1 FROM imported_customers i WHERE i.user_id = u.id)) AS devices,
                    (SELECT COUNT(*) FROM user_tokens WHERE owner = ?1 AND revoked_at IS NULL AND origin = 'claim')
                        AS claims
                """, arguments: [owner])
        return TokenCounts(devices: row?["devices"] ?? 0, claims: row?["claims"] ?? 0)
    }

    public func revokeToken(tokenHash: String, at date: Date) async throws -> Bool {
        try await write { db in
            try db.execute(
                cached: "UPDATE user_tokens SET revoked_at = ? WHERE token_hash = ? AND revoked_at IS NULL",
                arguments: [Millis.from(date), tokenHash])
            if db.changesCount > 0 { return true }
            // A user's first token lives in users; revoking it keeps a revoked row here.
            try db.execute(
                cached: """
                    INSERT INTO user_tokens (token_hash, owner, created_at, revoked_at)
                    SELECT token_hash, id, created_at, ?1 FROM users WHERE token_hash = ?2
                        AND NOT EXISTS (SELECT 1 FROM user_tokens WHERE token_hash = ?2)
                    """, arguments: [Millis.from(date), tokenHash])
            return db.changesCount > 0
        }
    }

    public func user(appAccountToken: UUID, environment: AppStoreEnvironment) async throws -> User? {
        let named = try await one(
            "SELECT * FROM users WHERE environment = ? AND app_account_token = ?",
            [environment.rawValue, appAccountToken.uuidString], Self.user)
        guard let merged = named?.mergedInto else { return named }
        return try await user(id: merged)
    }

    public func saveMergeCode(_ code: MergeCode) async throws {
        try await write { db in
            guard try Self.isOwnCustomer(db, code.owner) else { throw StoreError.notFound("user \(code.owner)") }
            try db.execute(
                cached: """
                    INSERT INTO merge_codes (owner, environment, code_hash, created_at, expires_at) VALUES (?, ?, ?, ?, ?)
                    ON CONFLICT (owner) DO UPDATE SET code_hash = excluded.code_hash, created_at = excluded.created_at,
                        expires_at = excluded.expires_at
                    """,
                arguments: [
                    code.owner.uuidString, code.environment.rawValue, code.codeHash, Millis.from(code.createdAt),
                    Millis.from(code.expiresAt),
                ])
        }
    }

    public func useMergeCode(owner: UUID, codeHash: String, at date: Date) async throws -> Bool {
        try await write { db in
            try db.execute(
                cached: "DELETE FROM merge_codes WHERE owner = ? AND code_hash = ? AND expires_at > ?",
                arguments: [owner.uuidString, codeHash, Millis.from(date)])
            return db.changesCount == 1
        }
    }

    public func users(ids: Set<UUID>) async throws -> [User] {
        guard !ids.isEmpty else { return [] }
        // In chunks below SQLite's limit of bound values; each chunk's statement is compiled for its count.
        var found: [User] = []
        let all = Array(ids)
        for start in stride(from: 0, to: all.count, by: 500) {
            let chunk = all[start..<min(start + 500, all.count)].map(\.uuidString)
            let marks = Array(repeating: "?", count: chunk.count).joined(separator: ", ")
            found += try await readStatement { db in
                try Row.fetchAll(
                    db, sql: "SELECT * FROM users WHERE id IN (\(marks))", arguments: StatementArguments(chunk)
                )
                .map(Self.user)
            }
        }
        return found
    }

    public func users(mergedInto user: UUID) async throws -> [User] {
        try await all(
            "SELECT * FROM users WHERE merged_into = ? ORDER BY created_at, support_id", [user.uuidString], Self.user)
    }

    public func mergeUser(
        _ merge: UserMerge, audit events: @escaping @Sendable (UserMergeResult) throws -> [AuditEvent]
    ) async throws -> UserMergeResult {
        try await write { db in
            let env = merge.environment.rawValue
            let (from, into) = (merge.from.uuidString, merge.into.uuidString)
            let context = SQLiteLedgerContext(db: db)
            let user = { (id: String) in
                try Row.fetchOne(db, cached: "SELECT * FROM users WHERE id = ?", arguments: [id]).map(Self.user)
            }
            let count = { (sql: String, arguments: StatementArguments) in
                try Int.fetchOne(db, cached: sql, arguments: arguments) ?? 0
            }
            var found = UserMergeState(
                from: try user(from), into: try user(into),
                fromWallet: try context.wallet(owner: merge.from, environment: merge.environment) ?? .empty,
                intoWallet: try context.wallet(owner: merge.into, environment: merge.environment) ?? .empty,
                backup: try Int64.fetchOne(db, cached: "SELECT value FROM backups WHERE owner = ?", arguments: [from]),
                tokens: try Self.tokenCounts(db, owner: from),
                receipts: try count("SELECT COUNT(*) FROM receipts WHERE owner = ? AND environment = ?", [from, env]),
                grants: try count("SELECT COUNT(*) FROM grants WHERE recipient = ?", [from]))
            found.currencyWallets = (
                try context.currencyWallets(owner: merge.from, environment: merge.environment),
                try context.currencyWallets(owner: merge.into, environment: merge.environment)
            )
            found.backupCurrencies = try BackupCurrencies.wallets(
                String?.fetchOne(db, cached: "SELECT currencies FROM backups WHERE owner = ?", arguments: [from]) ?? nil
            )
            let plan = try merge.plan(found, audit: events)
            try db.execute(
                cached: "UPDATE users SET merged_into = ? WHERE id = ? AND merged_into IS NULL",
                arguments: [into, from])
            guard db.changesCount == 1 else { throw StoreError.alreadyExists("merge of user \(from)") }
            try context.save(plan.from, owner: merge.from, environment: merge.environment)
            try context.save(plan.into, owner: merge.into, environment: merge.environment)
            for (currency, fromDecision, intoDecision) in plan.otherCurrencies {
                try context.save(fromDecision, owner: merge.from, environment: merge.environment, currency: currency)
                try context.save(intoDecision, owner: merge.into, environment: merge.environment, currency: currency)
            }
            // The merged customer's receipts and credits that expire go with the wallet they are in.
            for table in ["receipts", "currency_receipts", "credit_lots"] {
                try db.execute(
                    cached: "UPDATE \(table) SET owner = ? WHERE owner = ? AND environment = ?",
                    arguments: [into, from, env])
            }
            try db.execute(cached: "UPDATE grants SET recipient = ? WHERE recipient = ?", arguments: [into, from])
            try db.execute(
                cached: "UPDATE entitlement_grants SET recipient = ? WHERE recipient = ?", arguments: [into, from])
            // The merged customer's receipts are the other's now: the next reconciliation checks them there.
            try db.execute(cached: "DELETE FROM discrepancies WHERE owner = ?", arguments: [from])
            try db.execute(cached: "UPDATE renewal_states SET owner = ? WHERE owner = ?", arguments: [into, from])
            // A claim's tokens end with the merge; they never sign in as the account user. Without the account
            // owner's word the installs' tokens end too (an import's first token was never an install's).
            let ended = Millis.from(merge.at)
            try db.execute(
                cached: """
                    UPDATE user_tokens SET revoked_at = ? WHERE owner = ? AND revoked_at IS NULL
                        AND (origin = 'claim' OR NOT ?)
                    """,
                arguments: [ended, from, merge.movesTokens])
            // A merged customer is settled: its imported record name claims nothing from now on.
            try db.execute(
                cached: """
                    UPDATE imported_customers SET claimed_at = COALESCE(claimed_at, ?), claim_key_hash = ?
                    WHERE user_id = ?
                    """, arguments: [ended, ImportedCustomer.mergedKeyHash, from])
            // The merged install's first token: the account user's from now on, or kept revoked.
            try db.execute(
                cached: """
                    INSERT INTO user_tokens (token_hash, owner, created_at, revoked_at)
                    SELECT token_hash, ?1, created_at, ?3 FROM users WHERE id = ?2
                        AND NOT EXISTS (SELECT 1 FROM user_tokens t WHERE t.token_hash = users.token_hash)
                        AND NOT EXISTS (SELECT 1 FROM imported_customers i WHERE i.user_id = ?2)
                    """,
                arguments: [merge.movesTokens ? into : from, from, merge.movesTokens ? nil : ended])
            if merge.movesTokens {
                try db.execute(
                    cached: "UPDATE user_tokens SET owner = ? WHERE owner = ? AND origin = 'device'",
                    arguments: [into, from])
            }
            try Self.insertAudit(db, plan.audit)
            return plan.result
        }
    }

    /// Deletes the receipts in `table` (the default currency's, or the others') of the owners bound (`?` each,
    /// `count` of them) that delivered no credits and were not revoked, unless the transaction delivered credits in
    /// any currency.
    static func deliveredNothing(_ table: String, count: Int) -> String {
        """
        DELETE FROM \(table) WHERE owner IN (\(databaseQuestionMarks(count: count))) AND delivered_credits = 0
            AND revoked_at IS NULL
            AND NOT EXISTS (SELECT 1 FROM receipts o WHERE o.environment = \(table).environment
                AND o.transaction_id = \(table).transaction_id AND o.delivered_credits > 0)
            AND NOT EXISTS (SELECT 1 FROM currency_receipts o WHERE o.environment = \(table).environment
                AND o.transaction_id = \(table).transaction_id AND o.delivered_credits > 0)
        """
    }

    // Its statements name one bound value per owner (the customer and those merged into them): compiled at each
    // deletion, not kept per count in the connection's statement cache.
    public func deleteUser(
        _ deletion: UserDeletion, audit events: @escaping @Sendable (UserDeletionResult) throws -> [AuditEvent]
    ) async throws -> UserDeletionResult {
        try await write { db in
            let id = deletion.user.uuidString
            // A user merged into another is gone for the ledger: delete the one it joined.
            let context = SQLiteLedgerContext(db: db, excludingMerged: true)
            let merged = try String.fetchAll(db, sql: "SELECT id FROM users WHERE merged_into = ?", arguments: [id])
            let everyone = StatementArguments([id] + merged)
            var found = UserDeletionState(
                user: try Row.fetchOne(db, sql: "SELECT * FROM users WHERE id = ?", arguments: [id]).map(Self.user),
                wallet: try context.wallet(owner: deletion.user, environment: deletion.environment),
                merged: merged.compactMap(UUID.init(uuidString:)),
                pendingGrants: try Int.fetchOne(
                    db,
                    sql: """
                        SELECT COUNT(*) FROM grants WHERE recipient IN (\(databaseQuestionMarks(count: 1 + merged.count)))
                            AND claimed_at IS NULL AND cancelled_at IS NULL
                        """, arguments: everyone) ?? 0)
            found.currencyWallets = try context.currencyWallets(owner: deletion.user, environment: deletion.environment)
            let plan = try deletion.plan(found, audit: events)
            let ids = plan.owners.map(\.uuidString)
            let marks = databaseQuestionMarks(count: ids.count)
            let owners = StatementArguments(ids)
            for statement in [
                "DELETE FROM user_tokens WHERE owner IN (\(marks))",
                "DELETE FROM push_tokens WHERE owner IN (\(marks))",
                "DELETE FROM backups WHERE owner IN (\(marks))", "DELETE FROM backup_history WHERE owner IN (\(marks))",
                "DELETE FROM verify_reports WHERE owner IN (\(marks))",
                "DELETE FROM merge_codes WHERE owner IN (\(marks))",
                "DELETE FROM consumption_consents WHERE owner IN (\(marks))",
                "DELETE FROM consumption_answers WHERE owner IN (\(marks))",
                "DELETE FROM discrepancies WHERE owner IN (\(marks))",
            ] {
                try db.execute(sql: statement, arguments: owners)
            }
            for owner in ids {
                // A token hash no token has, and a fresh appAccountToken Apple never saw: nothing finds the record.
                try db.execute(
                    sql: """
                        UPDATE users SET token_hash = ?, app_account_token = ?, app_transaction_id = NULL,
                            app_transaction_environment = NULL, deleted_at = ?
                        WHERE id = ?
                        """,
                    arguments: ["deleted:" + owner, UUID().uuidString, Millis.from(deletion.at), owner])
            }
            try db.execute(
                sql: """
                    UPDATE grants SET cancelled_at = ?, cancelled_by = ?
                    WHERE recipient IN (\(marks)) AND claimed_at IS NULL AND cancelled_at IS NULL
                    """, arguments: [Millis.from(deletion.at), deletion.actor] + owners)
            try db.execute(
                sql: "UPDATE grants SET reason = ? WHERE recipient IN (\(marks))",
                arguments: [UserDeletion.removedReason] + owners)
            try db.execute(
                sql: """
                    UPDATE entitlement_grants SET cancelled_at = ?, cancelled_by = ?
                    WHERE recipient IN (\(marks)) AND cancelled_at IS NULL AND ends_at > ?
                    """, arguments: [Millis.from(deletion.at), deletion.actor] + owners + [Millis.from(deletion.at)])
            try db.execute(
                sql: "UPDATE entitlement_grants SET reason = ? WHERE recipient IN (\(marks))",
                arguments: [UserDeletion.removedReason] + owners)
            for table in ["ledger_entries", "currency_entries"] {
                try db.execute(
                    sql: """
                        UPDATE \(table) SET reason = ?
                        WHERE owner IN (\(marks)) AND reason IS NOT NULL AND kind IN ('grant', 'adjustment')
                        """,
                    arguments: [UserDeletion.removedReason] + owners)
            }
            // The audit log keeps who did what to the customer, without the reasons support wrote.
            let supportIds = try String.fetchAll(
                db, sql: "SELECT support_id FROM users WHERE id IN (\(marks))", arguments: owners)
            for column in ["before", "after"] {
                try db.execute(
                    sql: """
                        UPDATE audit_events SET \(column) = json_set(\(column), '$.reason', ?)
                        WHERE environment = ? AND subject IN (\(databaseQuestionMarks(count: supportIds.count)))
                            AND json_valid(\(column)) AND json_type(\(column), '$.reason') IS NOT NULL
                        """,
                    arguments: [UserDeletion.removedReason, deletion.environment.rawValue]
                        + StatementArguments(supportIds))
            }
            // The webhooks' outbox keeps the customer's events (still owed to the endpoints), without the reasons.
            try db.execute(
                sql: """
                    UPDATE webhook_outbox SET reason = CASE WHEN reason IS NULL THEN NULL ELSE ? END,
                        detail = CASE WHEN json_valid(detail) AND json_type(detail, '$.reason') IS NOT NULL
                            THEN json_set(detail, '$.reason', ?) ELSE detail END,
                        body = CASE WHEN json_valid(body) AND json_type(body, '$.data.reason') IS NOT NULL
                            THEN json_set(body, '$.data.reason', ?) ELSE body END
                    WHERE environment = ? AND source IN ('ledger', 'audit')
                        AND support_id IN (\(databaseQuestionMarks(count: supportIds.count)))
                    """,
                arguments: [
                    UserDeletion.removedReason, UserDeletion.removedReason, UserDeletion.removedReason,
                    deletion.environment.rawValue,
                ] + StatementArguments(supportIds))
            // What delivered no credits (a non-consumable, a subscription's access) is Apple's to give again: the
            // customer's next account restores it. What delivered credits, in any currency, stays theirs, so it is
            // never credited twice.
            // Only rows that delivered nothing go, so the order of the two changes nothing.
            try db.execute(sql: Self.deliveredNothing("currency_receipts", count: ids.count), arguments: owners)
            try db.execute(sql: Self.deliveredNothing("receipts", count: ids.count), arguments: owners)
            if let closing = plan.closing {
                try context.save(closing, owner: deletion.user, environment: deletion.environment)
            }
            for (currency, closing) in plan.closingCurrencies {
                try context.save(closing, owner: deletion.user, environment: deletion.environment, currency: currency)
            }
            // The closing entries take every wallet to zero: nothing is left to expire.
            try db.execute(
                sql: "DELETE FROM credit_lots WHERE environment = ? AND owner IN (\(marks))",
                arguments: [deletion.environment.rawValue] + owners)
            try Self.insertAudit(db, plan.audit)
            return plan.result
        }
    }

    public func saveVerifyReport(_ report: VerifyReport) async throws {
        try await write { db in
            guard try Self.userExists(db, id: report.owner, environment: report.environment, live: true) else {
                throw StoreError.notFound("user \(report.owner)")
            }
            try db.execute(
                cached: """
                    INSERT INTO verify_reports (owner, environment, reported_at, items) VALUES (?, ?, ?, ?)
                    ON CONFLICT (owner) DO UPDATE SET environment = excluded.environment,
                        reported_at = excluded.reported_at, items = excluded.items
                    """,
                arguments: [
                    report.owner.uuidString, report.environment.rawValue, Millis.from(report.reportedAt),
                    report.itemsText,
                ])
        }
    }

    public func verifyReport(owner: UUID, environment: AppStoreEnvironment) async throws -> VerifyReport? {
        try await one(
            "SELECT * FROM verify_reports WHERE owner = ? AND environment = ?",
            [owner.uuidString, environment.rawValue]
        ) { row in
            VerifyReport(
                owner: owner, environment: environment, reportedAt: Millis.date(row["reported_at"]),
                items: try VerifyReport.items(row["items"]))
        }
    }

    public func users(environment: AppStoreEnvironment, supportIdPrefix: String?, limit: Int, offset: Int) async throws
        -> [User]
    {
        let prefix = supportIdPrefix?.lowercased() ?? ""
        return try await read { db in
            // Everyone, newest first: walked through the creation index, a page at a time. With a prefix, the range
            // of Support IDs (they hold only `_`, 0-9 and a-f, so every ID with the prefix sorts below prefix + DEL),
            // then its matches sorted.
            guard !["", "_"].contains(prefix) else {
                return try Row.fetchAll(
                    db,
                    cached: """
                        SELECT * FROM users INDEXED BY users_by_created_support WHERE environment = ?
                        ORDER BY created_at DESC, support_id DESC LIMIT ? OFFSET ?
                        """,
                    arguments: [environment.rawValue, max(0, limit), max(0, offset)]
                ).map(Self.user)
            }
            return try Row.fetchAll(
                db,
                cached: """
                    SELECT * FROM users WHERE environment = ? AND support_id >= ? AND support_id < ?
                    ORDER BY created_at DESC, support_id DESC LIMIT ? OFFSET ?
                    """,
                arguments: [environment.rawValue, prefix, prefix + "\u{7F}", max(0, limit), max(0, offset)]
            ).map(Self.user)
        }
    }

    public func userCount(environment: AppStoreEnvironment) async throws -> Int {
        try await read { db in
            try Int.fetchOne(
                db, cached: "SELECT COUNT(*) FROM users WHERE environment = ?", arguments: [environment.rawValue]) ?? 0
        }
    }
}
