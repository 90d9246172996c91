import CofferCore
import CofferStore
import Foundation
import Logging
import NIOSSL
import PostgresNIO
import ServiceLifecycle
import Synchronization

/// The ``CofferStore`` for several server instances: PostgreSQL through postgres-nio. Migrates when
/// opened (under an advisory lock, so instances starting together migrate once).
///
/// Concurrency: every ledger write locks the user's wallet row first (`SELECT ... FOR UPDATE`), so one
/// user's requests apply one at a time across all instances; unique keys (a receipt per environment and
/// transaction id, an entry per user and key) catch the rest, and a transaction that loses such a race is
/// rolled back and run again from the start, where it sees the winner's commit.
///
/// The pool's connections run in ``run()``: in `coffer serve`, as a service of the server's group (started first,
/// stopped last); for a tool or a test, by the store itself from when it opens until ``close()``
/// (``Runner/itself``).
///
/// ```swift
/// let store = try await PostgresStore(url: "postgres://coffer:secret@127.0.0.1:5432/coffer")
/// ```
public final class PostgresStore: CofferStore, Service {
    /// Who runs the pool's connections.
    public enum Runner: Sendable, Hashable {
        /// The store, from when it opens until ``PostgresStore/close()``: for a tool or a test.
        case itself
        /// The caller's service group, which runs ``PostgresStore/run()``; operations wait (within their deadline)
        /// until it does.
        case serviceGroup
    }

    /// The pool, renewed when the database answers again after a run of failures (see ``noteOutcome(unavailable:)``).
    private let pool: Mutex<Pool>
    /// Each pool made, for ``run()`` to run until it is retired.
    private let pools: (stream: AsyncStream<Pool.Running>, continuation: AsyncStream<Pool.Running>.Continuation)
    /// Who runs the pool's connections.
    public let runner: Runner
    /// Whether ``run()`` has begun (it runs once).
    private let started = Mutex(false)
    /// Rollup contributions this instance folded since it last vacuumed their table (``foldRollups()``).
    let foldedSinceVacuum = Mutex(0)
    /// What a new pool is made from.
    private let configuration: PostgresClient.Configuration
    let logger: Logger
    /// How long one operation (a read, or a write's transaction) may wait on the database.
    let operationTimeout: Duration
    /// The clock the operation deadline and the pool's renewal are kept on.
    private let clock: any TimerClock
    private let deadlines: DeadlineTimer

    /// The pool in use and its failures.
    private struct Pool {
        /// A pool to run, and what ends it.
        struct Running: Sendable {
            var client: PostgresClient
            /// Finished when the pool is retired (made anew, or the store closed).
            var retired: AsyncStream<Void>
        }

        var client: PostgresClient
        var retire: AsyncStream<Void>.Continuation
        /// Since when every operation has failed as unavailable, if they do.
        var failingSince: Duration?
        /// When the pool was last made.
        var madeAt: Duration
        /// Whether the store was closed: no pool is made anew then.
        var closed = false

        /// A new pool on `configuration`, and what ``PostgresStore/run()`` runs of it.
        static func make(
            _ configuration: PostgresClient.Configuration, logger: Logger, at now: Duration
        ) -> (Pool, Running) {
            let client = PostgresClient(configuration: configuration, backgroundLogger: logger)
            let (retired, retire) = AsyncStream<Void>.makeStream()
            return (Pool(client: client, retire: retire, madeAt: now), Running(client: client, retired: retired))
        }
    }

    /// The pool in use.
    var client: PostgresClient { pool.withLock { $0.client } }

