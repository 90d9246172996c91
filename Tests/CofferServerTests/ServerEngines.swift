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

    func makeStore() async throws -> any CofferStore {
        switch self {
        case .memory:
            return InMemoryStore()
        case .sqlite:
            let path = FileManager.default.temporaryDirectory.appendingPathComponent(
                "coffer-\(UUID().uuidString).sqlite")
            return try SQLiteStore(path: path.path)
        case .postgres:
            return try await PostgresStore(url: try await TestPostgres.freshDatabase(), maximumConnections: 16)
        }
    }
}
