// The ledger as it grows (issues 8 and 38): what a durable delivery, a wallet read, support's user search and the
// dashboard cost as the store grows to ten million ledger entries, on SQLite (the embedded default) or PostgreSQL,
// and the process's resident memory at each size (the store in process: its connections, their page caches and
// statements; on PostgreSQL, the client's side only; filled through the API, this tool's own list of users too).
// The cost per delivery and the memory must not grow with the size of the ledger.
//
//   LedgerGrowth [--entries 1000000] [--database-url postgres://...] [--bulk] [--entries-per-user 10]
//
// At 10 thousand (not with --bulk), 100 thousand, 1 million and `--entries` entries it measures, on the store as it
// stands: 500 deliveries one per commit, 40 group commits of 64, 2,000 wallet reads, 100 Support ID prefix
// searches and 5 dashboards (30 days).
//
// Without `--bulk` it fills through the store's API, in group commits of 1,000 purchases spread over one user per
// `--entries-per-user` entries (a million entries take minutes). With `--bulk` (either engine) each size is reached
// by SQL (BenchmarkSupport's SupportFill, as the support-scale benchmark fills: customers with a year's ten
// receipts each, their entries, wallets, renewals, notifications and grants), the store's triggers keeping its
// rollups as they would for each delivery, then ANALYZE; on PostgreSQL the rollups' contributions are folded before
// measuring, as a server's RollupFolder would. Ten million entries through the API would take hours here.
import BenchmarkSupport
import CofferCore
import CofferStore
import CofferStorePostgres
import CofferStoreSQLite
import Foundation

let arguments = Array(CommandLine.arguments.dropFirst())
func option(_ name: String, _ fallback: String) -> String {
    guard let index = arguments.firstIndex(of: "--\(name)"), index + 1 < arguments.count else { return fallback }
    return arguments[index + 1]
}

let totalEntries = Int(option("entries", "1000000")) ?? 1_000_000
let entriesPerUser = Int(option("entries-per-user", "10")) ?? 10
let databaseURL = option("database-url", "")
let bulk = arguments.contains("--bulk")
let folder = FileManager.default.temporaryDirectory.appendingPathComponent("coffer-growth-\(UUID().uuidString)")
try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(at: folder) }

let store: any CofferStore
let engine: String
let sqlitePath = folder.appendingPathComponent("growth.sqlite").path
if databaseURL.isEmpty {
    store = try SQLiteStore(path: sqlitePath)
    engine = "SQLite (synchronous=FULL, WAL)"
} else {
    store = try await PostgresStore(url: databaseURL, maximumConnections: 8)
    engine = "PostgreSQL"
}

var generator = SystemRandomNumberGenerator()
let now = Date()
var users: [User] = []
var nextTransaction = 10_000_000_000
var entries = 0
/// Customers the bulk fill wrote: customer `i` in `1...customers` is SupportFill's.
var customers = 0
let fill = SupportFill(
    dialect: databaseURL.isEmpty ? .sqlite : .postgres, now: Int64(now.timeIntervalSince1970 * 1000))

/// Adds users so there is one per `entriesPerUser` entries of the target.
@MainActor func addUsers(upTo target: Int) async throws {
    let wanted = max(1, target / entriesPerUser)
    while users.count < wanted {
        let user = User(
            environment: .sandbox, supportId: SupportID.random(using: &generator), tokenHash: UUID().uuidString,
            createdAt: now.addingTimeInterval(-Double(users.count)))
        try await store.createUser(user)
        users.append(user)
    }
}

@MainActor func purchase(owner: UUID) -> LedgerRequest {
    nextTransaction += 1
    let fact = TransactionFact(
        transactionId: String(nextTransaction), productId: "com.example.credits", purchaseDate: now)
    return LedgerRequest(owner: owner, environment: .sandbox, event: .purchase(fact, credits: 100), at: now)
}

/// Grows the ledger to `target` entries in group commits of 1,000 spread over the users.
@MainActor func grow(to target: Int) async throws {
    try await addUsers(upTo: target)
    while entries < target {
        let count = min(1_000, target - entries)
        let requests = (0..<count).map { index in purchase(owner: users[(entries + index) % users.count].id) }
        for result in try await store.apply(requests) { _ = try result.get() }
        entries += count
    }
}

/// The bulk fill did not leave what it should.
struct FillFailed: Error, CustomStringConvertible {
    let description: String
}