    /// Connects (the pool opens connections as needed) and migrates.
    ///
    /// - Parameters:
    ///   - url: `postgres://user:password@host:port/database`, with `?sslmode=disable|prefer|require|verify-full`
    ///     (default prefer) and `sslrootcert=PATH` as libpq takes them (see ``configuration(url:)``).
    ///   - maximumConnections: The pool's size.
    ///   - startupTimeout: How long opening may take (connecting and migrating) before it fails.
    ///   - operationTimeout: How long a read, or a write's whole transaction, may wait on the database (for a
    ///     connection, and for its answers) before it fails with ``StoreError/unavailable(_:)``.
    ///   - runner: Who runs the pool: the store itself (the default), or the caller's service group.
    ///   - clock: The clock of the operation deadline and the pool's renewal (the system's unless a test steps its
    ///     own).
    ///   - logger: Where the pool logs.
    /// - Throws: ``StoreError/storage(_:)`` when the URL does not parse, the server does not answer in
    ///   time, or the database cannot be migrated.
    public init(
        url: String, maximumConnections: Int = 20, startupTimeout: Duration = .seconds(30),
        operationTimeout: Duration = .seconds(5), runner: Runner = .itself,
        clock: any TimerClock = SystemTimerClock(), logger: Logger = Logger(label: "coffer.postgres")
    ) async throws {
        self.operationTimeout = operationTimeout
        self.clock = clock
        self.runner = runner
        deadlines = DeadlineTimer(clock: clock)
        var configuration = try Self.configuration(url: url)
        configuration.options.maximumConnections = maximumConnections
        // PostgreSQL's own choice of plan for prepared statements, triggers and foreign-key checks: after five runs,
        // one plan kept for any arguments when it costs no more than planning each run. Planning every run
        // (`force_custom_plan`, issue 20) came to 260 µs of PostgreSQL's CPU a delivery once the rollups' triggers
        // ran statements of their own, more than everything else it did for a delivery. A plan kept since the
        // tables were empty (an index for the environment alone, any index being as good then) is kept only until
        // the table's statistics change: autovacuum's analyze changes them as a table grows (once a minute at most),
        // and so does the instance folding the rollups, every 5 seconds, for a table that doubled
        // (``analyzeGrown()``, `PlanCacheTests`). Leave autovacuum on.
        configuration.options.additionalStartupParameters.append(("plan_cache_mode", "auto"))
        // A connection that takes longer to open than an operation may wait is of no use to that operation; a
        // short attempt is retried sooner once the database answers again.
        configuration.options.connectTimeout = max(.seconds(1), min(startupTimeout, operationTimeout, .seconds(10)))
        // Work abandoned at its deadline (a client that went away, a network that swallowed the answer) is
        // stopped by the server too, so it holds no connection and no row lock for long: a statement runs at
        // most twice the deadline, a transaction left open idles at most that long. (Migrations lift the first.)
        let serverLimit = Int(min(operationTimeout * 2, .seconds(3_600)) / .milliseconds(1))
        configuration.options.additionalStartupParameters += [
            ("statement_timeout", String(serverLimit)), ("idle_in_transaction_session_timeout", String(serverLimit)),
        ]
        self.configuration = configuration
        self.logger = logger
        let (first, running) = Pool.make(configuration, logger: logger, at: clock.elapsed)
        pool = Mutex(first)
        pools = AsyncStream.makeStream(bufferingPolicy: .unbounded)
        pools.continuation.yield(running)
        let target = "\(configuration.host ?? "?"):\(configuration.port ?? 5432)"
        do {
            // On a connection of its own, run beside the migration and closed after it; abandoned at the deadline,
            // never waited on: a migration stuck behind a lock fails the start.
            var single = configuration
            single.options.maximumConnections = 1
            let migrator = PostgresClient(configuration: single, backgroundLogger: logger)
            try await withThrowingTaskGroup { group in
                group.addTask { await migrator.run() }
                defer { group.cancelAll() }
                try await deadlines.run(
                    within: startupTimeout,
                    orThrow: { StoreError.storage("PostgreSQL at \(target) did not answer within \(startupTimeout)") },
                    { try await PostgresMigrations.migrate(migrator, logger: logger) })
            }
        } catch {
            close()
            throw error
        }
        if case .itself = runner {
            started.withLock { $0 = true }
            // The pools alone, not the store: a store let go unclosed is closed by its deinit, which ends this.
            let pools = pools.stream
            Task { await Self.run(pools) }
        }
    }

    /// Runs the pool's connections, and each pool made anew, until the store is closed, the service group shuts
    /// down gracefully (then the store closes, after the services started after it), or the task is cancelled.
    /// It runs once; a second call returns at once.
    public func run() async {
        let first = started.withLock { started in
            defer { started = true }
            return !started
        }
        guard first else { return }
        await withGracefulShutdownHandler {
            await withTaskCancellationHandler {
                await Self.run(pools.stream)
            } onCancel: {
                self.close()
            }
        } onGracefulShutdown: {
            self.close()
        }
    }

    /// Runs each pool of `pools` until it is retired, and returns once the stream ends and every pool stopped.
    private static func run(_ pools: AsyncStream<Pool.Running>) async {
        await withDiscardingTaskGroup { group in
            for await running in pools {
                group.addTask {
                    await withTaskGroup(of: Void.self) { pool in
                        pool.addTask { await running.client.run() }
                        pool.addTask { for await _ in running.retired {} }
                        _ = await pool.next()
                        pool.cancelAll()
                    }
                }
            }
        }
    }

    /// Closes the pool; the store cannot be used afterwards.
    public func close() {
        pool.withLock { pool in
            pool.closed = true
            pool.retire.finish()
        }
        pools.continuation.finish()
    }

    deinit { close() }

