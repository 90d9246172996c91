import CofferCore
import CofferStore
import Foundation
import Logging
import NIOSSL
import PostgresNIO

/// The ``CofferStore`` for several server instances: PostgreSQL through postgres-nio. Migrates when
/// opened (under an advisory lock, so instances starting together migrate once).
///
/// Concurrency: every ledger write locks the user's wallet row first (`SELECT ... FOR UPDATE`), so one
/// user's requests apply one at a time across all instances; unique keys (a receipt per environment and
/// transaction id, an entry per user and key) catch the rest, and a transaction that loses such a race is
/// rolled back and run again from the start, where it sees the winner's commit.
///
/// ```swift
/// let store = try await PostgresStore(url: "postgres://coffer:secret@127.0.0.1:5432/coffer")
/// ```
public final class PostgresStore: CofferStore {
    private let client: PostgresClient
    private let runner: Task<Void, Never>
    private let logger: Logger

    /// Connects (the pool opens connections as needed) and migrates.
    ///
    /// - Parameters:
    ///   - url: `postgres://user:password@host:port/database`, with `?sslmode=disable|prefer|require|verify-full`
    ///     (default prefer) and `sslrootcert=PATH` as libpq takes them (see ``configuration(url:)``).
    ///   - maximumConnections: The pool's size.
    ///   - startupTimeout: How long opening may take (connecting and migrating) before it fails.
    ///   - logger: Where the pool logs.
    /// - Throws: ``StoreError/storage(_:)`` when the URL does not parse, the server does not answer in
    ///   time, or the database cannot be migrated.
    public init(
        url: String, maximumConnections: Int = 20, startupTimeout: Duration = .seconds(30),
        logger: Logger = Logger(label: "coffer.postgres")
    ) async throws {
        var configuration = try Self.configuration(url: url)
        configuration.options.maximumConnections = maximumConnections
        configuration.options.connectTimeout = min(startupTimeout, .seconds(10))
        let client = PostgresClient(configuration: configuration, backgroundLogger: logger)
        self.client = client
        self.logger = logger
        runner = Task { await client.run() }
        let target = "\(configuration.host ?? "?"):\(configuration.port ?? 5432)"
        do {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await PostgresMigrations.migrate(client, logger: logger) }
                group.addTask {
                    try await Task.sleep(for: startupTimeout)
                    throw StoreError.storage("PostgreSQL at \(target) did not answer within \(startupTimeout)")
                }
                try await group.next()
                group.cancelAll()
            }
        } catch {
            runner.cancel()
            throw error
        }
    }

    /// Closes the pool; the store cannot be used afterwards.
    public func close() {
        runner.cancel()
    }

    deinit { runner.cancel() }

    /// Parses a `postgres://` URL. Its `sslmode` query parameter works as libpq's: `disable` (plain),
    /// `prefer` (the default: TLS when the server offers it, unverified, else plain), `require` (TLS,
    /// unverified; with `sslrootcert`, as `verify-ca`), `verify-ca` (TLS, the certificate verified against the
    /// system's roots or the CA file in `sslrootcert`), `verify-full` (as `verify-ca`, and the host name
    /// checked).
    public static func configuration(url: String) throws -> PostgresClient.Configuration {
        guard let components = URLComponents(string: url),
            ["postgres", "postgresql"].contains(components.scheme ?? ""),
            let host = components.host, !host.isEmpty, let user = components.user
        else {
            throw StoreError.storage("not a postgres://user:password@host:port/database URL")
        }
        let database = components.path.hasPrefix("/") ? String(components.path.dropFirst()) : components.path
        let query = components.queryItems ?? []
        let mode = query.last { $0.name == "sslmode" }?.value ?? "prefer"
        let rootCertificate = query.last { $0.name == "sslrootcert" }?.value
        var unverified = TLSConfiguration.makeClientConfiguration()
        unverified.certificateVerification = .none
        let tls: PostgresClient.Configuration.TLS
        switch mode {
        case "disable": tls = .disable
        case "prefer": tls = .prefer(unverified)
        case "require" where rootCertificate == nil: tls = .require(unverified)
        case "require", "verify-ca", "verify-full":
            // As libpq: `require` with a root certificate file verifies the chain like `verify-ca`.
            var verified = TLSConfiguration.makeClientConfiguration()
            verified.certificateVerification = mode == "verify-full" ? .fullVerification : .noHostnameVerification
            if let rootCertificate { verified.trustRoots = .file(rootCertificate) }
            tls = .require(verified)
        default:
            throw StoreError.storage("sslmode \(mode) is not one of disable, prefer, require, verify-ca or verify-full")
        }
        return PostgresClient.Configuration(
            host: host, port: components.port ?? 5432, username: user.removingPercentEncoding ?? user,
            password: components.password?.removingPercentEncoding, database: database.isEmpty ? nil : database,
            tls: tls)
    }

    /// The names of the migrations applied to the database, oldest first.
    public func appliedMigrations() async throws -> [String] {
        try await read { connection in
            try await PostgresMigrations.applied(connection, logger: self.logger)
        }
    }

    // MARK: Users

    /// Adds a user. Throws ``StoreError/alreadyExists(_:)`` when the Support ID, token hash or
    /// `appAccountToken` is taken.
    public func createUser(_ user: User) async throws {
        try await write { connection in
            do {
                try await connection.query(
                    """
                    INSERT INTO users (id, environment, support_id, token_hash, app_account_token, created_at)
                    VALUES (\(user.id.uuidString), \(user.environment.rawValue), \(user.supportId.rawValue),
                        \(user.tokenHash), \(user.appAccountToken.uuidString), \(Millis.from(user.createdAt)))
                    """, logger: self.logger)
                try await connection.query(
                    "INSERT INTO wallets (user_id, balance, deficit) VALUES (\(user.id.uuidString), 0, 0)",
                    logger: self.logger)
            } catch let error as PSQLError where error.sqlState == "23505" {
                throw StoreError.alreadyExists("user (\(error.serverInfo?[.message] ?? "unique constraint"))")
            }
        }
    }

    /// The user with this id.
    public func user(id: UUID) async throws -> User? {
        try await first("SELECT * FROM users WHERE id = \(id.uuidString)", Rows.user)
    }

    /// The user with this Support ID in an environment.
    public func user(supportId: SupportID, environment: Environment) async throws -> User? {
        try await first(
            "SELECT * FROM users WHERE environment = \(environment.rawValue) AND support_id = \(supportId.rawValue)",
            Rows.user)
    }

    /// The user whose token hashes to `tokenHash`.
    public func user(tokenHash: String) async throws -> User? {
        try await first("SELECT * FROM users WHERE token_hash = \(tokenHash)", Rows.user)
    }

    /// The user who owns this `appAccountToken` in an environment.
    public func user(appAccountToken: UUID, environment: Environment) async throws -> User? {
        try await first(
            """
            SELECT * FROM users WHERE environment = \(environment.rawValue)
            AND app_account_token = \(appAccountToken.uuidString)
            """, Rows.user)
    }

    /// Users of an environment, newest first, optionally whose Support ID starts with `supportIdPrefix`
    /// (case-insensitive).
    public func users(environment: Environment, supportIdPrefix: String?, limit: Int, offset: Int) async throws
        -> [User]
    {
        let prefix = supportIdPrefix?.lowercased() ?? ""
        // A range in byte order, which the v5 index serves: Support IDs hold only `_`, 0-9 and a-f, so every ID
        // with the prefix sorts below prefix + DEL.
        let end = prefix + "\u{7F}"
        return try await all(
            """
            SELECT * FROM users WHERE environment = \(environment.rawValue)
                AND support_id COLLATE "C" >= \(prefix) AND support_id COLLATE "C" < \(end)
            ORDER BY created_at DESC, support_id COLLATE "C" DESC LIMIT \(max(0, limit)) OFFSET \(max(0, offset))
            """, Rows.user)
    }

    /// How many users an environment has.
    public func userCount(environment: Environment) async throws -> Int {
        try await first("SELECT count(*) FROM users WHERE environment = \(environment.rawValue)") {
            Int(try $0.decode(Int64.self))
        } ?? 0
    }

    // MARK: Ledger

    /// Applies ledger requests in order, all in one durable commit (group commit). A request the ledger
    /// refuses gets its ``LedgerError`` and changes nothing; the others still apply.
    public func apply(_ requests: [LedgerRequest]) async throws -> [Result<LedgerResult, LedgerError>] {
        try await write { connection in
            var results: [Result<LedgerResult, LedgerError>] = []
            for request in requests {
                // The ledger refuses before it writes, so a refusal leaves the batch's other requests untouched.
                let context = PostgresLedgerContext(connection: connection, logger: self.logger)
                results.append(try await LedgerWriter.apply(request, in: context))
            }
            return results
        }
    }

    /// A user's wallet (empty for a user with no entries).
    public func wallet(owner: UUID, environment: Environment) async throws -> Wallet {
        try await first(
            """
            SELECT w.balance, w.deficit FROM users u JOIN wallets w ON w.user_id = u.id
            WHERE u.id = \(owner.uuidString) AND u.environment = \(environment.rawValue)
            """
        ) { row in
            let (balance, deficit) = try row.decode((Int64, Int64).self)
            return Wallet(balance: balance, deficit: deficit)
        } ?? .empty
    }

    /// A user's ledger entries, oldest first.
    public func entries(owner: UUID, environment: Environment) async throws -> [LedgerEntry] {
        try await all(
            """
            SELECT * FROM ledger_entries WHERE environment = \(environment.rawValue) AND owner = \(owner.uuidString)
            ORDER BY seq
            """, Rows.entry)
    }

    /// A user's ledger entries of some kinds, oldest first.
    public func entries(owner: UUID, environment: Environment, kinds: Set<LedgerEntryKind>) async throws
        -> [LedgerEntry]
    {
        guard !kinds.isEmpty else { return [] }
        return try await all(
            """
            SELECT * FROM ledger_entries WHERE environment = \(environment.rawValue) AND owner = \(owner.uuidString)
            AND kind = ANY(\(kinds.map(\.rawValue).sorted()))
            ORDER BY seq
            """, Rows.entry)
    }

    /// The receipt of a transaction.
    public func receipt(transactionId: String, environment: Environment) async throws -> Receipt? {
        try await first(
            """
            SELECT * FROM receipts WHERE environment = \(environment.rawValue) AND transaction_id = \(transactionId)
            """, Rows.receipt)
    }

    /// A user's receipts, oldest purchase first.
    public func receipts(owner: UUID, environment: Environment) async throws -> [Receipt] {
        try await all(
            """
            SELECT * FROM receipts WHERE environment = \(environment.rawValue) AND owner = \(owner.uuidString)
            ORDER BY purchase_date, transaction_id COLLATE "C"
            """, Rows.receipt)
    }

    /// A user's receipts of the given products, oldest purchase first.
    public func receipts(owner: UUID, environment: Environment, productIds: Set<String>) async throws -> [Receipt] {
        guard !productIds.isEmpty else { return [] }
        return try await all(
            """
            SELECT * FROM receipts WHERE owner = \(owner.uuidString) AND product_id = ANY(\(productIds.sorted()))
            AND environment = \(environment.rawValue)
            ORDER BY purchase_date, transaction_id COLLATE "C"
            """, Rows.receipt)
    }

    /// The receipts of one subscription chain (or one non-renewing transaction), oldest purchase first.
    public func receipts(originalTransactionId: String, environment: Environment) async throws -> [Receipt] {
        try await all(
            """
            SELECT * FROM receipts WHERE environment = \(environment.rawValue)
            AND original_transaction_id = \(originalTransactionId)
            ORDER BY purchase_date, transaction_id COLLATE "C"
            """, Rows.receipt)
    }

    // MARK: Backups

    /// A user's backup.
    public func backup(owner: UUID, environment: Environment) async throws -> BackupRecord? {
        try await first(
            "SELECT * FROM backups WHERE owner = \(owner.uuidString) AND environment = \(environment.rawValue)",
            Rows.backup)
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
        try await write { connection in
            // The wallet row is the user's lock, as for ledger writes.
            guard
                try await Self.exists(
                    connection,
                    """
                    SELECT 1 FROM users u JOIN wallets w ON w.user_id = u.id
                    WHERE u.id = \(owner.uuidString) AND u.environment = \(environment.rawValue) FOR UPDATE OF w
                    """, logger: self.logger)
            else { throw StoreError.notFound("user \(owner)") }
            let current = try await Self.first(
                connection,
                "SELECT * FROM backups WHERE owner = \(owner.uuidString) AND environment = \(environment.rawValue)",
                logger: self.logger, Rows.backup)
            guard let record = precondition.write(over: current, value: value, writer: writer, at: at) else {
                return .conflict(current: current)
            }
            let (kind, name) = Rows.columns(record.writer)
            try await connection.query(
                """
                INSERT INTO backups (owner, environment, value, last_updated, version, writer_kind, writer_name)
                VALUES (\(owner.uuidString), \(environment.rawValue), \(value), \(Millis.from(at)), \(record.version),
                    \(kind), \(name))
                ON CONFLICT (owner) DO UPDATE SET value = excluded.value, last_updated = excluded.last_updated,
                    version = excluded.version, writer_kind = excluded.writer_kind, writer_name = excluded.writer_name
                """, logger: self.logger)
            try await connection.query(
                """
                INSERT INTO backup_history (owner, environment, value, previous_value, last_updated, version,
                    writer_kind, writer_name)
                VALUES (\(owner.uuidString), \(environment.rawValue), \(value), \(current?.value), \(Millis.from(at)),
                    \(record.version), \(kind), \(name))
                """, logger: self.logger)
            try await connection.query(
                """
                DELETE FROM backup_history WHERE owner = \(owner.uuidString) AND environment = \(environment.rawValue)
                AND seq <= (
                    SELECT seq FROM backup_history WHERE owner = \(owner.uuidString)
                    AND environment = \(environment.rawValue) ORDER BY seq DESC LIMIT 1 OFFSET \(BackupHistoryItem.kept))
                """, logger: self.logger)
            return .saved(record)
        }
    }

    // MARK: Grants

    /// Adds a grant.
    public func createGrant(_ grant: Grant) async throws {
        try await write { connection in
            guard
                try await Self.exists(
                    connection,
                    """
                    SELECT 1 FROM users WHERE id = \(grant.recipient.uuidString)
                    AND environment = \(grant.environment.rawValue)
                    """, logger: self.logger)
            else { throw StoreError.notFound("user \(grant.recipient)") }
            do {
                try await connection.query(
                    """
                    INSERT INTO grants (id, environment, recipient, credits, reason, created_by, created_at, claimed_at)
                    VALUES (\(grant.id.uuidString), \(grant.environment.rawValue), \(grant.recipient.uuidString),
                        \(grant.credits), \(grant.reason), \(grant.createdBy), \(Millis.from(grant.createdAt)),
                        \(grant.claimedAt.map(Millis.from)))
                    """, logger: self.logger)
            } catch let error as PSQLError where error.sqlState == "23505" {
                throw StoreError.alreadyExists("grant \(grant.id)")
            }
        }
    }

    /// Grants of an environment, newest first, optionally for one recipient and one status.
    public func grants(environment: Environment, recipient: UUID?, status: GrantStatus?, limit: Int) async throws
        -> [Grant]
    {
        let statusName = status?.rawValue
        return try await all(
            """
            SELECT * FROM grants WHERE environment = \(environment.rawValue)
            AND (\(recipient?.uuidString)::text IS NULL OR recipient = \(recipient?.uuidString))
            AND (\(statusName)::text IS NULL
                OR (\(statusName) = 'pending' AND claimed_at IS NULL)
                OR (\(statusName) = 'claimed' AND claimed_at IS NOT NULL))
            ORDER BY created_at DESC, id COLLATE "C" DESC LIMIT \(max(0, limit))
            """, Rows.grant)
    }

    /// Marks a grant claimed by its recipient; claiming again returns it unchanged. With a `policy`, the
    /// grant's credits are applied to the ledger (`grant:<id>`) in the same commit (server wallet).
    public func claimGrant(
        id: UUID,
        recipient: UUID,
        environment: Environment,
        crediting policy: DeficitPolicy?,
        at: Date
    ) async throws -> Grant {
        try await write { connection in
            guard
                var grant = try await Self.first(
                    connection,
                    """
                    SELECT * FROM grants WHERE id = \(id.uuidString) AND environment = \(environment.rawValue)
                    FOR UPDATE
                    """, logger: self.logger, Rows.grant)
            else { throw StoreError.notFound("grant \(id)") }
            guard grant.recipient == recipient else { throw StoreError.wrongUser("grant \(id)") }
            guard grant.claimedAt == nil else { return grant }
            if let policy {
                let request = LedgerRequest(
                    owner: recipient, environment: environment,
                    event: .grant(id: id.uuidString.lowercased(), credits: grant.credits, reason: grant.reason),
                    policy: policy, at: at)
                let context = PostgresLedgerContext(connection: connection, logger: self.logger)
                _ = try await LedgerWriter.apply(request, in: context).get()
            }
            grant.claimedAt = at
            try await connection.query(
                "UPDATE grants SET claimed_at = \(Millis.from(at)) WHERE id = \(id.uuidString)", logger: self.logger)
            return grant
        }
    }

    // MARK: Notifications

    /// Records a notification unless one with its `notificationUUID` is recorded in its environment.
    public func recordNotification(_ record: NotificationRecord) async throws -> Bool {
        try await write { connection in
            try await Self.exists(
                connection,
                """
                INSERT INTO notifications (environment, uuid, type, subtype, transaction_id, original_transaction_id,
                    owner, signed_date, received_at, outcome, source)
                VALUES (\(record.environment.rawValue), \(record.uuid), \(record.type), \(record.subtype),
                    \(record.transactionId), \(record.originalTransactionId), \(record.owner?.uuidString),
                    \(Millis.from(record.signedDate)), \(Millis.from(record.receivedAt)), \(record.outcome.rawValue),
                    \(record.source))
                ON CONFLICT (environment, uuid) DO NOTHING RETURNING 1
                """, logger: self.logger)
        }
    }

    /// The notification with this `notificationUUID`.
    public func notification(uuid: String, environment: Environment) async throws -> NotificationRecord? {
        try await first(
            "SELECT * FROM notifications WHERE environment = \(environment.rawValue) AND uuid = \(uuid)",
            Rows.notification)
    }

    /// Notifications of an environment, latest received first, optionally about one transaction or with
    /// one outcome.
    public func notifications(
        environment: Environment, transactionId: String?, outcome: NotificationOutcome?, limit: Int
    ) async throws -> [NotificationRecord] {
        try await all(
            """
            SELECT * FROM notifications WHERE environment = \(environment.rawValue)
            AND (\(transactionId)::text IS NULL OR transaction_id = \(transactionId)
                OR original_transaction_id = \(transactionId))
            AND (\(outcome?.rawValue)::text IS NULL OR outcome = \(outcome?.rawValue))
            ORDER BY received_at DESC, seq DESC LIMIT \(max(0, limit))
            """, Rows.notification)
    }

    /// Saves a subscription chain's renewal state unless the stored one was signed later.
    public func saveRenewalState(_ state: RenewalState) async throws -> Bool {
        try await write { connection in
            guard
                try await Self.exists(
                    connection,
                    """
                    SELECT 1 FROM users WHERE id = \(state.owner.uuidString)
                    AND environment = \(state.environment.rawValue)
                    """, logger: self.logger)
            else { throw StoreError.notFound("user \(state.owner)") }
            return try await Self.exists(
                connection,
                """
                INSERT INTO renewal_states (environment, original_transaction_id, owner, auto_renew_product_id,
                    auto_renews, in_billing_retry, grace_period_expires_date, signed_date)
                VALUES (\(state.environment.rawValue), \(state.originalTransactionId), \(state.owner.uuidString),
                    \(state.autoRenewProductId), \(state.autoRenews), \(state.inBillingRetry),
                    \(state.gracePeriodExpiresDate.map(Millis.from)), \(Millis.from(state.signedDate)))
                ON CONFLICT (environment, original_transaction_id) DO UPDATE SET
                    owner = excluded.owner, auto_renew_product_id = excluded.auto_renew_product_id,
                    auto_renews = excluded.auto_renews, in_billing_retry = excluded.in_billing_retry,
                    grace_period_expires_date = excluded.grace_period_expires_date, signed_date = excluded.signed_date
                WHERE excluded.signed_date >= renewal_states.signed_date
                RETURNING 1
                """, logger: self.logger)
        }
    }

    /// The renewal states of a user's subscription chains.
    public func renewalStates(owner: UUID, environment: Environment) async throws -> [RenewalState] {
        try await all(
            """
            SELECT * FROM renewal_states WHERE environment = \(environment.rawValue) AND owner = \(owner.uuidString)
            ORDER BY original_transaction_id COLLATE "C"
            """, Rows.renewalState)
    }

    /// A named position of a background service.
    public func cursor(_ name: String, environment: Environment) async throws -> String? {
        try await first(
            "SELECT value FROM cursors WHERE environment = \(environment.rawValue) AND name = \(name)"
        ) { try $0.decode(String.self) }
    }

    /// Saves a named position.
    public func saveCursor(_ name: String, value: String, environment: Environment) async throws {
        try await write { connection in
            try await connection.query(
                """
                INSERT INTO cursors (environment, name, value) VALUES (\(environment.rawValue), \(name), \(value))
                ON CONFLICT (environment, name) DO UPDATE SET value = excluded.value
                """, logger: self.logger)
        }
    }

    // MARK: Audit

    /// Appends an audit event.
    public func recordAudit(_ event: AuditEvent) async throws {
        try await write { connection in
            try await connection.query(
                """
                INSERT INTO audit_events (id, environment, actor, action, subject, before, after, at)
                VALUES (\(event.id.uuidString), \(event.environment.rawValue), \(event.actor), \(event.action),
                    \(event.subject), \(event.before), \(event.after), \(Millis.from(event.at)))
                """, logger: self.logger)
        }
    }

    /// Audit events of an environment, newest first; with a `subject`, only those about it.
    public func auditEvents(environment: Environment, subject: String?, limit: Int) async throws -> [AuditEvent] {
        if let subject {
            return try await all(
                """
                SELECT * FROM audit_events WHERE environment = \(environment.rawValue) AND subject = \(subject)
                ORDER BY seq DESC LIMIT \(max(0, limit))
                """, Rows.audit)
        }
        return try await all(
            """
            SELECT * FROM audit_events WHERE environment = \(environment.rawValue) ORDER BY seq DESC
            LIMIT \(max(0, limit))
            """, Rows.audit)
    }

    // MARK: Support

    /// The backups a user's devices and admins wrote, newest first.
    public func backupHistory(owner: UUID, environment: Environment, limit: Int) async throws -> [BackupHistoryItem] {
        try await all(
            """
            SELECT * FROM backup_history WHERE owner = \(owner.uuidString) AND environment = \(environment.rawValue)
            ORDER BY seq DESC LIMIT \(max(0, limit))
            """, Rows.backupHistoryItem)
    }

    /// The dashboard's figures for an environment.
    public func dashboard(environment: Environment, days: Int, now: Date) async throws -> DashboardFigures {
        let start = DashboardFigures.windowStart(days: days, endingAt: now)
        let env = environment.rawValue
        let since = Millis.from(start)
        return try await read { connection in
            let totals = try await Self.first(
                connection,
                """
                SELECT
                    (SELECT count(*) FROM users WHERE environment = \(env)) AS users,
                    (SELECT count(*) FROM grants WHERE environment = \(env) AND claimed_at IS NULL) AS pending,
                    (SELECT count(*) FROM grants WHERE environment = \(env) AND claimed_at IS NOT NULL) AS claimed,
                    (SELECT count(*) FROM receipts WHERE environment = \(env) AND delivered_at IS NOT NULL) AS purchases,
                    (SELECT count(*) FROM receipts WHERE environment = \(env) AND revoked_at IS NOT NULL
                        AND (reversed_at IS NULL OR revoked_at > reversed_at)) AS refunds,
                    (SELECT count(*) FROM wallets w JOIN users u ON u.id = w.user_id
                        WHERE u.environment = \(env) AND w.deficit > 0) AS in_deficit,
                    (SELECT COALESCE(SUM(w.deficit), 0)::BIGINT FROM wallets w JOIN users u ON u.id = w.user_id
                        WHERE u.environment = \(env) AND w.deficit > 0) AS deficit
                """, logger: self.logger
            ) { row -> [Int64] in
                let row = row.makeRandomAccess()
                return try ["users", "pending", "claimed", "purchases", "refunds", "in_deficit", "deficit"].map {
                    try Rows.value(row, $0, as: Int64.self)
                }
            }
            guard let totals else { throw StoreError.storage("no dashboard row") }
            var purchases: [Int64: Int] = [:]
            var refunds: [Int64: Int] = [:]
            let rows = try await connection.query(
                """
                SELECT 'p' AS kind, delivered_at / 86400000 AS day, count(*) AS n FROM receipts
                WHERE environment = \(env) AND delivered_at >= \(since) GROUP BY day
                UNION ALL
                SELECT 'r' AS kind, revoked_at / 86400000 AS day, count(*) AS n FROM receipts
                WHERE environment = \(env) AND revoked_at >= \(since)
                    AND (reversed_at IS NULL OR revoked_at > reversed_at) GROUP BY day
                """, logger: self.logger)
            for try await (kind, day, n) in rows.decode((String, Int64, Int64).self) {
                if kind == "p" { purchases[day] = Int(n) } else { refunds[day] = Int(n) }
            }
            return DashboardFigures(
                users: Int(totals[0]), pendingGrants: Int(totals[1]), claimedGrants: Int(totals[2]),
                purchases: Int(totals[3]), refunds: Int(totals[4]), usersInDeficit: Int(totals[5]),
                outstandingDeficit: totals[6],
                days: DashboardFigures.fill(days: days, from: start, purchases: purchases, refunds: refunds))
        }
    }

    /// Deletes every grant of an environment.
    public func deleteGrants(environment: Environment) async throws -> Int {
        try await write { connection in
            try await Self.count(
                connection,
                """
                WITH deleted AS (DELETE FROM grants WHERE environment = \(environment.rawValue) RETURNING 1)
                SELECT count(*) FROM deleted
                """, logger: self.logger)
        }
    }

    // MARK: Admins

    /// Adds an admin.
    public func createAdmin(_ admin: Admin) async throws {
        try await write { connection in
            do {
                try await connection.query(
                    """
                    INSERT INTO admins (id, name, password_hash, created_at, password_changed_at)
                    VALUES (\(admin.id.uuidString), \(admin.name), \(admin.passwordHash), \(Millis.from(admin.createdAt)),
                        \(Millis.from(admin.passwordChangedAt)))
                    """, logger: self.logger)
            } catch let error as PSQLError where error.sqlState == "23505" {
                throw StoreError.alreadyExists("admin \(admin.name)")
            }
        }
    }

    /// The admin with this name.
    public func admin(name: String) async throws -> Admin? {
        try await first("SELECT * FROM admins WHERE name = \(name)", Rows.admin)
    }

    /// Every admin, by name.
    public func admins() async throws -> [Admin] {
        try await all("SELECT * FROM admins ORDER BY name", Rows.admin)
    }

    /// Sets an admin's password hash and ends the admin's sessions.
    public func setAdminPassword(name: String, passwordHash: String, at: Date) async throws -> Bool {
        try await write { connection in
            guard
                let id = try await Self.first(
                    connection,
                    """
                    UPDATE admins SET password_hash = \(passwordHash), password_changed_at = \(Millis.from(at))
                    WHERE name = \(name) RETURNING id
                    """, logger: self.logger, { try $0.decode(String.self) })
            else { return false }
            try await connection.query("DELETE FROM admin_sessions WHERE admin_id = \(id)", logger: self.logger)
            return true
        }
    }

    /// Stores a new session.
    public func createSession(_ session: AdminSession) async throws {
        try await write { connection in
            do {
                try await connection.query(
                    """
                    INSERT INTO admin_sessions (token_hash, admin_id, admin_name, csrf_token, environment, created_at,
                        expires_at)
                    VALUES (\(session.tokenHash), \(session.adminId.uuidString), \(session.adminName), \(session.csrfToken),
                        \(session.environment.rawValue), \(Millis.from(session.createdAt)), \(Millis.from(session.expiresAt)))
                    """, logger: self.logger)
            } catch let error as PSQLError where error.sqlState == "23505" {
                throw StoreError.alreadyExists("session")
            }
        }
    }

    /// The session with this token hash.
    public func session(tokenHash: String) async throws -> AdminSession? {
        try await first("SELECT * FROM admin_sessions WHERE token_hash = \(tokenHash)", Rows.session)
    }

    /// Switches a session's environment.
    public func setSessionEnvironment(tokenHash: String, environment: Environment) async throws {
        try await write { connection in
            try await connection.query(
                "UPDATE admin_sessions SET environment = \(environment.rawValue) WHERE token_hash = \(tokenHash)",
                logger: self.logger)
        }
    }

    /// Ends a session.
    public func deleteSession(tokenHash: String) async throws {
        try await write { connection in
            try await connection.query(
                "DELETE FROM admin_sessions WHERE token_hash = \(tokenHash)", logger: self.logger)
        }
    }

    /// Ends sessions that expired before `date`.
    public func deleteSessions(expiredBefore date: Date) async throws -> Int {
        try await write { connection in
            try await Self.count(
                connection,
                """
                WITH deleted AS (DELETE FROM admin_sessions WHERE expires_at < \(Millis.from(date)) RETURNING 1)
                SELECT count(*) FROM deleted
                """, logger: self.logger)
        }
    }

    /// Adds a request-signing key.
    public func createAdminKey(_ key: AdminKey) async throws {
        try await write { connection in
            do {
                try await connection.query(
                    """
                    INSERT INTO admin_keys (id, name, public_key_pem, created_at, revoked_at)
                    VALUES (\(key.id), \(key.name), \(key.publicKeyPEM), \(Millis.from(key.createdAt)),
                        \(key.revokedAt.map(Millis.from)))
                    """, logger: self.logger)
            } catch let error as PSQLError where error.sqlState == "23505" {
                throw StoreError.alreadyExists("key \(key.id)")
            }
        }
    }

    /// The key with this id.
    public func adminKey(id: String) async throws -> AdminKey? {
        try await first("SELECT * FROM admin_keys WHERE id = \(id)", Rows.adminKey)
    }

    /// Every key, oldest first.
    public func adminKeys() async throws -> [AdminKey] {
        try await all("SELECT * FROM admin_keys ORDER BY created_at, id", Rows.adminKey)
    }

    /// Revokes a key.
    public func revokeAdminKey(id: String, at: Date) async throws -> Bool {
        try await write { connection in
            try await Self.exists(
                connection,
                """
                UPDATE admin_keys SET revoked_at = \(Millis.from(at)) WHERE id = \(id) AND revoked_at IS NULL
                RETURNING id
                """, logger: self.logger)
        }
    }

    /// Remembers a signature; `false` when seen before.
    public func recordSignature(_ digest: String, at: Date, forgetBefore: Date) async throws -> Bool {
        try await write { connection in
            try await connection.query(
                "DELETE FROM admin_signatures WHERE seen_at < \(Millis.from(forgetBefore))", logger: self.logger)
            return try await Self.exists(
                connection,
                """
                INSERT INTO admin_signatures (digest, seen_at) VALUES (\(digest), \(Millis.from(at)))
                ON CONFLICT (digest) DO NOTHING RETURNING digest
                """, logger: self.logger)
        }
    }

    // MARK: Helpers

    /// Runs `body` in a transaction; a transaction that lost a race (a unique key taken by a concurrent
    /// commit, a serialization failure or a deadlock) is rolled back and run again.
    private func write<T: Sendable>(_ body: (PostgresConnection) async throws -> T) async throws -> T {
        var attempt = 0
        while true {
            attempt += 1
            do {
                return try await client.withConnection { connection in
                    try await connection.query("BEGIN", logger: logger)
                    do {
                        let value = try await body(connection)
                        try await connection.query("COMMIT", logger: logger)
                        return value
                    } catch {
                        _ = try? await connection.query("ROLLBACK", logger: logger)
                        throw error
                    }
                }
            } catch let error as PSQLError where Self.isRace(error) && attempt < 20 {
                // Jittered back-off, so racing transactions do not collide again at once.
                try await Task.sleep(for: .milliseconds(Int.random(in: 1...(5 * attempt))))
            } catch is LostRace where attempt < 20 {
                try await Task.sleep(for: .milliseconds(Int.random(in: 1...(5 * attempt))))
            } catch let error as PSQLError {
                throw StoreError.storage(Self.describe(error))
            } catch is LostRace {
                throw StoreError.storage("gave up after \(attempt) conflicting attempts")
            }
        }
    }

    private func read<T: Sendable>(_ body: (PostgresConnection) async throws -> T) async throws -> T {
        do {
            return try await client.withConnection { connection in try await body(connection) }
        } catch let error as PSQLError {
            throw StoreError.storage(Self.describe(error))
        }
    }

    private func first<T: Sendable>(_ query: PostgresQuery, _ decode: (PostgresRow) throws -> T) async throws -> T? {
        try await read { connection in try await Self.first(connection, query, logger: self.logger, decode) }
    }

    private func all<T: Sendable>(_ query: PostgresQuery, _ decode: (PostgresRow) throws -> T) async throws -> [T] {
        try await read { connection in
            var values: [T] = []
            for try await row in try await connection.query(query, logger: self.logger) {
                values.append(try decode(row))
            }
            return values
        }
    }

    static func first<T>(
        _ connection: PostgresConnection, _ query: PostgresQuery, logger: Logger, _ decode: (PostgresRow) throws -> T
    ) async throws -> T? {
        for try await row in try await connection.query(query, logger: logger) { return try decode(row) }
        return nil
    }

    /// The single integer a counting query returns.
    static func count(_ connection: PostgresConnection, _ query: PostgresQuery, logger: Logger) async throws -> Int {
        Int(try await first(connection, query, logger: logger) { try $0.decode(Int64.self) } ?? 0)
    }

    /// Whether the query returns a row.
    static func exists(_ connection: PostgresConnection, _ query: PostgresQuery, logger: Logger) async throws -> Bool {
        try await first(connection, query, logger: logger) { _ in true } ?? false
    }

    static func isRace(_ error: PSQLError) -> Bool {
        ["23505", "40001", "40P01"].contains(error.sqlState ?? "")
    }

    static func describe(_ error: PSQLError) -> String {
        if let message = error.serverInfo?[.message] {
            return "\(message) (SQLSTATE \(error.sqlState ?? "?"))"
        }
        return "\(error.code)"
    }
}

/// Thrown inside a write when what it read has changed under it: the write is run again.
struct LostRace: Error {}

extension PSQLError {
    /// The server's SQLSTATE, e.g. `23505` for a unique violation.
    var sqlState: String? { serverInfo?[.sqlState] }
}
