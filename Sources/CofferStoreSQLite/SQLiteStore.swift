import CofferCore
import CofferStore
import Foundation
import GRDB

/// How hard SQLite works to keep a commit through a crash.
public enum SQLiteDurability: String, Sendable, CaseIterable, Codable {
    /// `synchronous=FULL` (the default): every acknowledged commit survives a process crash and power loss.
    /// Costs one fsync per commit; group commit (several ledger requests per ``SQLiteStore/apply(_:)``) shares it.
    case full
    /// `synchronous=NORMAL` in WAL mode: commits survive a process crash; the last ones may be lost on
    /// power loss. Several times faster. Do not acknowledge Apple notifications on this setting unless you
    /// accept that.
    case normal
}

/// The embedded ``CofferStore``: one SQLite file in WAL mode, through GRDB. Migrates when opened.
///
/// ```swift
/// let store = try SQLiteStore(path: "coffer.sqlite")
/// ```
public final class SQLiteStore: CofferStore {
    private let pool: DatabasePool

    /// Opens (creating if needed) and migrates the database at `path`.
    ///
    /// - Parameters:
    ///   - path: The database file.
    ///   - durability: The commit durability; see ``SQLiteDurability``.
    public init(path: String, durability: SQLiteDurability = .full) throws {
        var configuration = Configuration()
        configuration.busyMode = .timeout(10)
        configuration.label = "coffer"
        let pragma = durability == .full ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = NORMAL"
        configuration.prepareDatabase { db in try db.execute(sql: pragma) }
        // A new database is created owner-only; SQLite gives its -wal and -shm files the database's mode.
        if path != ":memory:", !FileManager.default.fileExists(atPath: path) {
            let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0o600)
            if descriptor >= 0 { close(descriptor) }
        }
        pool = try DatabasePool(path: path, configuration: configuration)
        try Self.migrator.migrate(pool)
    }

    /// The names of the migrations applied to the database, oldest first.
    public func appliedMigrations() throws -> [String] {
        try pool.read { db in try Self.migrator.appliedMigrations(db) }
    }

    /// The journal mode and `synchronous` setting in force, for diagnostics (`("wal", 2)` for FULL).
    public func pragmas() throws -> (journalMode: String, synchronous: Int) {
        try pool.read { db in
            let mode = try String.fetchOne(db, sql: "PRAGMA journal_mode") ?? ""
            let sync = try Int.fetchOne(db, sql: "PRAGMA synchronous") ?? -1
            return (mode, sync)
        }
    }

    // MARK: Users

    /// Adds a user. Throws ``StoreError/alreadyExists(_:)`` when the Support ID, token hash or
    public func createUser(_ user: User) async throws {
        try await write { db in
            do {
                try db.execute(
                    sql: """
                        INSERT INTO users (id, environment, support_id, token_hash, app_account_token, created_at)
                        VALUES (?, ?, ?, ?, ?, ?)
                        """,
                    arguments: [
                        user.id.uuidString, user.environment.rawValue, user.supportId.rawValue, user.tokenHash,
                        user.appAccountToken.uuidString, Millis.from(user.createdAt),
                    ])
                try db.execute(
                    sql: "INSERT INTO wallets (user_id, balance, deficit) VALUES (?, 0, 0)",
                    arguments: [user.id.uuidString])
            } catch let error as DatabaseError where error.resultCode == .SQLITE_CONSTRAINT {
                throw StoreError.alreadyExists("user (\(error.message ?? "unique constraint"))")
            }
        }
    }

    /// The user with this id.
    public func user(id: UUID) async throws -> User? {
        try await read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM users WHERE id = ?", arguments: [id.uuidString]).map(Self.user)
        }
    }

    /// The user with this id.
    public func user(supportId: SupportID, environment: Environment) async throws -> User? {
        try await read { db in
            try Row.fetchOne(
                db, sql: "SELECT * FROM users WHERE environment = ? AND support_id = ?",
                arguments: [environment.rawValue, supportId.rawValue]
            ).map(Self.user)
        }
    }

    /// The user with this id.
    public func user(tokenHash: String) async throws -> User? {
        try await read { db in
            try Row.fetchOne(
                db.cachedStatement(sql: "SELECT * FROM users WHERE token_hash = ?"), arguments: [tokenHash]
            )
            .map(Self.user)
        }
    }

    /// The user with this id.
    public func user(appAccountToken: UUID, environment: Environment) async throws -> User? {
        try await read { db in
            try Row.fetchOne(
                db, sql: "SELECT * FROM users WHERE environment = ? AND app_account_token = ?",
                arguments: [environment.rawValue, appAccountToken.uuidString]
            ).map(Self.user)
        }
    }

    /// Users of an environment, newest first, optionally whose Support ID starts with `supportIdPrefix`
    public func users(environment: Environment, supportIdPrefix: String?, limit: Int, offset: Int) async throws
        -> [User]
    {
        let prefix = supportIdPrefix?.lowercased() ?? ""
        return try await read { db in
            // Support IDs hold only `_`, 0-9 and a-f, so every ID with the prefix sorts below prefix + DEL.
            try Row.fetchAll(
                db,
                sql: """
                    SELECT * FROM users WHERE environment = ? AND support_id >= ? AND support_id < ?
                    ORDER BY created_at DESC, support_id DESC LIMIT ? OFFSET ?
                    """,
                arguments: [environment.rawValue, prefix, prefix + "\u{7F}", max(0, limit), max(0, offset)]
            ).map(Self.user)
        }
    }

    /// How many users an environment has.
    public func userCount(environment: Environment) async throws -> Int {
        try await read { db in
            try Int.fetchOne(
                db, sql: "SELECT COUNT(*) FROM users WHERE environment = ?", arguments: [environment.rawValue]) ?? 0
        }
    }

    // MARK: Ledger

    /// Applies ledger requests in order, all in one durable commit (group commit). A request the ledger
    public func apply(_ requests: [LedgerRequest]) async throws -> [Result<LedgerResult, LedgerError>] {
        try await write { db in
            var context = SQLiteLedgerContext(db: db)
            return try requests.map { try LedgerWriter.apply($0, in: &context) }
        }
    }

    /// A user's wallet (empty for a user with no entries).
    public func wallet(owner: UUID, environment: Environment) async throws -> Wallet {
        try await read { db in
            try SQLiteLedgerContext(db: db).wallet(owner: owner, environment: environment) ?? .empty
        }
    }

    /// A user's ledger entries, oldest first.
    public func entries(owner: UUID, environment: Environment) async throws -> [LedgerEntry] {
        try await read { db in
            try Row.fetchAll(
                db, sql: "SELECT * FROM ledger_entries WHERE environment = ? AND owner = ? ORDER BY seq",
                arguments: [environment.rawValue, owner.uuidString]
            ).map(SQLiteLedgerContext.entry)
        }
    }

    /// A user's ledger entries of some kinds, oldest first.
    public func entries(owner: UUID, environment: Environment, kinds: Set<LedgerEntryKind>) async throws
        -> [LedgerEntry]
    {
        guard !kinds.isEmpty else { return [] }
        let names = kinds.map(\.rawValue).sorted()
        return try await read { db in
            let marks = Array(repeating: "?", count: names.count).joined(separator: ", ")
            return try Row.fetchAll(
                db,
                sql: """
                    SELECT * FROM ledger_entries WHERE environment = ? AND owner = ? AND kind IN (\(marks))
                    ORDER BY seq
                    """,
                arguments: StatementArguments([environment.rawValue, owner.uuidString] + names)
            ).map(SQLiteLedgerContext.entry)
        }
    }

    /// The receipt of a transaction.
    public func receipt(transactionId: String, environment: Environment) async throws -> Receipt? {
        try await read { db in
            try SQLiteLedgerContext(db: db).receipt(transactionId: transactionId, environment: environment)
        }
    }

    /// A user's receipts, oldest purchase first.
    public func receipts(owner: UUID, environment: Environment) async throws -> [Receipt] {
        try await read { db in
            try Row.fetchAll(
                db,
                sql:
                    "SELECT * FROM receipts WHERE environment = ? AND owner = ? ORDER BY purchase_date, transaction_id",
                arguments: [environment.rawValue, owner.uuidString]
            ).map(SQLiteLedgerContext.receipt)
        }
    }

    /// A user's receipts of the given products, oldest purchase first.
    public func receipts(owner: UUID, environment: Environment, productIds: Set<String>) async throws -> [Receipt] {
        guard !productIds.isEmpty else { return [] }
        let products = productIds.sorted()
        return try await read { db in
            let marks = Array(repeating: "?", count: products.count).joined(separator: ", ")
            return try Row.fetchAll(
                db,
                sql: """
                    SELECT * FROM receipts WHERE owner = ? AND product_id IN (\(marks)) AND environment = ?
                    ORDER BY purchase_date, transaction_id
                    """,
                arguments: StatementArguments([owner.uuidString] + products + [environment.rawValue])
            ).map(SQLiteLedgerContext.receipt)
        }
    }

    /// The receipts of one subscription chain (or one non-renewing transaction), oldest purchase first.
    public func receipts(originalTransactionId: String, environment: Environment) async throws -> [Receipt] {
        try await read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT * FROM receipts WHERE environment = ? AND original_transaction_id = ?
                    ORDER BY purchase_date, transaction_id
                    """,
                arguments: [environment.rawValue, originalTransactionId]
            ).map(SQLiteLedgerContext.receipt)
        }
    }

    // MARK: Backups

    /// A user's backup.
    public func backup(owner: UUID, environment: Environment) async throws -> BackupRecord? {
        try await read { db in try Self.backup(db, owner: owner, environment: environment) }
    }

    /// Writes a user's backup if `precondition` holds; the version goes up by one on every write.
    public func saveBackup(
        owner: UUID,
        environment: Environment,
        value: Int64,
        precondition: BackupPrecondition,
        writer: BackupWriter,
        at: Date
    ) async throws -> BackupSaveResult {
        try await write { db in
            guard try Self.userExists(db, id: owner, environment: environment) else {
                throw StoreError.notFound("user \(owner)")
            }
            let current = try Self.backup(db, owner: owner, environment: environment)
            guard let record = precondition.write(over: current, value: value, writer: writer, at: at) else {
                return .conflict(current: current)
            }
            let (kind, name) = Self.columns(record.writer)
            try db.execute(
                sql: """
                    INSERT INTO backups (owner, environment, value, last_updated, version, writer_kind, writer_name)
                    VALUES (?, ?, ?, ?, ?, ?, ?)
                    ON CONFLICT (owner) DO UPDATE SET value = excluded.value, last_updated = excluded.last_updated,
                        version = excluded.version, writer_kind = excluded.writer_kind, writer_name = excluded.writer_name
                    """,
                arguments: [
                    owner.uuidString, environment.rawValue, value, Millis.from(at), record.version, kind, name,
                ])
            try db.execute(
                sql: """
                    INSERT INTO backup_history (owner, environment, value, previous_value, last_updated, version,
                        writer_kind, writer_name)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    owner.uuidString, environment.rawValue, value, current?.value, Millis.from(at), record.version,
                    kind, name,
                ])
            try db.execute(
                sql: """
                    DELETE FROM backup_history WHERE owner = ? AND environment = ? AND seq <= (
                        SELECT seq FROM backup_history WHERE owner = ? AND environment = ?
                        ORDER BY seq DESC LIMIT 1 OFFSET ?)
                    """,
                arguments: [
                    owner.uuidString, environment.rawValue, owner.uuidString, environment.rawValue,
                    BackupHistoryItem.kept,
                ])
            return .saved(record)
        }
    }

    // MARK: Grants

    /// Adds a grant.
    public func createGrant(_ grant: Grant) async throws {
        try await write { db in
            guard try Self.userExists(db, id: grant.recipient, environment: grant.environment) else {
                throw StoreError.notFound("user \(grant.recipient)")
            }
            do {
                try db.execute(
                    sql: """
                        INSERT INTO grants (id, environment, recipient, credits, reason, created_by, created_at, claimed_at)
                        VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                        """,
                    arguments: [
                        grant.id.uuidString, grant.environment.rawValue, grant.recipient.uuidString, grant.credits,
                        grant.reason, grant.createdBy, Millis.from(grant.createdAt), grant.claimedAt.map(Millis.from),
                    ])
            } catch let error as DatabaseError where error.resultCode == .SQLITE_CONSTRAINT {
                throw StoreError.alreadyExists("grant \(grant.id)")
            }
        }
    }

    /// Grants of an environment, newest first, optionally for one recipient and one status.
    public func grants(environment: Environment, recipient: UUID?, status: GrantStatus?, limit: Int) async throws
        -> [Grant]
    {
        try await read { db in
            var sql = "SELECT * FROM grants WHERE environment = ?"
            var arguments: StatementArguments = [environment.rawValue]
            if let recipient {
                sql += " AND recipient = ?"
                arguments += [recipient.uuidString]
            }
            switch status {
            case .pending: sql += " AND claimed_at IS NULL"
            case .claimed: sql += " AND claimed_at IS NOT NULL"
            case nil: break
            }
            sql += " ORDER BY created_at DESC, id DESC LIMIT ?"
            arguments += [max(0, limit)]
            return try Row.fetchAll(db, sql: sql, arguments: arguments).map(Self.grant)
        }
    }

    /// Marks a grant claimed by its recipient; claiming again returns it unchanged. With a `policy`, the
    public func claimGrant(
        id: UUID,
        recipient: UUID,
        environment: Environment,
        crediting policy: DeficitPolicy?,
        at: Date
    ) async throws -> Grant {
        try await write { db in
            guard
                var grant = try Row.fetchOne(
                    db, sql: "SELECT * FROM grants WHERE id = ? AND environment = ?",
                    arguments: [id.uuidString, environment.rawValue]
                ).map(Self.grant)
            else { throw StoreError.notFound("grant \(id)") }
            guard grant.recipient == recipient else { throw StoreError.wrongUser("grant \(id)") }
            guard grant.claimedAt == nil else { return grant }
            if let policy {
                var context = SQLiteLedgerContext(db: db)
                let request = LedgerRequest(
                    owner: recipient, environment: environment,
                    event: .grant(id: id.uuidString.lowercased(), credits: grant.credits, reason: grant.reason),
                    policy: policy, at: at)
                _ = try LedgerWriter.apply(request, in: &context).get()
            }
            grant.claimedAt = at
            try db.execute(
                sql: "UPDATE grants SET claimed_at = ? WHERE id = ?", arguments: [Millis.from(at), id.uuidString])
            return grant
        }
    }

    // MARK: Audit

    /// Appends an audit event.
    public func recordAudit(_ event: AuditEvent) async throws {
        try await write { db in
            try db.execute(
                sql: """
                    INSERT INTO audit_events (id, environment, actor, action, subject, before, after, at)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    event.id.uuidString, event.environment.rawValue, event.actor, event.action, event.subject,
                    event.before, event.after, Millis.from(event.at),
                ])
        }
    }

    /// Audit events of an environment, newest first; with a `subject`, only those about it.
    public func auditEvents(environment: Environment, subject: String?, limit: Int) async throws -> [AuditEvent] {
        try await read { db in
            let sql =
                subject == nil
                ? "SELECT * FROM audit_events WHERE environment = ? ORDER BY seq DESC LIMIT ?"
                : "SELECT * FROM audit_events WHERE environment = ? AND subject = ? ORDER BY seq DESC LIMIT ?"
            var arguments: StatementArguments = [environment.rawValue]
            if let subject { arguments += [subject] }
            arguments += [max(0, limit)]
            return try Row.fetchAll(db, sql: sql, arguments: arguments).map { row in
                AuditEvent(
                    id: try RowValue.uuid(row, "id"), environment: try RowValue.environment(row),
                    actor: row["actor"], action: row["action"], subject: row["subject"], before: row["before"],
                    after: row["after"], at: Millis.date(row["at"]))
            }
        }
    }

    // MARK: Support

    /// The backups a user's devices and admins wrote, newest first.
    public func backupHistory(owner: UUID, environment: Environment, limit: Int) async throws -> [BackupHistoryItem] {
        try await read { db in
            try Row.fetchAll(
                db,
                sql: "SELECT * FROM backup_history WHERE owner = ? AND environment = ? ORDER BY seq DESC LIMIT ?",
                arguments: [owner.uuidString, environment.rawValue, max(0, limit)]
            ).map { row in
                let name: String = row["writer_name"]
                let writer: BackupWriter = (row["writer_kind"] as String) == "admin" ? .admin(name) : .device(name)
                return BackupHistoryItem(
                    record: BackupRecord(
                        value: row["value"], lastUpdated: Millis.date(row["last_updated"]), version: row["version"],
                        writer: writer),
                    previousValue: row["previous_value"])
            }
        }
    }

    /// The dashboard's figures for an environment.
    public func dashboard(environment: Environment, days: Int, now: Date) async throws -> DashboardFigures {
        let start = DashboardFigures.windowStart(days: days, endingAt: now)
        return try await read { db in
            let env = environment.rawValue
            func count(_ sql: String) throws -> Int { try Int.fetchOne(db, sql: sql, arguments: [env]) ?? 0 }
            func perDay(_ column: String, _ filter: String) throws -> [Int64: Int] {
                let rows = try Row.fetchAll(
                    db,
                    sql: """
                        SELECT \(column) / 86400000 AS day, COUNT(*) AS n FROM receipts
                        WHERE environment = ? AND \(column) >= ? \(filter) GROUP BY day
                        """,
                    arguments: [env, Millis.from(start)])
                return Dictionary(uniqueKeysWithValues: rows.map { (($0["day"] as Int64), ($0["n"] as Int)) })
            }
            let deficit = try Row.fetchOne(
                db,
                sql: """
                    SELECT COUNT(*) AS n, COALESCE(SUM(w.deficit), 0) AS total FROM wallets w
                    JOIN users u ON u.id = w.user_id WHERE u.environment = ? AND w.deficit > 0
                    """,
                arguments: [env])
            return DashboardFigures(
                users: try count("SELECT COUNT(*) FROM users WHERE environment = ?"),
                pendingGrants: try count(
                    "SELECT COUNT(*) FROM grants WHERE environment = ? AND claimed_at IS NULL"),
                claimedGrants: try count(
                    "SELECT COUNT(*) FROM grants WHERE environment = ? AND claimed_at IS NOT NULL"),
                purchases: try count(
                    "SELECT COUNT(*) FROM receipts WHERE environment = ? AND delivered_at IS NOT NULL"),
                refunds: try count(
                    "SELECT COUNT(*) FROM receipts WHERE environment = ? AND revoked_at IS NOT NULL"
                        + " AND (reversed_at IS NULL OR revoked_at > reversed_at)"
                ),
                usersInDeficit: deficit?["n"] ?? 0,
                outstandingDeficit: deficit?["total"] ?? 0,
                days: DashboardFigures.fill(
                    days: days, from: start, purchases: try perDay("delivered_at", ""),
                    refunds: try perDay("revoked_at", "AND (reversed_at IS NULL OR revoked_at > reversed_at)")))
        }
    }

    /// Deletes every grant of an environment.
    public func deleteGrants(environment: Environment) async throws -> Int {
        try await write { db in
            try db.execute(sql: "DELETE FROM grants WHERE environment = ?", arguments: [environment.rawValue])
            return db.changesCount
        }
    }

    // MARK: Admins

    /// Adds an admin.
    public func createAdmin(_ admin: Admin) async throws {
        try await write { db in
            do {
                try db.execute(
                    sql: """
                        INSERT INTO admins (id, name, password_hash, created_at, password_changed_at)
                        VALUES (?, ?, ?, ?, ?)
                        """,
                    arguments: [
                        admin.id.uuidString, admin.name, admin.passwordHash, Millis.from(admin.createdAt),
                        Millis.from(admin.passwordChangedAt),
                    ])
            } catch let error as DatabaseError where error.resultCode == .SQLITE_CONSTRAINT {
                throw StoreError.alreadyExists("admin \(admin.name)")
            }
        }
    }

    /// The admin with this name.
    public func admin(name: String) async throws -> Admin? {
        try await read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM admins WHERE name = ?", arguments: [name]).map(Self.admin)
        }
    }

    /// Every admin, by name.
    public func admins() async throws -> [Admin] {
        try await read { db in try Row.fetchAll(db, sql: "SELECT * FROM admins ORDER BY name").map(Self.admin) }
    }

    /// Sets an admin's password hash and ends the admin's sessions.
    public func setAdminPassword(name: String, passwordHash: String, at: Date) async throws -> Bool {
        try await write { db in
            guard let id = try String.fetchOne(db, sql: "SELECT id FROM admins WHERE name = ?", arguments: [name])
            else { return false }
            try db.execute(
                sql: "UPDATE admins SET password_hash = ?, password_changed_at = ? WHERE id = ?",
                arguments: [passwordHash, Millis.from(at), id])
            try db.execute(sql: "DELETE FROM admin_sessions WHERE admin_id = ?", arguments: [id])
            return true
        }
    }

    /// Stores a new session.
    public func createSession(_ session: AdminSession) async throws {
        try await write { db in
            do {
                try db.execute(
                    sql: """
                        INSERT INTO admin_sessions (token_hash, admin_id, admin_name, csrf_token, environment,
                            created_at, expires_at)
                        VALUES (?, ?, ?, ?, ?, ?, ?)
                        """,
                    arguments: [
                        session.tokenHash, session.adminId.uuidString, session.adminName, session.csrfToken,
                        session.environment.rawValue, Millis.from(session.createdAt), Millis.from(session.expiresAt),
                    ])
            } catch let error as DatabaseError where error.resultCode == .SQLITE_CONSTRAINT {
                throw StoreError.alreadyExists("session")
            }
        }
    }

    /// The session with this token hash.
    public func session(tokenHash: String) async throws -> AdminSession? {
        try await read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM admin_sessions WHERE token_hash = ?", arguments: [tokenHash])
                .map { row in
                    AdminSession(
                        tokenHash: row["token_hash"], adminId: try RowValue.uuid(row, "admin_id"),
                        adminName: row["admin_name"], csrfToken: row["csrf_token"],
                        environment: try RowValue.environment(row), createdAt: Millis.date(row["created_at"]),
                        expiresAt: Millis.date(row["expires_at"]))
                }
        }
    }

    /// Switches a session's environment.
    public func setSessionEnvironment(tokenHash: String, environment: Environment) async throws {
        try await write { db in
            try db.execute(
                sql: "UPDATE admin_sessions SET environment = ? WHERE token_hash = ?",
                arguments: [environment.rawValue, tokenHash])
        }
    }

    /// Ends a session.
    public func deleteSession(tokenHash: String) async throws {
        try await write { db in
            try db.execute(sql: "DELETE FROM admin_sessions WHERE token_hash = ?", arguments: [tokenHash])
        }
    }

    /// Ends sessions that expired before `date`.
    public func deleteSessions(expiredBefore date: Date) async throws -> Int {
        try await write { db in
            try db.execute(sql: "DELETE FROM admin_sessions WHERE expires_at < ?", arguments: [Millis.from(date)])
            return db.changesCount
        }
    }

    /// Adds a request-signing key.
    public func createAdminKey(_ key: AdminKey) async throws {
        try await write { db in
            do {
                try db.execute(
                    sql: """
                        INSERT INTO admin_keys (id, name, public_key_pem, created_at, revoked_at) VALUES (?, ?, ?, ?, ?)
                        """,
                    arguments: [
                        key.id, key.name, key.publicKeyPEM, Millis.from(key.createdAt), key.revokedAt.map(Millis.from),
                    ])
            } catch let error as DatabaseError where error.resultCode == .SQLITE_CONSTRAINT {
                throw StoreError.alreadyExists("key \(key.id)")
            }
        }
    }

    /// The key with this id.
    public func adminKey(id: String) async throws -> AdminKey? {
        try await read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM admin_keys WHERE id = ?", arguments: [id]).map(Self.adminKey)
        }
    }

    /// Every key, oldest first.
    public func adminKeys() async throws -> [AdminKey] {
        try await read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM admin_keys ORDER BY created_at, id").map(Self.adminKey)
        }
    }

    /// Revokes a key.
    public func revokeAdminKey(id: String, at: Date) async throws -> Bool {
        try await write { db in
            try db.execute(
                sql: "UPDATE admin_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL",
                arguments: [Millis.from(at), id])
            return db.changesCount == 1
        }
    }

    /// Remembers a signature; `false` when seen before.
    public func recordSignature(_ digest: String, at: Date, forgetBefore: Date) async throws -> Bool {
        try await write { db in
            try db.execute(
                sql: "DELETE FROM admin_signatures WHERE seen_at < ?", arguments: [Millis.from(forgetBefore)])
            try db.execute(
                sql: "INSERT INTO admin_signatures (digest, seen_at) VALUES (?, ?) ON CONFLICT (digest) DO NOTHING",
                arguments: [digest, Millis.from(at)])
            return db.changesCount == 1
        }
    }

    // MARK: Notifications

    /// Records a notification unless one with its `notificationUUID` is recorded in its environment.
    public func recordNotification(_ record: NotificationRecord) async throws -> Bool {
        try await write { db in
            try db.execute(
                sql: """
                    INSERT INTO notifications (environment, uuid, type, subtype, transaction_id,
                        original_transaction_id, owner, signed_date, received_at, outcome, source)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    ON CONFLICT (environment, uuid) DO NOTHING
                    """,
                arguments: [
                    record.environment.rawValue, record.uuid, record.type, record.subtype, record.transactionId,
                    record.originalTransactionId, record.owner?.uuidString, Millis.from(record.signedDate),
                    Millis.from(record.receivedAt), record.outcome.rawValue, record.source,
                ])
            return db.changesCount > 0
        }
    }

    /// The notification with this `notificationUUID`.
    public func notification(uuid: String, environment: Environment) async throws -> NotificationRecord? {
        try await read { db in
            try Row.fetchOne(
                db, sql: "SELECT * FROM notifications WHERE environment = ? AND uuid = ?",
                arguments: [environment.rawValue, uuid]
            ).map(Self.notification)
        }
    }

    /// Notifications of an environment, latest received first, optionally about one transaction or with
    /// one outcome.
    public func notifications(
        environment: Environment, transactionId: String?, outcome: NotificationOutcome?, limit: Int
    ) async throws -> [NotificationRecord] {
        try await read { db in
            var sql = "SELECT * FROM notifications WHERE environment = ?"
            var arguments: StatementArguments = [environment.rawValue]
            if let transactionId {
                sql += " AND (transaction_id = ? OR original_transaction_id = ?)"
                arguments += [transactionId, transactionId]
            }
            if let outcome {
                sql += " AND outcome = ?"
                arguments += [outcome.rawValue]
            }
            sql += " ORDER BY received_at DESC, seq DESC LIMIT ?"
            arguments += [max(0, limit)]
            // A few shapes of this query run on every delivery: compiled once each.
            return try Row.fetchAll(db.cachedStatement(sql: sql), arguments: arguments).map(Self.notification)
        }
    }

    /// Saves a subscription chain's renewal state unless the stored one was signed later.
    public func saveRenewalState(_ state: RenewalState) async throws -> Bool {
        try await write { db in
            guard try Self.userExists(db, id: state.owner, environment: state.environment) else {
                throw StoreError.notFound("user \(state.owner)")
            }
            try db.execute(
                sql: """
                    INSERT INTO renewal_states (environment, original_transaction_id, owner, auto_renew_product_id,
                        auto_renews, in_billing_retry, grace_period_expires_date, signed_date)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                    ON CONFLICT (environment, original_transaction_id) DO UPDATE SET
                        owner = excluded.owner, auto_renew_product_id = excluded.auto_renew_product_id,
                        auto_renews = excluded.auto_renews, in_billing_retry = excluded.in_billing_retry,
                        grace_period_expires_date = excluded.grace_period_expires_date,
                        signed_date = excluded.signed_date
                    WHERE excluded.signed_date >= renewal_states.signed_date
                    """,
                arguments: [
                    state.environment.rawValue, state.originalTransactionId, state.owner.uuidString,
                    state.autoRenewProductId, state.autoRenews, state.inBillingRetry,
                    state.gracePeriodExpiresDate.map(Millis.from), Millis.from(state.signedDate),
                ])
            return db.changesCount > 0
        }
    }

    /// The renewal states of a user's subscription chains.
    public func renewalStates(owner: UUID, environment: Environment) async throws -> [RenewalState] {
        try await read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT * FROM renewal_states WHERE environment = ? AND owner = ?
                    ORDER BY original_transaction_id
                    """,
                arguments: [environment.rawValue, owner.uuidString]
            ).map { row in
                RenewalState(
                    originalTransactionId: row["original_transaction_id"],
                    environment: try RowValue.environment(row),
                    owner: try RowValue.uuid(row, "owner"),
                    autoRenewProductId: row["auto_renew_product_id"],
                    autoRenews: row["auto_renews"],
                    inBillingRetry: row["in_billing_retry"],
                    gracePeriodExpiresDate: (row["grace_period_expires_date"] as Int64?).map(Millis.date),
                    signedDate: Millis.date(row["signed_date"]))
            }
        }
    }

    /// A named position of a background service.
    public func cursor(_ name: String, environment: Environment) async throws -> String? {
        try await read { db in
            try String.fetchOne(
                db, sql: "SELECT value FROM cursors WHERE environment = ? AND name = ?",
                arguments: [environment.rawValue, name])
        }
    }

    /// Saves a named position.
    public func saveCursor(_ name: String, value: String, environment: Environment) async throws {
        try await write { db in
            try db.execute(
                sql: """
                    INSERT INTO cursors (environment, name, value) VALUES (?, ?, ?)
                    ON CONFLICT (environment, name) DO UPDATE SET value = excluded.value
                    """,
                arguments: [environment.rawValue, name, value])
        }
    }

    // MARK: Helpers

    /// Runs a write transaction, turning database failures into ``StoreError/storage(_:)``.
    private func write<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        do {
            return try await pool.write(body)
        } catch let error as DatabaseError {
            throw StoreError.storage(error.description)
        }
    }

    /// Runs a read on the calling thread. Reads in WAL mode never wait for the writer, and Coffer's are
    /// point lookups of microseconds: hopping to a dispatch queue and back costs more than the read.
    private func read<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        do {
            return try Self.readNow(pool, body)
        } catch let error as DatabaseError {
            throw StoreError.storage(error.description)
        }
    }

    private static func readNow<T>(_ pool: DatabasePool, _ body: (Database) throws -> T) throws -> T {
        try pool.read(body)
    }

    private static func userExists(_ db: Database, id: UUID, environment: Environment) throws -> Bool {
        try Bool.fetchOne(
            db, sql: "SELECT EXISTS (SELECT 1 FROM users WHERE id = ? AND environment = ?)",
            arguments: [id.uuidString, environment.rawValue]) ?? false
    }

    private static func user(_ row: Row) throws -> User {
        guard let supportId = SupportID(row["support_id"] as String) else {
            throw StoreError.storage("corrupt support_id in users")
        }
        return User(
            id: try RowValue.uuid(row, "id"),
            environment: try RowValue.environment(row),
            supportId: supportId,
            tokenHash: row["token_hash"],
            appAccountToken: try RowValue.uuid(row, "app_account_token"),
            createdAt: Millis.date(row["created_at"]))
    }

    private static func backup(_ db: Database, owner: UUID, environment: Environment) throws -> BackupRecord? {
        try Row.fetchOne(
            db, sql: "SELECT * FROM backups WHERE owner = ? AND environment = ?",
            arguments: [owner.uuidString, environment.rawValue]
        ).map { row in
            let name: String = row["writer_name"]
            let writer: BackupWriter = (row["writer_kind"] as String) == "admin" ? .admin(name) : .device(name)
            return BackupRecord(
                value: row["value"], lastUpdated: Millis.date(row["last_updated"]), version: row["version"],
                writer: writer)
        }
    }

    private static func columns(_ writer: BackupWriter) -> (String, String) {
        switch writer {
        case .device(let name): ("device", name)
        case .admin(let name): ("admin", name)
        }
    }

    private static func notification(_ row: Row) throws -> NotificationRecord {
        guard let outcome = NotificationOutcome(rawValue: row["outcome"]) else {
            throw StoreError.storage("corrupt outcome in notifications")
        }
        return NotificationRecord(
            uuid: row["uuid"], environment: try RowValue.environment(row), type: row["type"], subtype: row["subtype"],
            transactionId: row["transaction_id"], originalTransactionId: row["original_transaction_id"],
            owner: try (row["owner"] as String?).map { _ in try RowValue.uuid(row, "owner") },
            signedDate: Millis.date(row["signed_date"]), receivedAt: Millis.date(row["received_at"]),
            outcome: outcome, source: row["source"])
    }

    private static func admin(_ row: Row) throws -> Admin {
        Admin(
            id: try RowValue.uuid(row, "id"), name: row["name"], passwordHash: row["password_hash"],
            createdAt: Millis.date(row["created_at"]), passwordChangedAt: Millis.date(row["password_changed_at"]))
    }

    private static func adminKey(_ row: Row) -> AdminKey {
        AdminKey(
            id: row["id"], name: row["name"], publicKeyPEM: row["public_key_pem"],
            createdAt: Millis.date(row["created_at"]), revokedAt: (row["revoked_at"] as Int64?).map(Millis.date))
    }

    private static func grant(_ row: Row) throws -> Grant {
        Grant(
            id: try RowValue.uuid(row, "id"),
            environment: try RowValue.environment(row),
            recipient: try RowValue.uuid(row, "recipient"),
            credits: row["credits"], reason: row["reason"], createdBy: row["created_by"],
            createdAt: Millis.date(row["created_at"]),
            claimedAt: (row["claimed_at"] as Int64?).map(Millis.date))
    }
}