    /// Notes how an operation went. postgres-nio's pool waits longer and longer between connection attempts
    /// while they fail (up to a minute, and past 15 s without a connection it refuses every request at
    /// once); after a second of failures the pool is made anew, at most once a second, so an instance serves
    /// again within about a second of the database answering, however long it was away.
    private func noteOutcome(unavailable: Bool) {
        let now = clock.elapsed
        let stale: AsyncStream<Void>.Continuation? = pool.withLock { pool in
            guard unavailable, !pool.closed else {
                pool.failingSince = nil
                return nil
            }
            guard let since = pool.failingSince else {
                pool.failingSince = now
                return nil
            }
            guard now - since > .seconds(1), now - pool.madeAt > .seconds(1) else { return nil }
            let old = pool.retire
            let (fresh, running) = Pool.make(configuration, logger: logger, at: now)
            pool = fresh
            pools.continuation.yield(running)
            return old
        }
        if let stale {
            logger.notice("PostgreSQL has not answered for a while: connecting anew")
            stale.finish()
        }
    }

    /// Runs `work` within the operation deadline, noting whether the database answered.
    private func timed<T: Sendable>(_ work: @escaping @Sendable () async throws -> T) async throws -> T {
        do {
            let value = try await deadlines.run(within: operationTimeout, orThrow: { self.timedOut }, work)
            noteOutcome(unavailable: false)
            return value
        } catch let error as StoreError {
            if case .unavailable = error { noteOutcome(unavailable: true) }
            throw error
        }
    }

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

    // MARK: Helpers

