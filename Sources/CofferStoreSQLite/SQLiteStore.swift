import CofferCore
import CofferLedgerSQLite
import CofferStore
import Foundation
import GRDB
import Synchronization

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
    let pool: DatabasePool
    /// Copies committed pages from the write-ahead log into the database file in the background (see
    /// ``init(path:durability:)``); `nil` for an in-memory database.
    private let checkpointer: Checkpointer?

    /// Opens (creating if needed) and migrates the database at `path`.
    ///
    /// The write-ahead log is checkpointed by a connection of its own shortly after each commit, not by the
    /// writer at the commit that crosses SQLite's threshold: that checkpoint (copying the log's pages into the
    /// database file, and its own fsync) would hold up every delivery waiting for the commit.
    ///
    /// - Parameters:
    ///   - path: The database file.
    ///   - durability: The commit durability; see ``SQLiteDurability``.
    ///   - pageLimit: The most pages the file may grow to (SQLite's `max_page_count`; never below its size
    ///     now), or `nil` for SQLite's own limit. A write past it fails as on a full disk.
    ///   - busyTimeout: How long a write waits for another process holding the database (`database.timeout`)
    ///     before it fails with ``StoreError/unavailable(_:)``.
    ///   - statements: Told each statement the store runs, with its values in place (the query-plan tests read
    ///     them; never set in a server: the values are customers' data).
    public init(
        path: String, durability: SQLiteDurability = .full, pageLimit: Int? = nil, busyTimeout: TimeInterval = 5,
        statements: (@Sendable (String) -> Void)? = nil
    ) throws {
        var configuration = Configuration()
        configuration.busyMode = .timeout(min(max(busyTimeout, 0.1), 300))
        configuration.label = "coffer"
        let pragma = durability == .full ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = NORMAL"
        let background = path != ":memory:"
        configuration.prepareDatabase { db in
            try db.execute(cached: pragma)
            if let pageLimit { try db.execute(cached: "PRAGMA max_page_count = \(max(1, pageLimit))") }
            // The checkpointer below does this work; a threshold of its own for the writer (20,000 pages, where
            // SQLite's default is 1,000) stays as a bound on the log's growth should the checkpointer fall behind.
            if background { try db.execute(cached: "PRAGMA wal_autocheckpoint = 20000") }
            if let statements {
                db.trace(options: .statement) { event in
                    if case .statement(let statement) = event { statements(statement.expandedSQL) }
                }
            }
        }
        // A new database is created owner-only; SQLite gives its -wal and -shm files the database's mode.
        if path != ":memory:", !FileManager.default.fileExists(atPath: path) {
            let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0o600)
            if descriptor >= 0 { close(descriptor) }
        }
        pool = try DatabasePool(path: path, configuration: configuration)
        try Self.migrator.migrate(pool)
        checkpointer = background ? try Checkpointer(path: path, configuration: configuration) : nil
    }

    /// Checks the write-ahead log into the database file from a connection of its own (SQLite's passive
    /// checkpoint: it never waits for nor blocks the writer or readers), 25 ms after a commit, so each copies a
    /// few dozen pages. Larger, rarer checkpoints make one long fsync of the database file that the commits
    /// waiting behind it on the same disk feel: every quarter second gave deliveries a p99 of 52 ms, every 25 ms
    /// 26 ms (BENCHMARKS.md). An idle store checkpoints nothing.
    private final class Checkpointer: Sendable {
        private let database: DatabaseQueue
        private let queue = DispatchQueue(label: "coffer.checkpoint")
        private let pending = Mutex(false)

        init(path: String, configuration: Configuration) throws {
            var configuration = configuration
            configuration.label = "coffer.checkpoint"
            database = try DatabaseQueue(path: path, configuration: configuration)
        }

        /// A commit happened: a checkpoint follows shortly, unless one is already on its way.
        func committed() {
            let first = pending.withLock { pending in
                defer { pending = true }
                return !pending
            }
            guard first else { return }
            queue.asyncAfter(deadline: .now() + .milliseconds(25)) { [self] in
                pending.withLock { $0 = false }
                _ = try? database.writeWithoutTransaction { db in try db.checkpoint(.passive) }
            }
        }
    }

    /// The names of the migrations applied to the database, oldest first.
    public func appliedMigrations() throws -> [String] {
        try pool.read { db in try Self.migrator.appliedMigrations(db) }
    }

    /// The journal mode and `synchronous` setting in force, for diagnostics (`("wal", 2)` for FULL).
    public func pragmas() throws -> (journalMode: String, synchronous: Int) {
        try pool.read { db in
            let mode = try String.fetchOne(db, cached: "PRAGMA journal_mode") ?? ""
            let sync = try Int.fetchOne(db, cached: "PRAGMA synchronous") ?? -1
            return (mode, sync)
        }
    }

    // MARK: Helpers

    /// Runs a write transaction, turning database failures into ``StoreError/storage(_:)``.
    func write<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        do {
            defer { checkpointer?.committed() }
            return try await pool.write(body)
        } catch let error as DatabaseError {
            throw Self.storeError(error)
        }
    }

    /// A SQLite failure as the store's: a full disk, an I/O error, a file system remounted read-only or a
    /// database held too long by another process is ``StoreError/unavailable(_:)`` (the transaction rolled back; the same request serves again
    /// once the cause is gone), anything else ``StoreError/storage(_:)``.
    static func storeError(_ error: DatabaseError) -> StoreError {
        let transient: [ResultCode] = [
            .SQLITE_FULL, .SQLITE_IOERR, .SQLITE_BUSY, .SQLITE_LOCKED, .SQLITE_NOMEM, .SQLITE_CANTOPEN,
            .SQLITE_READONLY,
        ]
        return transient.contains(error.resultCode) ? .unavailable(error.description) : .storage(error.description)
    }

    /// Runs a read on the calling thread. Reads in WAL mode never wait for the writer, and Coffer's are
    /// point lookups of microseconds: hopping to a dispatch queue and back costs more than the read.
    func read<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        do {
            return try Self.readNow(pool, body)
        } catch let error as DatabaseError {
            throw Self.storeError(error)
        }
    }

    /// Runs a read of one statement, outside a transaction: a single statement reads one consistent snapshot on its
    /// own in WAL mode, and the transaction `read` opens (its BEGIN and COMMIT, compiled at each call) would cost
    /// more than the statement.
    func readStatement<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        do {
            return try Self.readStatementNow(pool, body)
        } catch let error as DatabaseError {
            throw Self.storeError(error)
        }
    }

    /// The first row `sql` (a constant text: its statement is compiled once) selects, decoded.
    func one<T: Sendable>(
        _ sql: String, _ arguments: StatementArguments, _ decode: @escaping @Sendable (Row) throws -> T
    ) async throws -> T? {
        try await readStatement { db in
            try Row.fetchOne(db.cachedStatement(sql: sql), arguments: arguments).map(decode)
        }
    }

    /// Every row `sql` (a constant text: its statement is compiled once) selects, decoded.
    func all<T: Sendable>(
        _ sql: String, _ arguments: StatementArguments, _ decode: @escaping @Sendable (Row) throws -> T
    ) async throws -> [T] {
        try await readStatement { db in
            try Row.fetchAll(db.cachedStatement(sql: sql), arguments: arguments).map(decode)
        }
    }

    static func readNow<T>(_ pool: DatabasePool, _ body: (Database) throws -> T) throws -> T {
        try pool.read(body)
    }

    static func readStatementNow<T>(_ pool: DatabasePool, _ body: (Database) throws -> T) throws -> T {
        try pool.unsafeRead(body)
    }

    /// Whether the user lives in `environment`; with `live`, only while not deleted at the customer's request
    /// (nothing personal is written for a deleted customer; Apple's word on their transactions still is).
    static func userExists(_ db: Database, id: UUID, environment: AppStoreEnvironment, live: Bool = false) throws
        -> Bool
    {
        try Bool.fetchOne(
            db,
            cached: "SELECT EXISTS (SELECT 1 FROM \(live ? "live_users" : "users") WHERE id = ? AND environment = ?)",
            arguments: [id.uuidString, environment.rawValue]) ?? false
    }

    static func user(_ row: Row) throws -> User {
        guard let supportId = SupportID(row["support_id"] as String) else {
            throw StoreError.storage("corrupt support_id in users")
        }
        return User(
            id: try RowValue.uuid(row, "id"),
            environment: try RowValue.environment(row),
            supportId: supportId,
            tokenHash: row["token_hash"],
            appAccountToken: try RowValue.uuid(row, "app_account_token"),
            createdAt: Millis.date(row["created_at"]),
            appleAccount: try appleAccount(row),
            mergedInto: try (row["merged_into"] as String?).map { _ in try RowValue.uuid(row, "merged_into") },
            deletedAt: (row["deleted_at"] as Int64?).map(Millis.date))
    }

    /// The `app_transaction_id` and `app_transaction_environment` columns.
    static func appleAccount(_ row: Row) throws -> AppleAccount? {
        guard let id = row["app_transaction_id"] as String? else { return nil }
        guard let environment = AppStoreEnvironment(rawValue: row["app_transaction_environment"] ?? "") else {
            throw StoreError.storage("corrupt app_transaction_environment in users")
        }
        return AppleAccount(appTransactionId: id, environment: environment)
    }

    static func backup(_ db: Database, owner: UUID, environment: AppStoreEnvironment) throws -> BackupRecord? {
        try Row.fetchOne(
            db, cached: "SELECT * FROM backups WHERE owner = ? AND environment = ?",
            arguments: [owner.uuidString, environment.rawValue]
        ).map { row in
            let name: String = row["writer_name"]
            let writer: BackupWriter = (row["writer_kind"] as String) == "admin" ? .admin(name) : .device(name)
            return BackupRecord(
                value: row["value"], lastUpdated: Millis.date(row["last_updated"]), version: row["version"],
                writer: writer, deficit: row["deficit"], applied: try BackupApplied.keys(row["applied"]),
                currencies: try BackupCurrencies.wallets(row["currencies"]))
        }
    }

    static func columns(_ writer: BackupWriter) -> (String, String) {
        switch writer {
        case .device(let name): ("device", name)
        case .admin(let name): ("admin", name)
        }
    }

    static func notification(_ row: Row) throws -> NotificationRecord {
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

    static func admin(_ row: Row) throws -> Admin {
        Admin(
            id: try RowValue.uuid(row, "id"), name: row["name"], passwordHash: row["password_hash"],
            createdAt: Millis.date(row["created_at"]), passwordChangedAt: Millis.date(row["password_changed_at"]),
            timeZone: row["time_zone"], role: AdminRole(rawValue: row["role"]) ?? .support,
            grantLimit: row["grant_limit"], twoFactorSecret: row["two_factor_secret"],
            twoFactorLastStep: row["two_factor_last_step"],
            recoveryCodeHashes: AdminColumns.codes(row["recovery_codes"]),
            disabledAt: (row["disabled_at"] as Int64?).map(Millis.date))
    }

    static func adminKey(_ row: Row) -> AdminKey {
        AdminKey(
            id: row["id"], name: row["name"], publicKeyPEM: row["public_key_pem"],
            createdAt: Millis.date(row["created_at"]), revokedAt: (row["revoked_at"] as Int64?).map(Millis.date),
            role: AdminRole(rawValue: row["role"]) ?? .support, grantLimit: row["grant_limit"])
    }

    static func grant(_ row: Row) throws -> Grant {
        Grant(
            id: try RowValue.uuid(row, "id"),
            environment: try RowValue.environment(row),
            recipient: try RowValue.uuid(row, "recipient"),
            credits: row["credits"], reason: row["reason"], createdBy: row["created_by"],
            createdAt: Millis.date(row["created_at"]),
            claimedAt: (row["claimed_at"] as Int64?).map(Millis.date),
            cancelledAt: (row["cancelled_at"] as Int64?).map(Millis.date), cancelledBy: row["cancelled_by"],
            currency: try (row["credit_currency"] as String?).map(Self.currency),
            expiresInDays: row["expires_in_days"])
    }
}
