import CofferCore
import CofferStore
import CofferStorePostgres
import CofferStoreSQLite
import CofferTestSupport
import Foundation
import Testing

/// Faults a deployment meets, on the real engines: PostgreSQL behind a proxy that cuts connections or turns
/// into a black hole, and SQLite out of room. Every operation answers within its deadline with
/// ``StoreError/unavailable(_:)``, nothing acknowledged is lost, nothing is credited twice, and the store serves
/// again once the fault is gone.
@Suite("Database faults", .tags(.timing))
struct DatabaseFaultTests {
    /// Retries `body` until it succeeds or `limit` passes; answers how long it took.
    static func untilServing(within limit: Duration, _ body: () async throws -> Void) async throws -> Duration {
        let start = ContinuousClock.now
        while true {
            do {
                try await body()
                return ContinuousClock.now - start
            } catch let error as StoreError {
                guard case .unavailable = error, ContinuousClock.now - start < limit else { throw error }
                try await Task.sleep(for: .milliseconds(50))
            }
        }
    }

    /// Whether `body` fails with ``StoreError/unavailable(_:)``.
    static func unavailable(_ body: () async throws -> Void) async -> Bool {
        do {
            try await body()
            return false
        } catch StoreError.unavailable {
            return true
        } catch {
            return false
        }
    }

    @Test(
        "PostgreSQL away for 20 s (new connections refused): unavailable throughout, serving within seconds of its return",
        .enabled(if: TestPostgres.url != nil || TestPostgres.required, "\(TestPostgres.missing)"))
    func longOutage() async throws {
        let url = try await TestPostgres.freshDatabase()
        var components = try #require(URLComponents(string: url))
        let proxy = try await FaultProxy(to: components.host ?? "127.0.0.1", port: components.port ?? 5432)
        components.host = "127.0.0.1"
        components.port = proxy.port
        let store = try await PostgresStore(url: try #require(components.string), operationTimeout: .seconds(1))
        defer { store.close() }
        let alice = Make.user("_aaaaaaaaaab1")
        try await store.createUser(alice)
        // The database goes away: connections cut, new ones refused, for 20 s while requests keep coming (the
        // pool's own wait between attempts would grow to seconds, and past 15 s it refuses outright).
        proxy.mode = .refuse
        proxy.cutAll()
        let away = ContinuousClock.now
        var attempts = 0
        while ContinuousClock.now - away < .seconds(20) {
            let started = ContinuousClock.now
            #expect(await Self.unavailable { _ = try await store.wallet(owner: alice.id, environment: .sandbox) })
            // The deadline is 1 s; the bound leaves room for a test run that keeps both cores busy beside it.
            #expect(ContinuousClock.now - started < .seconds(5))
            attempts += 1
            try await Task.sleep(for: .milliseconds(200))
        }
        proxy.mode = .pass
        let back = try await Self.untilServing(within: .seconds(30)) {
            _ = try await store.apply(Make.purchase("t1", for: alice))
        }
        print("database faults: served again \(back) after a 20 s outage of \(attempts) failed requests")
        // Alone it serves again in well under a second (BENCHMARKS.md); the pool's own wait between connection
        // attempts grows with the outage, up to a minute. The bound leaves room for a run that keeps both cores busy beside it
        // (seen: 3.6 s while the model simulation ran).
        #expect(back < .seconds(8), "served again \(back) after the database answered")
        #expect(try await store.wallet(owner: alice.id, environment: .sandbox).balance == 400)
        await proxy.stop()
    }

    @Test(
        "PostgreSQL: a black hole or a cut answers unavailable within the deadline; it serves again at once after",
        .enabled(if: TestPostgres.url != nil || TestPostgres.required, "\(TestPostgres.missing)"))
    func postgresFaults() async throws {
        let url = try await TestPostgres.freshDatabase()
        var components = try #require(URLComponents(string: url))
        let proxy = try await FaultProxy(to: components.host ?? "127.0.0.1", port: components.port ?? 5432)
        components.host = "127.0.0.1"
        components.port = proxy.port
        let store = try await PostgresStore(
            url: try #require(components.string), operationTimeout: .seconds(1))
        defer { store.close() }
        let alice = Make.user("_aaaaaaaaaaa1")
        try await store.createUser(alice)
        _ = try await store.apply(Make.purchase("t1", for: alice))

        // A black hole: every read and write answers unavailable at its deadline (1 s), not later. The bound
        // leaves room for a run that keeps both cores busy beside it (seen: 3.8 s), as the load test's does.
        proxy.mode = .blackHole
        for attempt in 0..<3 {
            var start = ContinuousClock.now
            #expect(await Self.unavailable { _ = try await store.apply(Make.purchase("t2", for: alice)) })
            #expect(ContinuousClock.now - start < .seconds(6), "write \(attempt)")
            start = ContinuousClock.now
            #expect(await Self.unavailable { _ = try await store.wallet(owner: alice.id, environment: .sandbox) })
            #expect(ContinuousClock.now - start < .seconds(6), "read \(attempt)")
        }
        // The database answers again: the stuck connections drop, and the next request is served.
        proxy.mode = .pass
        proxy.cutAll()
        let back = try await Self.untilServing(within: .seconds(10)) {
            _ = try await store.apply(Make.purchase("t2", for: alice))
        }
        #expect(back < .seconds(10))

        // Cut every connection in the middle of a load of deliveries: each answers (applied, or unavailable and
        // then applied or duplicate when asked again); nothing is credited twice.
        let ids = (3..<43).map { "t\($0)" }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for id in ids {
                group.addTask {
                    _ = try await Self.untilServing(within: .seconds(20)) {
                        _ = try await store.apply(Make.purchase(id, for: alice))
                    }
                }
            }
            group.addTask {
                for _ in 0..<4 {
                    try await Task.sleep(for: .milliseconds(30))
                    proxy.cutAll()
                }
            }
            try await group.waitForAll()
        }
        #expect(try await store.wallet(owner: alice.id, environment: .sandbox).balance == Int64(2 + ids.count) * 400)
        let entries = try await store.entries(owner: alice.id, environment: .sandbox)
        #expect(entries.count == 2 + ids.count)
        #expect(
            LedgerAudit.discrepancies(
                entries: entries, wallet: try await store.wallet(owner: alice.id, environment: .sandbox)
            ).isEmpty)
        await proxy.stop()
    }