    /// Runs `body` in a transaction; a transaction that lost a race (a unique key taken by a concurrent
    /// commit, a serialization failure or a deadlock) is rolled back and run again.
    ///
    /// The whole of it (every attempt) waits on the database at most ``operationTimeout``; past it, or on a
    /// lost connection, it throws ``StoreError/unavailable(_:)``.
    func write<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> T) async throws -> T {
        try await timed { try await self.writeNow(body) }
    }

    private var timedOut: StoreError {
        StoreError.unavailable("PostgreSQL did not answer within \(operationTimeout)")
    }

    private func writeNow<T: Sendable>(_ body: (PostgresConnection) async throws -> T) async throws -> T {
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
                throw Self.storeError(error)
            } catch is LostRace {
                throw StoreError.storage("gave up after \(attempt) conflicting attempts")
            } catch let error where Self.isPoolRefusal(error) {
                throw StoreError.unavailable("PostgreSQL cannot be reached: \(error)")
            }
        }
    }

    /// Vacuums and analyses `table` (outside a transaction, as VACUUM must run) unless another instance holds the
    /// advisory lock `lock` (it is vacuuming), waiting at most ten minutes: it reads the whole table. The connection's
    /// statement limit (twice an operation's deadline) is lifted for it and restored after.
    func vacuum(_ table: String, lock: Int64) async throws {
        let logger = logger
        let limit = Int(min(operationTimeout * 2, .seconds(3_600)) / .milliseconds(1))
        do {
            try await deadlines.run(
                within: .seconds(600), orThrow: { StoreError.unavailable("VACUUM \(table) took over ten minutes") },
                {
                    try await self.client.withConnection { connection in
                        guard
                            try await Self.first(
                                connection, "SELECT pg_try_advisory_lock(\(lock))", logger: logger,
                                { try $0.decode(Bool.self) }) == true
                        else { return }
                        try await connection.query("SET statement_timeout = '10min'", logger: logger)
                        var failure: (any Error)?
                        do {
                            _ = try await connection.query(
                                PostgresQuery(unsafeSQL: "VACUUM (ANALYZE) \(table)"), logger: logger)
                        } catch {
                            failure = error
                        }
                        // The connection goes back to the pool as it came: its own limit, no lock held.
                        try await connection.query(
                            PostgresQuery(unsafeSQL: "SET statement_timeout = \(limit)"), logger: logger)
                        try await connection.query(
                            PostgresQuery(unsafeSQL: "SELECT pg_advisory_unlock(\(lock))"), logger: logger)
                        if let failure { throw failure }
                    }
                })
        } catch let error as PSQLError {
            throw Self.storeError(error)
        }
    }

    /// Runs `body` on a connection, waiting on the database at most ``operationTimeout``.
    func read<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> T) async throws -> T {
        try await timed {
            do {
                return try await self.client.withConnection { connection in try await body(connection) }
            } catch let error as PSQLError {
                throw Self.storeError(error)
            } catch let error where Self.isPoolRefusal(error) {
                throw StoreError.unavailable("PostgreSQL cannot be reached: \(error)")
            }
        }
    }

    /// Runs `body`'s reads in one snapshot (a read-only, repeatable-read transaction): several statements that must
    /// agree (the dashboard's sums and the subscriptions counted apart) see the same commits.
    func readSnapshot<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> T) async throws
        -> T
    {
        try await read { connection in
            try await connection.query("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", logger: self.logger)
            do {
                let value = try await body(connection)
                try await connection.query("COMMIT", logger: self.logger)
                return value
            } catch {
                _ = try? await connection.query("ROLLBACK", logger: self.logger)
                throw error
            }
        }
    }

    /// Whether `error` is the pool refusing a request (its circuit breaker, open after failing to connect for a
    /// while), which postgres-nio reports as its own type rather than a `PSQLError`.
    static func isPoolRefusal(_ error: any Error) -> Bool {
        String(reflecting: type(of: error)).hasSuffix("ConnectionPoolError")
    }

    /// A PostgreSQL failure as the store's: a lost or refused connection (the server restarting, a backend
    /// killed, too many connections) is ``StoreError/unavailable(_:)``, anything else ``StoreError/storage(_:)``.
    static func storeError(_ error: PSQLError) -> StoreError {
        let connectionCodes: [PSQLError.Code] = [
            .connectionError, .serverClosedConnection, .clientClosedConnection, .uncleanShutdown, .poolClosed,
        ]
        let state = error.sqlState ?? ""
        // Class 08: connection exceptions; 57P01-57P03: the server shutting down or starting; 53300: too many
        // connections; 53100: disk full; 58030: an I/O error; 57014: a statement cancelled (its statement_timeout);
        // 25006: a read-only transaction (a standby after a failover).
        if connectionCodes.contains(error.code) || state.hasPrefix("08")
            || ["57P01", "57P02", "57P03", "53300", "53100", "58030", "57014", "25006"].contains(state)
        {
            return .unavailable(describe(error))
        }
        return .storage(describe(error))
    }

    func first<T: Sendable>(_ query: PostgresQuery, _ decode: @escaping @Sendable (PostgresRow) throws -> T)
        async throws -> T?
    {
        try await read { connection in try await Self.first(connection, query, logger: self.logger, decode) }
    }

    func all<T: Sendable>(_ query: PostgresQuery, _ decode: @escaping @Sendable (PostgresRow) throws -> T)
        async throws -> [T]
    {
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

    /// Throws ``StoreError/notFound(_:)`` unless the user lives in `environment`.
    /// With `live`, a user deleted at the customer's request counts as none (nothing personal is written for
    /// them; Apple's word on their transactions still is).
    static func requireUser(
        _ connection: PostgresConnection, _ owner: UUID, _ environment: AppStoreEnvironment, live: Bool = false,
        logger: Logger
    ) async throws {
        guard
            try await exists(
                connection,
                """
                SELECT 1 FROM \(unescaped: live ? "live_users" : "users") WHERE id = \(owner.uuidString)
                    AND environment = \(environment.rawValue)
                """,
                logger: logger)
        else { throw StoreError.notFound("user \(owner)") }
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

extension PostgresStore {
    /// The migrations of this build, oldest first.
    public static var migrations: [String] { PostgresMigrations.all.map(\.name) }

    /// The migrations applied to the database at `url`, read without changing anything (no migration runs), or
    /// `[]` for a database Coffer has not used yet.
    ///
    /// - Throws: ``StoreError/unavailable(_:)`` when the database does not answer within `timeout`.
    public static func inspect(
        url: String, timeout: Duration = .seconds(5), logger: Logger = Logger(label: "coffer.postgres")
    )
        async throws -> [String]
    {
        var configuration = try configuration(url: url)
        configuration.options.connectTimeout = timeout
        let client = PostgresClient(configuration: configuration, backgroundLogger: logger)
        let read: @Sendable () async throws -> [String] = {
            do {
                return try await client.withConnection { connection in
                    let exists = try await connection.query(
                        "SELECT to_regclass('coffer_migrations') IS NOT NULL", logger: logger)
                    var found = false
                    for try await value in exists.decode(Bool.self) { found = value }
                    return found ? try await PostgresMigrations.applied(connection, logger: logger) : []
                }
            } catch let error as PSQLError {
                throw storeError(error)
            } catch let error where isPoolRefusal(error) {
                throw StoreError.unavailable("PostgreSQL cannot be reached: \(error)")
            }
        }
        return try await withThrowingTaskGroup { group in
            group.addTask { await client.run() }
            defer { group.cancelAll() }
            return try await DeadlineTimer().run(
                within: timeout, orThrow: { StoreError.unavailable("PostgreSQL did not answer within \(timeout)") },
                read)
        }
    }
}
