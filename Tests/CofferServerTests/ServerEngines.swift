import CofferStore
import CofferStorePostgres
import CofferStoreSQLite
import CofferTestSupport
import Foundation
import Testing

/// The store engines the server suites run on: each test gets a fresh, empty store. PostgreSQL runs
/// when `scripts/test` started a server, and is required under CI.
enum ServerEngine: String, CaseIterable, CustomTestStringConvertible, Sendable {
    case memory
    case sqlite
    case postgres

    var testDescription: String { rawValue }

    static var allCases: [ServerEngine] {
        if TestPostgres.url != nil || TestPostgres.required { return [.memory, .sqlite, .postgres] }
        FileHandle.standardError.write(Data("warning: \(TestPostgres.missing)\n".utf8))
        return [.memory, .sqlite]
    }

    /// A fresh database with every migration: a copy of one migrated once per test process.
    static func migratedDatabase() async throws -> String {
        try await TestPostgres.migratedDatabase { url in
            let store = try await PostgresStore(url: url, maximumConnections: 1)
            store.close()
        }
    }

    func makeStore() async throws -> any CofferStore {
        switch self {
        case .memory:
            return InMemoryStore()
        case .sqlite:
            let path = FileManager.default.temporaryDirectory.appendingPathComponent(
                "coffer-\(UUID().uuidString).sqlite")
            return try TestSQLite.store(at: path.path)
        case .postgres:
            return try await PostgresStore(url: try await Self.migratedDatabase(), maximumConnections: 16)
        }
    }
}
