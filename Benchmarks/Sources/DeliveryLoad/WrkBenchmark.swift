// `DeliveryLoad wrk`: the delivery benchmark with wrk as the load generator (see main.swift).
import CofferCore
import CofferStore
import CofferStorePostgres
import CofferStoreSQLite
import Foundation

/// CPU seconds used so far by the servers, PostgreSQL's processes and the whole machine.
struct CPUSnapshot {
    var servers: [Double]
    var postgres: Double
    var machineBusy: Double
    var machineTotal: Double

    init(_ servers: [Child]) {
        self.servers = servers.map(\.cpuSeconds)
        postgres = ProcReading.cpuSeconds(named: "postgres")
        (machineBusy, machineTotal) = ProcReading.machine()
    }

    /// Per unit of work between two snapshots: servers, PostgreSQL, and the rest of the machine (wrk, the
    /// kernel's own threads), in microseconds; and the machine's busy share.
    static func per(_ count: Int, from before: CPUSnapshot, to after: CPUSnapshot) -> String {
        let servers = zip(after.servers, before.servers).map { $0 - $1 }.reduce(0, +)
        let postgres = after.postgres - before.postgres
        let busy = after.machineBusy - before.machineBusy
        let total = after.machineTotal - before.machineTotal
        let unit = Double(max(1, count))
        var text = "server \(format(servers / unit * 1e6, 0)) µs"
        if postgres > 0.01 { text += ", PostgreSQL \(format(postgres / unit * 1e6, 0)) µs" }
        text += ", everything else (wrk, kernel) \(format(max(0, busy - servers - postgres) / unit * 1e6, 0)) µs"
        text += "; machine busy \(format(total > 0 ? 100 * busy / total : 0, 0))% of \(format(total, 0)) CPU-seconds"
        text += ", server \(format(servers, 1)) CPU-seconds"
        return text
    }
}

enum WrkBenchmark {
    static func run(_ options: Options) async throws -> Int32 {
        let engine = options.string("engine", "sqlite")
        let instances = options.int("instances", 1)
        let seconds = options.double("seconds", 60)
        let warmup = options.double("warmup", 5)
        let connections = options.int("connections", 64)
        let customerCount = options.int("customers", 1024)
        let rate = options.double("rate", 8000)
        guard instances >= 1, instances == 1 || engine == "postgres" else {
            throw LoadFailure("several instances share a PostgreSQL database: --engine postgres")
        }
        guard connections >= instances else { throw LoadFailure("at least one connection per instance") }
        let fixture = try Fixture()
        defer { fixture.remove() }
        let folder = fixture.folder.path
        let databaseURL = try options.databaseURL(in: fixture.folder)
        let http = HTTP(connections: 16)
        defer { Task { try? await http.shutdown() } }
        var failed = false

        // The limit: a bare Hummingbird route with one ES256 verification per request, measured first.
        var limit: Double?
        if options.flag("peer") {
            limit = try await peer(
                fixture: fixture, http: http, connections: connections, seconds: seconds, warmup: warmup)
        }

        // Coffer: `instances` servers on one database.
        var servers: [Child] = []
        defer { for server in servers { server.stop(grace: 0) } }
        for index in 0..<instances {
            let port = freePort()
            servers.append(
                try await Child(
                    name: "coffer serve \(index)",
                    arguments: fixture.serveArguments(port: port, databaseURL: databaseURL, wallet: "server"),
                    port: port, environment: serverEnvironment, http: http, readiness: "/readyz"))
        }
        let customers = try await createCustomers(
            customerCount, base: "http://127.0.0.1:\(servers[0].port)", http: http)

        let threads = max(1, 2 / instances)
        func jobs(_ phase: String, seconds: Double) -> [WrkJob] {
            (0..<instances).map { index in
                WrkJob(
                    name: "\(phase) \(index)", port: servers[index].port,
                    connections: connections / instances + (index < connections % instances ? 1 : 0), threads: threads,
                    seconds: seconds, prefix: "\(folder)/\(phase)-\(index)", expect: "delivered")
            }
        }
        let warmJobs = jobs("warm", seconds: warmup)
        let runJobs = jobs("run", seconds: seconds)
        // The warm-up's transactions at `--rate`, then the window's at the rate the warm-up met (and half as many
        // again): a faster day does not run the load dry.
        var signing = ContinuousClock.now
        let warmCount = Int(rate * warmup)
        try await writeDeliveries(
            count: warmCount, firstId: 3_000_000_000_000, customers: customers, files: warmJobs.flatMap(\.files),
            fixture: fixture)
        progress("signed \(warmCount) transactions for the warm-up in \(ContinuousClock.now - signing)")
        let warm = try await runAll(warmJobs)
        signing = ContinuousClock.now
        let runCount = WrkResult.transactions(for: seconds, after: warm, planned: rate)
        try await writeDeliveries(
            count: runCount, firstId: 4_000_000_000_000, customers: customers, files: runJobs.flatMap(\.files),
            fixture: fixture)
        progress("signed \(runCount) transactions for the window in \(ContinuousClock.now - signing)")

        let before = CPUSnapshot(servers)
        let start = ContinuousClock.now
        let first = servers[0]
        async let memory = memoryTimeline(of: first, from: start, until: start + .seconds(seconds))
        let measured = try await runAll(runJobs)
        let after = CPUSnapshot(servers)
        let timeline = await memory
        let delivered = measured.reduce(0) { $0 + $1.good }
        let window = measured.map(\.seconds).max() ?? seconds
        let errors = measured.reduce(0) { $0 + $1.errors }
        let rateMeasured = Double(delivered) / window
        print(
            """
            == Coffer: \(engine), \(instances) instance\(instances == 1 ? "" : "s"), \(connections) connections, \
            \(customerCount) customers, \(format(window, 1)) s measured after \(format(warmup, 0)) s warm-up
            deliveries \(delivered), \(format(rateMeasured, 0))/s\
            \(limit.map { ", \(format(100 * rateMeasured / $0, 0))% of the bare Hummingbird + ES256 limit" } ?? "")
            errors \(errors)\(measured.flatMap(\.samples).first.map { " (first: \($0))" } ?? "")
            """)
        for result in measured { print("latency (\(result.job.name)): \(result.latency)") }
        print("CPU per delivery: \(CPUSnapshot.per(delivered, from: before, to: after))")
        print("server 0 memory MB, every 10 s of the window: \(timeline.map { format($0, 0) }.joined(separator: ", "))")
        if errors > 0 { failed = true }
        let dry = measured.reduce(0) { $0 + $1.dry }
        if dry > 0 {
            // The load's shortfall, not the server's: the rate above is only a floor.
            print("RAN DRY: \(dry) requests found no signed transaction left; the rate is a floor, not a measurement")
            failed = true
        }

        var acknowledged = Set((warm + measured).flatMap(\.acknowledged))
        var mixed: Mixed.Outcome?
        if options.flag("mixed") {
            mixed = try await Mixed.run(
                servers: servers, customers: customers, fixture: fixture, databaseURL: databaseURL,
                connections: connections, seconds: seconds, deliveryRate: rateMeasured,
                deliveryLatency: measured.map(\.p50).max() ?? 10,
                refundable: Array(warm.flatMap(\.acknowledged).prefix(100_000)))
            acknowledged.formUnion(mixed?.acknowledged ?? [])
            if mixed?.passed == false { failed = true }
        }

        for server in servers { server.stop() }
        let ledger = try await LedgerCheck.run(
            databaseURL: databaseURL, customers: customers, acknowledged: acknowledged)
        print("ledger check: \(ledger.summary)")
        if !ledger.passed { failed = true }
        if let mixed {
            let matches = mixed.matches(ledger)
            print(
                "mixed load against the ledger: \(mixed.spends) spends, \(mixed.claims) claims and \(mixed.refunds) "
                    + "refunds acknowledged: \(matches ? "all there, nothing besides" : "MISMATCH")")
            if !matches { failed = true }
        }
        print(failed ? "FAILED" : "PASSED: no error, nothing acknowledged lost, every balance equal to its entries")
        return failed ? 1 : 0
    }

