import Foundation
import Synchronization

/// The statements a store ran, collected as it runs them.
public final class StatementLog: Sendable {
    private let items = Mutex<[String]>([])

    /// An empty log.
    public init() {}

    /// Adds a statement.
    public func append(_ statement: String) { items.withLock { $0.append(statement) } }

    /// The statements since the last call, and starts a new list.
    public func take() -> [String] {
        items.withLock { items in
            defer { items = [] }
            return items
        }
    }
}

/// Judges query plans: whether a statement reads only what its answer needs (a customer's rows, a page of a list,
/// a few rollup rows) through an index, or reads a table whose size grows with everyone's data.
///
/// A table is bounded by design when it holds per-server settings (admins, keys, endpoints, cursors), is kept
/// small (the rollups' contributions waiting to be folded) or holds a Production server's testers (App Review's and
/// TestFlight's Sandbox-marked customers); every other table grows with customers and their purchases. On such a table a read must search an index on more than the environment, or walk an index in the
/// order of its answer under a `LIMIT` (no sort of everything before).
public enum QueryPlans {
    /// Tables whose size does not grow with customers or their purchases.
    public static let boundedTables: Set<String> = [
        "admins", "admin_keys", "admin_sessions", "sessions", "cursors", "webhook_endpoints", "coffer_migrations",
        "grdb_migrations", "dashboard_deltas", "sandbox_marked", "sqlite_master", "sqlite_schema", "pg_class",
        "live_users_columns",
    ]

    /// What is wrong with a SQLite plan (`EXPLAIN QUERY PLAN`'s detail lines) of `statement`; empty when nothing.
    public static func problems(sqlitePlan lines: [String], statement: String) -> [String] {
        let limited = statement.range(of: #"\bLIMIT\b"#, options: [.regularExpression, .caseInsensitive]) != nil
        let sorts = lines.contains { $0.contains("USE TEMP B-TREE FOR ORDER BY") }
        // SQLite names a table by its alias in the statement: `FROM webhook_deliveries d` is `d` in the plan.
        var tables: [String: String] = [:]
        let keywords: Set<String> = [
            "WHERE", "INDEXED", "CROSS", "JOIN", "ON", "LEFT", "INNER", "ORDER", "GROUP", "LIMIT",
        ]
        for found in statement.matches(of: #/(?i)\b(?:FROM|JOIN)\s+(\w+)(?:\s+(?:AS\s+)?(\w+))?/#) {
            let table = String(found.1)
            if let alias = found.2.map(String.init), !keywords.contains(alias.uppercased()) { tables[alias] = table }
            tables[table] = table
        }
        var problems: [String] = []
        for line in lines {
            guard let match = line.firstMatch(of: /^(SCAN|SEARCH) (\w+)(?: AS \w+)?(.*)$/), match.2 != "CONSTANT" else {
                continue
            }
            let (kind, named, rest) = (String(match.1), String(match.2), String(match.3))
            let table = tables[named] ?? named
            guard !boundedTables.contains(table), !rest.contains("USING INTEGER PRIMARY KEY (rowid=?)") else {
                continue
            }
            let walksInOrder = limited && !sorts
            if kind == "SCAN" {
                if !walksInOrder { problems.append(line) }
                continue
            }
            // A search on the environment alone reads the whole environment.
            let constrained = rest.firstMatch(of: /\(([^)]*)\)\s*$/).map { String($0.1) } ?? ""
            let columns = constrained.components(separatedBy: " AND ").map {
                $0.split(whereSeparator: { "=<>".contains($0) }).first.map(String.init) ?? $0
            }
            if Set(columns).subtracting(["environment"]).isEmpty, !walksInOrder { problems.append(line) }
        }
        return problems
    }

