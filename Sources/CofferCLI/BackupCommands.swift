import ArgumentParser
import CofferStoreSQLite
import Configuration
import Foundation

/// Where the database is, found as `coffer serve` finds it: `--database-url`, then `COFFER_DATABASE_URL`, then the
/// `--config` file's `database.url`, else `coffer.sqlite` in the working folder.
struct DatabaseLocationOptions: ParsableArguments {
    @Option(help: "sqlite:PATH or a path (default: as coffer serve finds it, else sqlite:coffer.sqlite).")
    var databaseURL: String?

    @Option(help: "The JSON config file coffer serve runs with, to read its database.url.")
    var config: String?

    /// The database these options name.
    func database() async throws -> ServeSettings.Database {
        try await Composition.settings(flags: ["database.url": databaseURL], config: config).database
    }

    /// The SQLite file these options name; PostgreSQL is refused with what to use instead.
    func sqlitePath(for command: String) async throws -> String {
        switch try await database() {
        case .sqlite(let path): return path
        case .postgres:
            throw CommandFailure(
                "coffer \(command) copies a SQLite database; for PostgreSQL use pg_dump and pg_restore "
                    + "(docs/operations.md)")
        }
    }
}

/// `coffer backup FILE`: a consistent copy of the SQLite database, taken while the server runs.
struct BackupCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "backup",
        abstract: "Copy the SQLite database to FILE while the server runs (a consistent snapshot).",
        discussion: """
            Everything committed before the copy began is in it; the server goes on reading and writing \
            meanwhile. The copy is owner-only; an existing FILE is refused. PostgreSQL: use pg_dump.
            """)

    @Argument(help: "The new file to write the copy to.")
    var file: String

    @OptionGroup var location: DatabaseLocationOptions

    func run() async throws {
        let path = try await location.sqlitePath(for: "backup")
        let summary: SQLiteBackupSummary
        do {
            summary = try SQLiteBackup.backup(database: path, to: file)
        } catch let error as SQLiteRestoreError {
            throw CommandFailure(error.description)
        }
        print("Backed up \(path) to \(file): \(Self.describe(summary))")
    }

    /// One line about a copy.
    static func describe(_ summary: SQLiteBackupSummary) -> String {
        "schema \"\(summary.migrations.last ?? "none")\", \(summary.users) users, \(summary.entries) ledger entries, "
            + "\(summary.bytes) bytes"
    }
}

/// `coffer restore FILE --yes`: puts a copy back in place of the SQLite database.
struct RestoreCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "restore",
        abstract: "Put a copy made by coffer backup in place of the SQLite database (stop the server first).",
        discussion: """
            The copy must be sound and of this build's schema version (a copy of another version is refused: \
            restore it with the Coffer that made it). The database it replaces is kept beside it as \
            PATH.before-restore-TIME, its write-ahead log with it.
            """)

    @Argument(help: "The copy to restore.")
    var file: String

    @OptionGroup var location: DatabaseLocationOptions

    @Flag(help: "Replace the database that is there now (it is kept beside it).")
    var yes = false

    func run() async throws {
        let path = try await location.sqlitePath(for: "restore")
        if FileManager.default.fileExists(atPath: path), !yes {
            throw CommandFailure("\(path) exists: stop the server, then run again with --yes to replace it")
        }
        do {
            let (summary, kept) = try SQLiteBackup.restore(file, to: path)
            print("Restored \(file) to \(path): \(BackupCommand.describe(summary))")
            if let kept { print("The database it replaced is kept as \(kept)") }
        } catch let error as SQLiteRestoreError {
            throw CommandFailure(error.description)
        }
    }
}
