import CofferStoreSQLite
import Foundation
import Synchronization

/// Fresh SQLite stores for tests, each a copy of one database migrated once per test process: migrating every new
/// file would run the whole schema (every migration, its tables, indexes and triggers) again for each test.
public enum TestSQLite {
    private static let template = Mutex<String?>(nil)

    /// The migrated database every store copies, made on first use.
    static func templatePath() throws -> String {
        try template.withLock { path -> String in
            if let path { return path }
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
                "coffer-template-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let migrated = folder.appendingPathComponent("migrated.sqlite").path
            do { _ = try SQLiteStore(path: migrated) }
            let copy = folder.appendingPathComponent("template.sqlite").path
            _ = try SQLiteBackup.backup(database: migrated, to: copy)
            path = copy
            return copy
        }
    }

    /// A new store at `path` (created: it must not exist), holding every migration.
    public static func store(at path: String, durability: SQLiteDurability = .full) throws -> SQLiteStore {
        try FileManager.default.copyItem(atPath: try templatePath(), toPath: path)
        return try SQLiteStore(path: path, durability: durability)
    }
}