    /// What is wrong with a PostgreSQL plan (auto_explain's JSON `Plan`); empty when nothing. The database plans
    /// with `enable_seqscan` off, so a sequential scan means no index serves the statement.
    public static func problems(postgresPlan plan: [String: Any]) -> [String] {
        var problems: [String] = []
        func visit(_ node: [String: Any], limited: Bool) {
            let type = node["Node Type"] as? String ?? ""
            // A Limit's child is walked only as far as the answer needs, unless a sort reads it all first (an
            // incremental sort reads each group of rows equal in the index's order: all of them, when they are equal).
            let under =
                (limited || type == "Limit")
                && !["Sort", "Incremental Sort", "Aggregate", "Hash"].contains(type)
            if let table = node["Relation Name"] as? String, !boundedTables.contains(table) {
                let condition = (node["Index Cond"] as? String) ?? (node["Recheck Cond"] as? String) ?? ""
                let scans = type == "Seq Scan"
                let wholeEnvironment =
                    type.contains("Index") || type.contains("Bitmap")
                    ? Self.environmentOnly(condition) : false
                if scans || (wholeEnvironment && !limited) {
                    problems.append("\(type) on \(table)\(condition.isEmpty ? "" : " (\(condition))")")
                }
            }
            for child in node["Plans"] as? [[String: Any]] ?? [] { visit(child, limited: under) }
        }
        visit(plan, limited: false)
        return problems.isEmpty ? [] : problems.map { "\($0) in the plan \(outline(plan))" }
    }

    /// A plan's nodes, one line: `Limit(Index Scan Backward grants_pending)`.
    static func outline(_ node: [String: Any]) -> String {
        let type = node["Node Type"] as? String ?? "?"
        let name = (node["Index Name"] as? String) ?? (node["Relation Name"] as? String)
        let children = (node["Plans"] as? [[String: Any]] ?? []).map(outline)
        return type + (name.map { " \($0)" } ?? "") + (children.isEmpty ? "" : "(\(children.joined(separator: ", ")))")
    }

    /// Whether an index condition constrains nothing but the environment (or nothing at all).
    static func environmentOnly(_ condition: String) -> Bool {
        let columns = condition.matches(of: #/(\w+) (?:=|>|<|>=|<=|~~) /#).map { String($0.1) }
        return Set(columns).subtracting(["environment"]).isEmpty
    }

    /// The plans auto_explain logged for `database` on the test server (its JSON log under
    /// `COFFER_TEST_POSTGRES_DIR/log`), up to the statement holding `marker`, which the caller runs last: the
    /// server writes the log as statements end, so once the marker is there every earlier plan is too.
    ///
    /// - Returns: Each statement's text and plan.
    public static func postgresPlans(database: String, marker: String) async throws -> [(
        statement: String, plan: [String: Any]
    )] {
        guard let folder = ProcessInfo.processInfo.environment["COFFER_TEST_POSTGRES_DIR"] else {
            throw TestPostgresError(message: "COFFER_TEST_POSTGRES_DIR is not set: the plans are in its log")
        }
        let directory = URL(fileURLWithPath: folder).appendingPathComponent("log")
        for _ in 0..<200 {
            var plans: [(statement: String, plan: [String: Any])] = []
            var sawMarker = false
            let files = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter {
                $0.hasSuffix(".json")
            }.sorted()
            for file in files {
                let text = try String(contentsOf: directory.appendingPathComponent(file), encoding: .utf8)
                for line in text.split(separator: "\n") where line.contains(database) {
                    guard
                        let entry = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                        entry["dbname"] as? String == database, let message = entry["message"] as? String,
                        message.hasPrefix("duration:"), let brace = message.firstIndex(of: "{"),
                        let explained = try? JSONSerialization.jsonObject(with: Data(message[brace...].utf8))
                            as? [String: Any],
                        let plan = explained["Plan"] as? [String: Any]
                    else { continue }
                    let statement = explained["Query Text"] as? String ?? ""
                    if statement.contains(marker) { sawMarker = true } else { plans.append((statement, plan)) }
                }
            }
            if sawMarker { return plans }
            // The collector writes what the server logged a moment later: read again.
            try await Task.sleep(for: .milliseconds(50))
        }
        throw TestPostgresError(message: "the marker \(marker) never reached the server's log")
    }

    /// Turns on auto_explain for every new session on `databaseURL`'s database, with sequential scans off.
    public static func explainPostgres(databaseURL: String) async throws {
        guard let name = URLComponents(string: databaseURL)?.path.dropFirst(), !name.isEmpty,
            name.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" })
        else { throw TestPostgresError(message: "no database name in \(databaseURL)") }
        try await TestPostgres.execute(
            [
                "ALTER DATABASE \(name) SET session_preload_libraries = 'auto_explain'",
                "ALTER DATABASE \(name) SET auto_explain.log_min_duration = 0",
                "ALTER DATABASE \(name) SET auto_explain.log_format = 'json'",
                "ALTER DATABASE \(name) SET enable_seqscan = off",
            ], on: databaseURL)
    }
}
