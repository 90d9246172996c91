import Benchmark
import CofferCore
import CofferStore
import CofferStoreSQLite
import Foundation
import GRDB
import Synchronization

/// Durable deliveries into a SQLite file, against the bare SQLite transaction they are built on.
///
/// One delivery = `store.apply` of a purchase: read receipt, wallet and key, decide, write receipt, entry and
/// wallet, commit. The peer is the bare transaction a delivery cannot do without: one INSERT and one UPDATE,
/// committed, on a file with the same journal mode and `synchronous` setting, measured in the same run.
let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.throughput, .wallClock],
        units: [.throughput: .count],
        warmupIterations: 1,
        scalingFactor: .kilo,
        maxDuration: .seconds(15),
        maxIterations: 15
    )

    for durability in SQLiteDurability.allCases {
        let setting = "synchronous=\(durability.rawValue.uppercased())"
        let ledger = LedgerFixture(durability: durability)
        let bare = BareFixture(durability: durability)

        Benchmark(
            "bare SQLite INSERT+UPDATE transaction, \(setting)",
            configuration: .init(setup: { try bare.prepare() })
        ) { benchmark in
            for _ in benchmark.scaledIterations { try await bare.transaction() }
        }

        Benchmark(
            "delivery, one per commit, \(setting)",
            configuration: .init(setup: { try await ledger.prepare() })
        ) { benchmark in
            for _ in benchmark.scaledIterations { try await ledger.deliver(count: 1) }
        }

        Benchmark(
            "delivery, group commit of 64, \(setting)",
            configuration: .init(setup: { try await ledger.prepare() })
        ) { benchmark in
            for _ in 0..<(benchmark.scaledIterations.count / 64) { try await ledger.deliver(count: 64) }
            try await ledger.deliver(count: benchmark.scaledIterations.count % 64)
        }
    }
}

/// A Coffer SQLite store with one user, fed purchases with fresh transaction ids.
final class LedgerFixture: Sendable {
    let durability: SQLiteDurability
    let state = Mutex<(store: SQLiteStore, owner: UUID)?>(nil)
    let counter = Atomic<Int>(0)

    init(durability: SQLiteDurability) { self.durability = durability }

    func prepare() async throws {
        let store = try SQLiteStore(path: try temporaryPath("ledger"), durability: durability)
        var generator = SystemRandomNumberGenerator()
        let user = User(
            environment: .sandbox, supportId: SupportID.random(using: &generator), tokenHash: UUID().uuidString,
            createdAt: Date())
        try await store.createUser(user)
        state.withLock { $0 = (store, user.id) }
    }

    func deliver(count: Int) async throws {
        guard count > 0, let (store, owner) = state.withLock({ $0 }) else { return }
        let now = Date()
        let requests = (0..<count).map { _ in
            let id = counter.wrappingAdd(1, ordering: .relaxed).newValue
            let fact = TransactionFact(
                transactionId: "tx-\(id)", productId: "com.example.credits.400k", purchaseDate: now)
            return LedgerRequest(owner: owner, environment: .sandbox, event: .purchase(fact, credits: 400_000), at: now)
        }
        for result in try await store.apply(requests) { _ = try result.get() }
    }
}

/// The bare transaction: one INSERT and one UPDATE through GRDB, same journal mode and durability.
final class BareFixture: Sendable {
    let durability: SQLiteDurability
    let pool = Mutex<DatabasePool?>(nil)
    let counter = Atomic<Int>(0)

    init(durability: SQLiteDurability) { self.durability = durability }

    func prepare() throws {
        var configuration = Configuration()
        let pragma = durability == .full ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = NORMAL"
        configuration.prepareDatabase { db in try db.execute(sql: pragma) }
        let database = try DatabasePool(path: try temporaryPath("bare"), configuration: configuration)
        try database.write { db in
            try db.execute(
                sql: """
                    CREATE TABLE receipts (id TEXT PRIMARY KEY NOT NULL, owner TEXT NOT NULL, credits INTEGER NOT NULL);
                    CREATE TABLE wallets (id TEXT PRIMARY KEY NOT NULL, balance INTEGER NOT NULL);
                    INSERT INTO wallets VALUES ('owner', 0);
                    """)
        }
        pool.withLock { $0 = database }
    }

    func transaction() async throws {
        guard let database = pool.withLock({ $0 }) else { return }
        let id = counter.wrappingAdd(1, ordering: .relaxed).newValue
        try await database.write { db in
            try db.cachedStatement(sql: "INSERT INTO receipts VALUES (?, 'owner', 400000)").execute(arguments: [
                "tx-\(id)"
            ])
            try db.cachedStatement(sql: "UPDATE wallets SET balance = balance + 400000 WHERE id = 'owner'").execute()
        }
    }
}

func temporaryPath(_ name: String) throws -> String {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("coffer-bench-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    return folder.appendingPathComponent("\(name).sqlite").path
}