    @Test("SQLite: a full disk answers unavailable and changes nothing; reads go on; it serves again with room")
    func sqliteFull() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("coffer-full-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("coffer.sqlite").path
        let alice = Make.user("_aaaaaaaaaaa1")
        do {
            let store = try SQLiteStore(path: path)
            try await store.createUser(alice)
            _ = try await store.apply(Make.purchase("t1", for: alice))
        }
        // The same file with no room to grow (SQLite's page limit stands in for a full disk).
        let full = try SQLiteStore(path: path, pageLimit: 1)
        var refused = 0
        for index in 0..<50 {
            var request = Make.purchase("big-\(index)", for: alice)
            request.event = .grant(id: "g\(index)-" + String(repeating: "x", count: 6_000), credits: 1, reason: "")
            do {
                _ = try await full.apply(request)
            } catch let error as StoreError {
                guard case .unavailable = error else { throw error }
                refused += 1
            }
        }
        // A few may fit in pages the file has free; the rest are refused whole.
        #expect(refused >= 40)
        let granted = Int64(50 - refused)
        #expect(try await full.wallet(owner: alice.id, environment: .sandbox).balance == 400 + granted)
        #expect(try await full.entries(owner: alice.id, environment: .sandbox).count == 1 + Int(granted))
        // Room again: the same requests are served, once each.
        let roomy = try SQLiteStore(path: path)
        _ = try await roomy.apply(Make.purchase("t2", for: alice))
        let wallet = try await roomy.wallet(owner: alice.id, environment: .sandbox)
        #expect(wallet.balance == 800 + granted)
        let entries = try await roomy.entries(owner: alice.id, environment: .sandbox)
        #expect(LedgerAudit.discrepancies(entries: entries, wallet: wallet).isEmpty)
    }
}
