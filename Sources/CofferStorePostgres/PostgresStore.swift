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
    let client: PostgresClient
    let runner: Task<Void, Never>
    let logger: Logger
    /// How long one operation (a read, or a write's transaction) may wait on the database.
    let operationTimeout: Duration
    private let deadlines = DeadlineTimer()

    /// Connects (the pool opens connections as needed) and migrates.
    ///
    /// - Parameters:
    ///   - url: `postgres://user:password@host:port/database`, with `?sslmode=disable|prefer|require|verify-full`
    ///     (default prefer) and `sslrootcert=PATH` as libpq takes them (see ``configuration(url:)``).
    ///   - maximumConnections: The pool's size.
    ///   - startupTimeout: How long opening may take (connecting and migrating) before it fails.
    ///   - operationTimeout: How long a read, or a write's whole transaction, may wait on the database (for a
    ///     connection, and for its answers) before it fails with ``StoreError/unavailable(_:)``.
    ///   - logger: Where the pool logs.
    /// - Throws: ``StoreError/storage(_:)`` when the URL does not parse, the server does not answer in
    ///   time, or the database cannot be migrated.
    public init(
        url: String, maximumConnections: Int = 20, startupTimeout: Duration = .seconds(30),
        operationTimeout: Duration = .seconds(5), logger: Logger = Logger(label: "coffer.postgres")
    ) async throws {
        self.operationTimeout = operationTimeout
        var configuration = try Self.configuration(url: url)
        configuration.options.maximumConnections = maximumConnections
        // Every statement is planned for the tables as they are when it runs. A prepared statement's generic plan
        // is made once per connection and kept: made on a new database's empty tables, it looked receipts up
        // through whichever index was smallest, and went on scanning every receipt of the environment (an
        // O(n) read per batch) long after the tables had grown.
        configuration.options.additionalStartupParameters.append(("plan_cache_mode", "force_custom_plan"))
        // A connection that takes longer to open than an operation may wait is of no use to that operation; a
        // short attempt is retried sooner once the database answers again.
        configuration.options.connectTimeout = max(.seconds(1), min(startupTimeout, operationTimeout, .seconds(10)))
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

    // MARK: Helpers

    /// Runs `body` in a transaction; a transaction that lost a race (a unique key taken by a concurrent
    /// commit, a serialization failure or a deadlock) is rolled back and run again.
    ///
    /// The whole of it (every attempt) waits on the database at most ``operationTimeout``; past it, or on a
    /// lost connection, it throws ``StoreError/unavailable(_:)``.
    func write<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> T) async throws -> T {
        let work: @Sendable () async throws -> T = { try await self.writeNow(body) }
        return try await deadlines.run(within: operationTimeout, orThrow: { self.timedOut }, work)
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
            }
        }
    }

    /// Runs `body` on a connection, waiting on the database at most ``operationTimeout``.
    func read<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> T) async throws -> T {
        let work: @Sendable () async throws -> T = {
            do {
                return try await self.client.withConnection { connection in try await body(connection) }
            } catch let error as PSQLError {
                throw Self.storeError(error)
            }
        }
        return try await deadlines.run(within: operationTimeout, orThrow: { self.timedOut }, work)
    }

    /// A PostgreSQL failure as the store's: a lost or refused connection (the server restarting, a backend
    /// killed, too many connections) is ``StoreError/unavailable(_:)``, anything else ``StoreError/storage(_:)``.
    static func storeError(_ error: PSQLError) -> StoreError {
        let connectionCodes: [PSQLError.Code] = [
            .connectionError, .serverClosedConnection, .clientClosedConnection, .uncleanShutdown, .poolClosed,
        ]
        let state = error.sqlState ?? ""
        // Class 08: connection exceptions; 57P01-57P03: the server shutting down or starting; 53300: too many
        // connections.
        if connectionCodes.contains(error.code) || state.hasPrefix("08")
            || ["57P01", "57P02", "57P03", "53300"]
                .contains(state)
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
        _ connection: PostgresConnection, _ owner: UUID, _ environment: Environment, live: Bool = false,
        logger: Logger
    ) async throws {
        guard
            try await exists(
                connection,
                """
                SELECT 1 FROM users WHERE id = \(owner.uuidString) AND environment = \(environment.rawValue)
                    AND (deleted_at IS NULL OR NOT \(live))
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