    /// Runs wrk jobs at once and waits for them all.
    static func runAll(_ jobs: [WrkJob]) async throws -> [WrkResult] {
        try await withThrowingTaskGroup(of: WrkResult.self) { group in
            for job in jobs { group.addTask { try await Wrk.run(job) } }
            var results: [WrkResult] = []
            for try await result in group { results.append(result) }
            return results.sorted { $0.job.name < $1.job.name }
        }
    }

    /// Measures the bare peer; returns its requests per second.
    static func peer(fixture: Fixture, http: HTTP, connections: Int, seconds: Double, warmup: Double) async throws
        -> Double
    {
        let keyPath = fixture.folder.appendingPathComponent("leaf.pem").path
        try fixture.pki.leafKey.publicKey.pemRepresentation.write(toFile: keyPath, atomically: true, encoding: .utf8)
        let port = freePort()
        let peer = try await Child(
            name: "bare Hummingbird peer", arguments: ["peer", "--port", String(port), "--key", keyPath], port: port,
            environment: [:], http: http, readiness: "/readyz")
        defer { peer.stop(grace: 0) }
        let customer = Customer(
            token: "peer", supportId: "_000000000000", appAccountToken: UUID().uuidString.lowercased())
        let job = WrkJob(
            name: "peer", port: port, connections: connections, threads: 2, seconds: seconds,
            prefix: fixture.folder.appendingPathComponent("peer").path, expect: "ok", rewind: true)
        try await writeDeliveries(
            count: 20_000, firstId: 1_000_000_000_000, customers: [customer], files: job.files, fixture: fixture)
        var warm = job
        warm.seconds = warmup
        _ = try await Wrk.run(warm)
        let before = CPUSnapshot([peer])
        let result = try await Wrk.run(job)
        let after = CPUSnapshot([peer])
        print(
            """
            == The limit: bare Hummingbird, one ES256 verification per request (no storage), \(connections) connections, \
            \(format(result.seconds, 1)) s
            requests \(result.good), \(format(result.rate, 0))/s, errors \(result.errors); latency \(result.latency)
            CPU per request: \(CPUSnapshot.per(result.good, from: before, to: after))
            """)
        return result.rate
    }
}
