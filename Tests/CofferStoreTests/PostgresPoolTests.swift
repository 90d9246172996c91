import CofferCore
import CofferStore
import CofferStorePostgres
import CofferTestSupport
import Foundation
import Logging
import ServiceLifecycle
import Synchronization
import Testing

/// Who runs PostgreSQL's pool, and the clock its deadline is kept on: in a service group the pool is the group's
/// service (`coffer serve`), and the operation deadline moves with the clock the store is given, not the wall's.
@Suite("PostgreSQL pool", .enabled(if: TestPostgres.url != nil || TestPostgres.required, "\(TestPostgres.missing)"))
struct PostgresPoolTests {
    @Test("in a service group the pool runs as the group's service: operations wait for it, and shutdown closes it")
    func serviceGroup() async throws {
        let url = try await TestPostgres.freshDatabase()
        let store = try await PostgresStore(url: url, maximumConnections: 2, runner: .serviceGroup)
        #expect(store.runner == .serviceGroup)
        let alice = Make.user("_aaaaaaaaaaa1")
        // Asked before the group runs the pool: the request waits for it rather than failing.
        let created = Task { try await store.createUser(alice) }
        let group = ServiceGroup(services: [store], logger: Logger(label: "coffer.tests"))
        try await withThrowingTaskGroup { tasks in
            tasks.addTask { try await group.run() }
            try await created.value
            _ = try await store.apply(Make.purchase("t1", for: alice))
            #expect(try await store.wallet(owner: alice.id, environment: .sandbox).balance == 400)
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
        // The group's shutdown closed the store: its pool is gone, and a second run returns at once.
        await store.run()
        await #expect(throws: (any Error).self) {
            _ = try await store.wallet(owner: alice.id, environment: .sandbox)
        }
        // The data is in the database for the next instance.
        let next = try await PostgresStore(url: url, maximumConnections: 1)
        defer { next.close() }
        #expect(try await next.wallet(owner: alice.id, environment: .sandbox).balance == 400)
    }

    @Test("the operation deadline is kept on the store's clock: a black hole answers unavailable once it passes")
    func deadlineOnTheClock() async throws {
        let url = try await TestPostgres.freshDatabase()
        var components = try #require(URLComponents(string: url))
        let proxy = try await FaultProxy(to: components.host ?? "127.0.0.1", port: components.port ?? 5432)
        components.host = "127.0.0.1"
        components.port = proxy.port
        let clock = TestClock()
        let store = try await PostgresStore(
            url: try #require(components.string), maximumConnections: 1, operationTimeout: .seconds(1), clock: clock)
        defer { store.close() }
        let alice = Make.user("_aaaaaaaaaaa1")
        try await store.createUser(alice)
        proxy.mode = .blackHole
        let answered = Mutex<Duration?>(nil)
        let read = Task {
            defer { answered.withLock { $0 = clock.elapsed } }
            return try await store.wallet(owner: alice.id, environment: .sandbox)
        }
        // The clock moves a quarter second at a time (the deadline timer's tick) until the read answers; the wall's
        // clock does not count. After each tick the read is given time to notice it (a loaded machine schedules it
        // late) before the clock moves on, so the clock never runs ahead of the read.
        var steps = 0
        while answered.withLock({ $0 }) == nil, steps < 400 {
            clock.advance(0.25)
            steps += 1
            for _ in 0..<2_000 where answered.withLock({ $0 }) == nil { await Task.yield() }
        }
        await #expect(throws: StoreError.unavailable("PostgreSQL did not answer within 1.0 seconds")) {
            _ = try await read.value
        }
        // Not before the deadline on the store's clock, and at most a tick or two after it.
        let at = try #require(answered.withLock { $0 })
        #expect(at >= .seconds(1) && at <= .seconds(2), "answered at \(at) on the store's clock")
        proxy.mode = .pass
        proxy.cutAll()
        await proxy.stop()
    }
}