/// Runs one statement on the store's database beside the store.
@MainActor func execute(_ sql: String) async throws {
    try await SupportFill.execute(sql, databaseURL: databaseURL.isEmpty ? "sqlite:" + sqlitePath : databaseURL)
}

/// Adds SupportFill's customers until the ledger holds at least `target` entries (about ten a customer).
@MainActor func bulkFill(to target: Int) async throws {
    var wanted = max(1, target / 10)
    while SupportFill.entries(customers: wanted) < target { wanted += 1 }
    if customers < wanted {
        for statement in fill.statements(first: customers + 1, last: wanted) { try await execute(statement) }
        customers = wanted
    }
    try await execute("ANALYZE")
    if let postgres = store as? PostgresStore {
        while try await postgres.foldRollups() > 0 {}
    }
    entries = SupportFill.entries(customers: customers) + deliveredSinceFill
    guard try await store.wallet(owner: owner(customers), environment: .sandbox) != nil else {
        throw FillFailed(description: "customer \(customers) has no wallet after the fill")
    }
}

/// Purchases the measurements delivered on top of the fill.
var deliveredSinceFill = 0

/// Customer `i`'s id, as the bulk fill wrote it.
func owner(_ i: Int) -> UUID { UUID(uuidString: SupportFill.userId(i))! }

/// The process's resident memory in MB, from /proc.
func residentMegabytes() -> Int {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
        let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
        let kilobytes = Int(line.split(whereSeparator: \.isWhitespace).dropFirst().first ?? "")
    else { return 0 }
    return kilobytes / 1024
}

/// Microseconds per operation over `count` runs of `body`.
@MainActor func measure(_ count: Int, _ body: () async throws -> Void) async throws -> Double {
    let start = ContinuousClock.now
    for _ in 0..<count { try await body() }
    let elapsed = ContinuousClock.now - start
    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    return seconds * 1e6 / Double(count)
}

/// A random customer's id and Support ID: one of the users made through the API, or of the bulk fill's customers.
@MainActor func randomCustomer() -> (id: UUID, supportId: String) {
    if bulk {
        let i = Int.random(in: 1...customers, using: &generator)
        return (owner(i), SupportFill.supportId(i))
    }
    let user = users[Int.random(in: 0..<users.count, using: &generator)]
    return (user.id, user.supportId.rawValue)
}

print(
    "engine \(engine); "
        + (bulk ? "filled by SQL (SupportFill)" : "\(entriesPerUser) entries per user, through the API"))
print(
    "| ledger entries | users | delivery, 1 per commit | delivery, 64 per commit | wallet read | user search | dashboard "
        + "| resident memory |")
print("|---|---|---|---|---|---|---|---|")
let stages =
    [10_000, 100_000, 1_000_000].filter { $0 <= totalEntries && !(bulk && $0 < 100_000) }
    + (totalEntries > 1_000_000 ? [totalEntries] : [])
for stage in stages {
    let filling = ContinuousClock.now
    if bulk { try await bulkFill(to: stage) } else { try await grow(to: stage) }
    FileHandle.standardError.write(Data("grew to \(entries) entries in \(ContinuousClock.now - filling)\n".utf8))
    let single = try await measure(500) {
        _ = try await store.apply([purchase(owner: randomCustomer().id)])
        entries += 1
        deliveredSinceFill += 1
    }
    let grouped =
        try await measure(40) {
            let requests = (0..<64).map { _ in purchase(owner: randomCustomer().id) }
            for result in try await store.apply(requests) { _ = try result.get() }
            entries += 64
            deliveredSinceFill += 64
        } / 64
    let wallet = try await measure(2_000) {
        _ = try await store.wallet(owner: randomCustomer().id, environment: .sandbox)
    }
    let search = try await measure(100) {
        let prefix = String(randomCustomer().supportId.prefix(4))
        _ = try await store.users(environment: .sandbox, supportIdPrefix: prefix, limit: 26, offset: 0)
    }
    let dashboard = try await measure(5) { _ = try await store.dashboard(environment: .sandbox, days: 30, now: now) }
    let userCount = bulk ? customers : users.count
    print(
        "| \(entries.formatted()) | \(userCount.formatted()) | \(String(format: "%.0f", single)) µs | "
            + "\(String(format: "%.0f", grouped)) µs | \(String(format: "%.0f", wallet)) µs | "
            + "\(String(format: "%.2f", search / 1000)) ms | \(String(format: "%.1f", dashboard / 1000)) ms | "
            + "\(residentMegabytes()) MB |")
}
(store as? PostgresStore)?.close()
