import Foundation
import GRDB

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// What a copy of a Coffer database holds, as `coffer backup` and `coffer restore` report it.
public struct SQLiteBackupSummary: Sendable, Equatable {
    /// The migrations applied to it, oldest first: its schema version is the last.
    public var migrations: [String]
    /// Users, in every environment.
    public var users: Int
    /// Ledger entries, in every environment.
    public var entries: Int
    /// The file's size in bytes.
    public var bytes: Int64
    /// What its servers keep of themselves (their cursors: the wallet, the default currency...), by name, in any
    /// environment.
    public var cursors: [String: String] = [:]
}

/// Why a copy cannot be restored. Nothing was changed.
public struct SQLiteRestoreError: Error, CustomStringConvertible, Equatable {
    /// The reason, in one sentence.
    public let description: String
}

/// Online backups and their restore (SQLite's `VACUUM INTO`): a consistent copy taken while the server reads
/// and writes, and a copy put back in place of a database, refused when its schema is not this build's.
public enum SQLiteBackup {
    /// The migrations of this build, oldest first.
    public static var migrations: [String] { SQLiteStore.migrator.migrations }

    /// Copies the database at `path` to `destination` while others go on reading and writing it: the copy is
    /// one consistent snapshot, holding every commit made before it began (SQLite's `VACUUM INTO`, from a
    /// read-only connection). The copy is created owner-only; an existing `destination` is refused.
    ///
    /// - Returns: What the copy holds.
    public static func backup(database path: String, to destination: String) throws -> SQLiteBackupSummary {
        guard FileManager.default.fileExists(atPath: path) else {
            throw SQLiteRestoreError(description: "there is no database at \(path)")
        }
        guard !FileManager.default.fileExists(atPath: destination) else {
            throw SQLiteRestoreError(description: "\(destination) exists already; name a new file")
        }
        // Created owner-only and empty (VACUUM INTO writes into an empty file), so no one else can read it.
        let descriptor = open(destination, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0o600)
        guard descriptor >= 0 else {
            throw SQLiteRestoreError(description: "cannot create \(destination): \(String(cString: strerror(errno)))")
        }
        close(descriptor)
        do {
            var configuration = Configuration()
            configuration.readonly = true
            configuration.busyMode = .timeout(10)
            let source = try DatabaseQueue(path: path, configuration: configuration)
            try source.writeWithoutTransaction { db in
                try db.execute(sql: "VACUUM INTO ?", arguments: [destination])
            }
            try source.close()
        } catch {
            try? FileManager.default.removeItem(atPath: destination)
            throw error
        }
        return try inspect(destination)
    }

    /// Reads a copy without changing it: its integrity, migrations and size.
    ///
    /// - Throws: ``SQLiteRestoreError`` for a file that is not a sound Coffer database.
    public static func inspect(_ file: String) throws -> SQLiteBackupSummary {
        var configuration = Configuration()
        configuration.readonly = true
        let database: DatabaseQueue
        do {
            database = try DatabaseQueue(path: file, configuration: configuration)
        } catch {
            throw SQLiteRestoreError(description: "\(file) is not a SQLite database: \(error)")
        }
        defer { try? database.close() }
        return try database.read { db in
            guard try String.fetchOne(db, sql: "PRAGMA quick_check") == "ok" else {
                throw SQLiteRestoreError(description: "\(file) is damaged (SQLite's quick_check fails)")
            }
            guard try db.tableExists("grdb_migrations"), try db.tableExists("ledger_entries") else {
                throw SQLiteRestoreError(description: "\(file) is not a Coffer database")
            }
            let applied = try String.fetchAll(db, sql: "SELECT identifier FROM grdb_migrations")
            let known = migrations
            let ordered = known.filter(applied.contains) + applied.filter { !known.contains($0) }.sorted()
            let size = (try? FileManager.default.attributesOfItem(atPath: file)[.size] as? NSNumber)?.int64Value ?? 0
            var summary = SQLiteBackupSummary(
                migrations: ordered, users: try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM users") ?? 0,
                entries: try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM ledger_entries") ?? 0, bytes: size)
            if try db.tableExists("cursors") {
                for row in try Row.fetchAll(db, sql: "SELECT name, value FROM cursors ORDER BY environment") {
                    summary.cursors[row["name"]] = summary.cursors[row["name"]] ?? row["value"]
                }
            }
            return summary
        }
    }

    /// Puts the copy `backup` in place of the database at `path` (stop the server first). The database there
    /// now, with its write-ahead log, is kept beside it as `PATH.before-restore-TIME`; the copy itself is not
    /// changed.
    ///
    /// - Returns: What the restored database holds, and where the one it replaced was kept (`nil` when there
    ///   was none).
    /// - Throws: ``SQLiteRestoreError`` for a copy that is damaged, not Coffer's, or of another schema version
    ///   than this build's (restore it with the version that made it, whose `coffer serve` migrates it on).
    public static func restore(_ backup: String, to path: String, at now: Date = Date()) throws
        -> (summary: SQLiteBackupSummary, keptAs: String?)
    {
        // The copy itself, never what a link points at (a link would become the database path's target).
        guard (try? FileManager.default.destinationOfSymbolicLink(atPath: backup)) == nil else {
            throw SQLiteRestoreError(description: "\(backup) is a symbolic link: name the file itself")
        }
        let summary = try inspect(backup)
        guard summary.migrations == migrations else {
            let theirs = summary.migrations.last ?? "none"
            let ours = migrations.last ?? "none"
            let newer = summary.migrations.contains { !migrations.contains($0) }
            throw SQLiteRestoreError(
                description: "\(backup) has schema \"\(theirs)\" (\(summary.migrations.count) migrations); this "
                    + "build's is \"\(ours)\" (\(migrations.count)): "
                    + (newer
                        ? "it was made by a newer Coffer: restore it with that version"
                        : "restore it with the Coffer version that made it, then upgrade"))
        }
        let manager = FileManager.default
        let staging = path + ".restoring"
        try? manager.removeItem(atPath: staging)
        try manager.copyItem(atPath: backup, toPath: staging)
        chmod(staging, 0o600)
        var keptAs: String?
        if manager.fileExists(atPath: path) {
            // The restored file belongs to whoever owned the one it replaces (run with sudo, it stays the
            // service user's, who must open it).
            let owner = try manager.attributesOfItem(atPath: path)
            if let uid = owner[.ownerAccountID] as? NSNumber, let gid = owner[.groupOwnerAccountID] as? NSNumber {
                _ = chown(staging, uid_t(truncatingIfNeeded: uid.intValue), gid_t(truncatingIfNeeded: gid.intValue))
            }
            let stamp = now.formatted(.iso8601.year().month().day().time(includingFractionalSeconds: false))
                .replacingOccurrences(of: ":", with: "")
            let kept = "\(path).before-restore-\(stamp)"
            for suffix in ["", "-wal", "-shm"] where manager.fileExists(atPath: path + suffix) {
                try manager.moveItem(atPath: path + suffix, toPath: kept + suffix)
            }
            keptAs = kept
        }
        guard rename(staging, path) == 0 else {
            throw SQLiteRestoreError(description: "cannot put the copy at \(path): \(String(cString: strerror(errno)))")
        }
        return (try inspect(path), keptAs)
    }
}
