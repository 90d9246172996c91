// The ledger as it grows (issue 8): what a durable delivery, a wallet read, support's user search and the
// dashboard cost as the store grows to a million ledger entries, on SQLite (the embedded default) or
// PostgreSQL. The cost per delivery must not grow with the size of the ledger.
//
//   LedgerGrowth [--entries 1000000] [--entries-per-user 10] [--database-url postgres://... [--bulk]]
//
// It fills a fresh store in group commits of 1,000 purchases spread over the users, and at 10 thousand,
// 100 thousand and 1 million entries measures, on the store as it stands: 500 deliveries one per commit,
// 40 group commits of 64, 2,000 wallet reads, 100 Support ID prefix searches and 5 dashboards.
//
// With `--bulk` (PostgreSQL), each size is instead written afresh by one SQL statement per table through
// `psql` (generate_series): the same rows the ledger writes for a purchase (users, wallets, receipts,
// entries with their running balances), then ANALYZE, as autovacuum would after a real fill. Filling a
// million entries through the store's API takes about half an hour here; this takes about a minute.
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
guard !bulk || !databaseURL.isEmpty else {
    // psql without a URL would empty whatever database it connects to by default.
    FileHandle.standardError.write(Data("--bulk fills PostgreSQL only: give --database-url too\n".utf8))
    exit(2)
}
let folder = FileManager.default.temporaryDirectory.appendingPathComponent("coffer-growth-\(UUID().uuidString)")
try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(at: folder) }

