import Foundation
import Logging
import NIOPosix
import PostgresNIO
import Synchronization

/// The PostgreSQL server `scripts/test` starts on loopback (`initdb` into a temporary folder), named by
/// `COFFER_TEST_POSTGRES_URL`; each test gets a fresh database of its own on it.
public enum TestPostgres {
    /// The server's URL (a superuser on its `postgres` database), or `nil` when no server was started.
    public static var url: String? {
        ProcessInfo.processInfo.environment["COFFER_TEST_POSTGRES_URL"].flatMap { $0.isEmpty ? nil : $0 }
    }

    /// Whether the suites must have PostgreSQL: under CI a missing server is a failure, never a skip.
    public static var required: Bool { ProcessInfo.processInfo.environment["CI"] == "true" }

    /// Why PostgreSQL suites cannot run, for the loud message when they are left out.
    public static let missing =
        "PostgreSQL: COFFER_TEST_POSTGRES_URL is not set, so the PostgreSQL cases are NOT RUN. scripts/test starts a server; run it, or set the variable."

    /// Creates an empty database (a copy of `template` when given) and returns its URL.
    public static func freshDatabase(template: String? = nil) async throws -> String {
        guard let url, var components = URLComponents(string: url), let host = components.host,
            let user = components.user
        else { throw TestPostgresError(message: missing) }
        let name = "coffer_\(UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased())"
        let configuration = PostgresConnection.Configuration(
            host: host, port: components.port ?? 5432, username: user, password: components.password,
            database: "postgres", tls: .disable)
        let connection = try await PostgresConnection.connect(
            on: MultiThreadedEventLoopGroup.singleton.any(), configuration: configuration, id: 1,
            logger: Logger(label: "coffer.tests.postgres")
        ).get()
        do {
            // Identifiers cannot be bound; the names are made here of hex digits only. A template's last
            // connection may still be closing on the server's side: its copy is asked again a moment later.
            let sql = "CREATE DATABASE \(name)" + (template.map { " TEMPLATE \($0)" } ?? "")
            for attempt in 1...100 {
                do {
                    try await connection.query(PostgresQuery(unsafeSQL: sql), logger: Logger(label: "t"))
                    break
                } catch let error as PSQLError where template != nil && attempt < 100 {
                    guard error.serverInfo?[.sqlState] == "55006" else { throw error }  // object in use
                    try await Task.sleep(for: .milliseconds(50))
                }
            }
        } catch {
            try? await connection.close()
            throw error
        }
        try await connection.close()
        components.path = "/" + name
        guard let fresh = components.string else { throw TestPostgresError(message: "cannot build the URL") }
        return fresh
    }

    /// The database every ``migratedDatabase(migrate:)`` copies: made and migrated once per test process.
    private static let template = Mutex<Task<String, any Error>?>(nil)

    /// A fresh database holding every migration, and returns its URL: a copy of one database migrated once per test
    /// process by `migrate` (which opens a store on the URL it is given and closes it), so each test does not run
    /// the whole schema again. Tests of the migrations themselves use ``freshDatabase(template:)``.
    public static func migratedDatabase(migrate: @escaping @Sendable (String) async throws -> Void) async throws
        -> String
    {
        let made = template.withLock { current in
            if let current { return current }
            let task = Task { () async throws -> String in
                let url = try await freshDatabase()
                try await migrate(url)
                guard let name = URLComponents(string: url)?.path.dropFirst(), !name.isEmpty else {
                    throw TestPostgresError(message: "no database name in \(url)")
                }
                return String(name)
            }
            current = task
            return task
        }
        let name: String
        do {
            name = try await made.value
        } catch {
            // A template that could not be made (the server busy past its deadline) is made again by the next test.
            template.withLock { current in if current == made { current = nil } }
            throw error
        }
        return try await freshDatabase(template: name)
    }

    /// Kills every backend serving `database` (as an operator's `pg_terminate_backend` or an out-of-memory kill
    /// does): their connections drop mid-conversation. Returns how many it killed.
    @discardableResult
    public static func killBackends(of database: String) async throws -> Int {
        guard let url, let components = URLComponents(string: url), let host = components.host,
            let user = components.user
        else { throw TestPostgresError(message: missing) }
        let configuration = PostgresConnection.Configuration(
            host: host, port: components.port ?? 5432, username: user, password: components.password,
            database: "postgres", tls: .disable)
        let connection = try await PostgresConnection.connect(
            on: MultiThreadedEventLoopGroup.singleton.any(), configuration: configuration, id: 2,
            logger: Logger(label: "coffer.tests.postgres"))
        defer { Task { try? await connection.close() } }
        let rows = try await connection.query(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = \(database) AND pid <> pg_backend_pid()",
            logger: Logger(label: "coffer.tests.postgres"))
        var killed = 0
        for try await _ in rows { killed += 1 }
        return killed
    }
}

extension TestPostgres {
    /// A connection of its own to the database `databaseURL` names.
    static func connect(_ databaseURL: String, id: Int, logger: Logger) async throws -> PostgresConnection {
        guard let components = URLComponents(string: databaseURL), let host = components.host,
            let user = components.user
        else { throw TestPostgresError(message: "not a PostgreSQL URL: \(databaseURL)") }
        let configuration = PostgresConnection.Configuration(
            host: host, port: components.port ?? 5432, username: user, password: components.password,
            database: String(components.path.dropFirst()), tls: .disable)
        return try await PostgresConnection.connect(
            on: MultiThreadedEventLoopGroup.singleton.any(), configuration: configuration, id: id, logger: logger)
    }

    /// Runs statements on the database `databaseURL` names, outside any store (a test that changes the schema under
    /// a store, say).
    public static func execute(_ statements: [String], on databaseURL: String) async throws {
        let logger = Logger(label: "coffer.tests.postgres")
        let connection = try await connect(databaseURL, id: 3, logger: logger)
        do {
            for statement in statements {
                try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
            }
        } catch {
            try? await connection.close()
            throw error
        }
        try await connection.close()
    }
}

extension TestPostgres {
    /// The first column of the first row `sql` answers on the database `databaseURL` names, as a whole number (`nil`
    /// for no row or NULL).
    public static func integer(_ sql: String, on databaseURL: String) async throws -> Int64? {
        let logger = Logger(label: "coffer.tests.postgres")
        let connection = try await connect(databaseURL, id: 4, logger: logger)
        do {
            var value: Int64?
            for try await row in try await connection.query(PostgresQuery(unsafeSQL: sql), logger: logger) {
                value = try row.decode(Int64?.self)
                break
            }
            try await connection.close()
            return value
        } catch {
            try? await connection.close()
            throw error
        }
    }
}

/// PostgreSQL is not there for a test that needs it.
public struct TestPostgresError: Error, CustomStringConvertible {
    /// What is missing.
    public var message: String
    /// The message.
    public var description: String { message }
}
