// Deliveries per second with webhooks on and off, side by side in one run (issue 37): `coffer serve` on SQLite
// (server wallet) is loaded with wrk as `wrk` loads it, first with no endpoint, then with `webhook.url` naming a
// receiver (this binary run as `DeliveryLoad receiver`: a bare Hummingbird route that counts what it is sent and
// answers 204). With webhooks on, the receiver must get one signed event for every delivered purchase.
//
// This disk's fsync speed drifts between minutes (the rate without webhooks moved 16% between two runs of the same
// code), so one phase of each is not a comparison. The phases run in pairs, the second pair in the opposite order
// (off, on, on, off: a drift over the run weighs on both alike), each on a fresh server and database, and the goal is
// checked on the rates over all phases of each kind.
import Foundation
import Hummingbird
import Synchronization

enum WebhookBenchmark {
    static func run(_ options: Options) async throws -> Int32 {
        let seconds = options.double("seconds", 30)
        let warmup = options.double("warmup", 5)
        let connections = options.int("connections", 64)
        let customerCount = options.int("customers", 1024)
        let rate = options.double("rate", 8000)
        let pairs = max(1, options.int("pairs", 2))
        let fixture = try Fixture()
        defer { fixture.remove() }
        let folder = fixture.folder.path
        let http = HTTP(connections: 16)
        defer { Task { try? await http.shutdown() } }
        let receiverPort = freePort()
        let receiver = try await Child(
            name: "webhook receiver", arguments: ["receiver", "--port", String(receiverPort)], port: receiverPort,
            environment: [:], http: http, readiness: "/readyz")
        defer { receiver.stop(grace: 0) }
        func received() async throws -> Int {
            let (_, body) = try await http.call("GET", "http://127.0.0.1:\(receiverPort)/count")
            return Int(String(decoding: body, as: UTF8.self)) ?? -1
        }

        var delivered: [Bool: (count: Int, seconds: Double)] = [false: (0, 0), true: (0, 0)]
        var failed = false
        var expected = 0
        let phases = (0..<pairs).flatMap { $0 % 2 == 0 ? [false, true] : [true, false] }
        for (index, webhooks) in phases.enumerated() {
            var environment = serverEnvironment
            if webhooks {
                environment["COFFER_WEBHOOK_URL"] = "http://127.0.0.1:\(receiverPort)/hooks"
                environment["COFFER_WEBHOOK_SECRET"] = "whsec_benchmark_secret_0123456789"
            }
            let port = freePort()
            let databaseURL = "sqlite:" + fixture.folder.appendingPathComponent("hooks-\(index).sqlite").path
            let server = try await Child(
                name: webhooks ? "coffer serve (webhooks on)" : "coffer serve (webhooks off)",
                arguments: fixture.serveArguments(port: port, databaseURL: databaseURL, wallet: "server"), port: port,
                environment: environment, http: http, readiness: "/readyz")
            defer { server.stop(grace: 0) }
            let customers = try await createCustomers(customerCount, base: "http://127.0.0.1:\(port)", http: http)
            func job(_ phase: String, _ seconds: Double) -> WrkJob {
                WrkJob(
                    name: phase, port: port, connections: connections, threads: 2, seconds: seconds,
                    prefix: "\(folder)/hooks-\(index)-\(phase)", expect: "delivered")
            }
            let (warmJob, runJob) = (job("warm", warmup), job("run", seconds))
            let firstId = 5_000_000_000_000 + index * 1_000_000_000
            // Both phases' transactions are signed before the warm-up, so the warm-up's events wait for the window
            // in the outbox as they would under a real peak (signing between them would let the backlog drain).
            try await writeDeliveries(
                count: Int(rate * warmup), firstId: firstId, customers: customers, files: warmJob.files,
                fixture: fixture)
            try await writeDeliveries(
                count: Int(rate * seconds), firstId: firstId + 500_000_000, customers: customers, files: runJob.files,
                fixture: fixture)
            let warm = try await Wrk.run(warmJob)
            let before = CPUSnapshot([server])
            let measured = try await Wrk.run(runJob)
            let after = CPUSnapshot([server])
            let measuredRate = measured.rate
            delivered[webhooks] = (
                (delivered[webhooks]?.count ?? 0) + measured.good,
                (delivered[webhooks]?.seconds ?? 0) + measured.seconds
            )
            print(
                """
                == phase \(index + 1) of \(phases.count), webhooks \(webhooks ? "on" : "off"): \(measured.good) deliveries \
                in \(format(measured.seconds, 1)) s, \(format(measuredRate, 0))/s, errors \(measured.errors), \
                latency \(measured.latency)
                CPU per delivery: \(CPUSnapshot.per(measured.good, from: before, to: after))
                """)
            if measured.errors > 0 || warm.errors > 0 { failed = true }
            if measured.dry > 0 {
                // The load's shortfall, not the server's: this phase's rate is only a floor.
                print("RAN DRY: \(measured.dry) requests found no signed transaction left; the rate is a floor")
                failed = true
            }
            guard webhooks else { continue }
            // Every delivered purchase's event reaches the receiver once the load ends (the backlog drains); the
            // receiver's count runs over the whole benchmark.
            expected += warm.good + measured.good
            let draining = ContinuousClock.now
            var count = try await received()
            for _ in 0..<1_200 where count < expected {
                try await Task.sleep(for: .milliseconds(100))
                count = try await received()
            }
            print(
                "webhooks: \(count) events received for \(expected) deliveries; the backlog drained "
                    + "\(format(Double((ContinuousClock.now - draining).components.seconds), 0)) s after the load ended"
            )
            if count < expected { failed = true }
        }
        func rateOf(_ webhooks: Bool) -> Double {
            guard let (count, seconds) = delivered[webhooks], seconds > 0 else { return 0 }
            return Double(count) / seconds
        }
        let ratio = rateOf(true) / max(1, rateOf(false))
        print(
            "over \(pairs) pair(s) of phases: \(format(rateOf(false), 0))/s without webhooks, \(format(rateOf(true), 0))/s "
                + "with them")
        print("with webhooks on: \(format(100 * ratio, 1))% of the rate without them (the goal: 90% or more)")
        if ratio < 0.9 { failed = true }
        print(failed ? "FAILED" : "PASSED")
        return failed ? 1 : 0
    }
}

/// The developer's backend in the benchmark: counts the events posted to it and answers 204 at once.
enum WebhookReceiver {
    static func run(port: Int) async throws {
        let count = Atomic<Int>(0)
        let router = Router()
        router.get("readyz") { _, _ in "ready" }
        router.get("count") { _, _ in String(count.load(ordering: .relaxed)) }
        router.post("hooks") { request, _ -> HTTPResponse.Status in
            _ = try await request.body.collect(upTo: 64 * 1024)
            count.add(1, ordering: .relaxed)
            return .noContent
        }
        let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: port)))
        try await app.runService()
    }
}