let store: any CofferStore
let engine: String
if databaseURL.isEmpty {
    store = try SQLiteStore(path: folder.appendingPathComponent("growth.sqlite").path)
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

@MainActor func purchase(for user: User) -> LedgerRequest {
    nextTransaction += 1
    let fact = TransactionFact(
        transactionId: String(nextTransaction), productId: "com.example.credits", purchaseDate: now)
    return LedgerRequest(owner: user.id, environment: .sandbox, event: .purchase(fact, credits: 100), at: now)
}

/// Grows the ledger to `target` entries in group commits of 1,000 spread over the users.
@MainActor func grow(to target: Int) async throws {
    try await addUsers(upTo: target)
    while entries < target {
        let count = min(1_000, target - entries)
        let requests = (0..<count).map { index in purchase(for: users[(entries + index) % users.count]) }
        for result in try await store.apply(requests) { _ = try result.get() }
        entries += count
    }
}

/// The bulk fill did not leave what it should.
struct FillFailed: Error, CustomStringConvertible {
    let description: String
}

/// Writes a fresh PostgreSQL store of `target` purchases, `entriesPerUser` per user, with `psql`, and loads
/// its users: what `grow(to:)` would leave, in a minute instead of half an hour.
@MainActor func bulkFill(to target: Int) async throws {
    let userCount = max(1, target / entriesPerUser)
    let perUser = target / userCount
    let millis = Int64(now.timeIntervalSince1970 * 1000)
    let user = "upper(md5('u' || i)::uuid::text)"
    let transaction = "(20000000000 + (k - 1) * \(userCount) + i)::text"
    let sql = """
        TRUNCATE users, wallets, receipts, ledger_entries CASCADE;
        INSERT INTO users (id, environment, support_id, token_hash, app_account_token, created_at)
            SELECT \(user), 'Sandbox', '_' || substr(md5('s' || i), 1, 12), md5('t' || i),
                upper(md5('a' || i)::uuid::text), \(millis) - i * 1000
            FROM generate_series(1, \(userCount)) i;
        INSERT INTO wallets (user_id, balance, deficit)
            SELECT \(user), \(100 * perUser), 0 FROM generate_series(1, \(userCount)) i;
        INSERT INTO receipts (environment, transaction_id, owner, original_transaction_id, product_id, quantity,
                purchase_date, expires_date, revocation_date, family_shared, trial, upgraded, delivered_credits,
                delivered_at, revoked_at, taken_from_balance, added_to_deficit, reversed_at)
            SELECT 'Sandbox', \(transaction), \(user), \(transaction), 'com.example.credits', 1, \(millis), NULL,
                NULL, false, false, false, 100, \(millis), NULL, 0, 0, NULL
            FROM generate_series(1, \(perUser)) k, generate_series(1, \(userCount)) i ORDER BY k, i;
        INSERT INTO ledger_entries (environment, owner, key, kind, amount, balance_delta, deficit_delta,
                balance_after, deficit_after, transaction_id, product_id, reason, created_at)
            SELECT 'Sandbox', \(user), 'purchase:' || \(transaction), 'purchase', 100, 100, 0, 100 * k, 0,
                \(transaction), 'com.example.credits', NULL, \(millis)
            FROM generate_series(1, \(perUser)) k, generate_series(1, \(userCount)) i ORDER BY k, i;
        ANALYZE;
        """
    let psql = Process()
    psql.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    psql.arguments = ["psql", databaseURL, "-q", "-v", "ON_ERROR_STOP=1", "-c", sql]
    try psql.run()
    psql.waitUntilExit()
    guard psql.terminationStatus == 0 else { throw FillFailed(description: "psql exited \(psql.terminationStatus)") }
    users = []
    while true {
        let page = try await store.users(environment: .sandbox, supportIdPrefix: nil, limit: 5_000, offset: users.count)
        users += page
        if page.count < 5_000 { break }
    }
    guard users.count == userCount else {
        throw FillFailed(description: "wrote \(userCount) users, read back \(users.count)")
    }
    entries = userCount * perUser
}

/// Microseconds per operation over `count` runs of `body`.
@MainActor func measure(_ count: Int, _ body: () async throws -> Void) async throws -> Double {
    let start = ContinuousClock.now
    for _ in 0..<count { try await body() }
    let elapsed = ContinuousClock.now - start
    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    return seconds * 1e6 / Double(count)
}

@MainActor func randomUser() -> User { users[Int.random(in: 0..<users.count, using: &generator)] }

print("engine \(engine); \(entriesPerUser) entries per user")
print(
    "| ledger entries | users | delivery, 1 per commit | delivery, 64 per commit | wallet read | user search | dashboard |"
)
print("|---|---|---|---|---|---|---|")
let stages =
    [10_000, 100_000, 1_000_000].filter { $0 <= totalEntries } + (totalEntries > 1_000_000 ? [totalEntries] : [])
for stage in stages {
    let filling = ContinuousClock.now
    if bulk { try await bulkFill(to: stage) } else { try await grow(to: stage) }
    FileHandle.standardError.write(Data("grew to \(stage) entries in \(ContinuousClock.now - filling)\n".utf8))
    let single = try await measure(500) {
        _ = try await store.apply([purchase(for: randomUser())])
        entries += 1
    }
    let grouped =
        try await measure(40) {
            let requests = (0..<64).map { _ in purchase(for: randomUser()) }
            for result in try await store.apply(requests) { _ = try result.get() }
            entries += 64
        } / 64
    let wallet = try await measure(2_000) { _ = try await store.wallet(owner: randomUser().id, environment: .sandbox) }
    let search = try await measure(100) {
        let prefix = String(randomUser().supportId.rawValue.prefix(4)).lowercased()
        _ = try await store.users(environment: .sandbox, supportIdPrefix: prefix, limit: 26, offset: 0)
    }
    let dashboard = try await measure(5) { _ = try await store.dashboard(environment: .sandbox, days: 30, now: now) }
    print(
        "| \(stage.formatted()) | \(users.count.formatted()) | \(String(format: "%.0f", single)) µs | "
            + "\(String(format: "%.0f", grouped)) µs | \(String(format: "%.0f", wallet)) µs | "
            + "\(String(format: "%.2f", search / 1000)) ms | \(String(format: "%.1f", dashboard / 1000)) ms |")
}
(store as? PostgresStore)?.close()
