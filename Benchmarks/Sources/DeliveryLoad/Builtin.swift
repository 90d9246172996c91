// The built-in load generator (AsyncHTTPClient): one customer per connection, any number of connections.
// Used by the test command's bounded load (`--check`, no wrk needed) and by Benchmarks/load.sh (1,000
// connections). It costs more CPU per request than wrk, so throughput figures come from `DeliveryLoad wrk`.
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

enum Builtin {
    /// What one connection did during the measured window.
    struct Tally: Sendable {
        var delivered = 0
        var errors = 0
        var latencies: [Double] = []  // milliseconds
        var used = 0
        var acknowledged: [String] = []
        /// Transactions signed during the run, when the connection had used those signed before.
        var signedLater = 0
    }

    /// `DeliveryLoad run`: see main.swift.
    static func run(_ options: Options) async throws -> Int32 {
        let engine = options.string("engine", "sqlite")
        let seconds = options.double("seconds", 60)
        let connections = options.int("connections", 64)
        let total = options.int("transactions", 400_000)
        let warmup = options.double("warmup", 5)
        let check = options.flag("check")
        let fixture = try Fixture()
        defer { fixture.remove() }
        let databaseURL = try options.databaseURL(in: fixture.folder)

        let http = HTTP(connections: connections)
        let server = try await Child.serve(fixture, databaseURL: databaseURL, wallet: "server", http: http)
        defer { server.stop(grace: 0) }
        let base = "http://127.0.0.1:\(server.port)"

        // One customer per connection; each connection posts its own customer's transactions.
        let customers = try await createCustomers(connections, base: base, http: http)

        // Distinct signed transactions, signed before the clock starts, on every core.
        let perConnection = (total + connections - 1) / connections
        let started = ContinuousClock.now
        let queues: [[Data]] = try await withThrowingTaskGroup(of: (Int, [Data]).self) { group in
            for (index, customer) in customers.enumerated() {
                group.addTask {
                    var bodies: [Data] = []
                    bodies.reserveCapacity(perConnection)
                    for item in 0..<perConnection {
                        let id = 3_000_000_000_000 + index * 1_000_000_000 + item
                        let jws = try fixture.signedTransaction(id: id, customer: customer)
                        bodies.append(Data("{\"signedTransaction\":\"\(jws)\"}".utf8))
                    }
                    return (index, bodies)
                }
            }
            var queues = [[Data]](repeating: [], count: connections)
            for try await (index, bodies) in group { queues[index] = bodies }
            return queues
        }
        progress("signed \(perConnection * connections) transactions in \(ContinuousClock.now - started)")

        /// Keeps one connection busy until `deadline`, measuring only requests that start after `measureFrom`. A
        /// connection that has used every transaction signed for it signs as many again and goes on (a faster day
        /// than `--transactions` planned for does not run the load dry).
        @Sendable func drive(
            _ index: Int, measureFrom: ContinuousClock.Instant, until deadline: ContinuousClock.Instant
        )
            async -> Tally
        {
            var tally = Tally()
            var next = 0
            var queue = queues[index]
            let token = customers[index].token
            // Connection `index`'s transaction ids, far apart from the other connections'.
            func id(_ item: Int) -> Int { 3_000_000_000_000 + index * 1_000_000_000 + item }
            while ContinuousClock.now < deadline {
                if next == queue.count {
                    let more = max(16, queue.count)
                    guard
                        let signed = try? (queue.count..<(queue.count + more)).map({ item in
                            Data(
                                "{\"signedTransaction\":\"\(try fixture.signedTransaction(id: id(item), customer: customers[index]))\"}"
                                    .utf8)
                        })
                    else { break }
                    queue += signed
                    tally.signedLater += more
                }
                let body = queue[next]
                next += 1
                let sent = ContinuousClock.now
                let result = try? await http.call(
                    "POST", base + "/v1/transactions", headers: [("Authorization", "Bearer \(token)")], body: body)
                let elapsed = ContinuousClock.now - sent
                let delivered =
                    if let (status, data) = result, status == 200,
                        String(decoding: data, as: UTF8.self).contains("\"delivered\"")
                    {
                        true
                    } else {
                        false
                    }
                if delivered { tally.acknowledged.append(String(id(next - 1))) }
                guard sent >= measureFrom else { continue }
                if delivered { tally.delivered += 1 } else { tally.errors += 1 }
                tally.latencies.append(
                    Double(elapsed.components.attoseconds) / 1e15 + Double(elapsed.components.seconds) * 1000)
            }
            tally.used = next
            return tally
        }

        let rssBefore = server.residentMB
        let measureFrom = ContinuousClock.now + .milliseconds(Int(warmup * 1000))
        let deadline = measureFrom + .milliseconds(Int(seconds * 1000))
        async let memory = memoryTimeline(of: server, from: measureFrom, until: deadline)
        let tallies = await withTaskGroup(of: Tally.self) { group in
            for index in 0..<connections {
                group.addTask { await drive(index, measureFrom: measureFrom, until: deadline) }
            }
            var tallies: [Tally] = []
            for await tally in group { tallies.append(tally) }
            return tallies
        }
        let timeline = await memory
        let measuredEnd = ContinuousClock.now
        let rssEnd = server.residentMB
        let serverRunning = server.process.isRunning
        let delivered = tallies.reduce(0) { $0 + $1.delivered }
        let errors = tallies.reduce(0) { $0 + $1.errors }
        let latencies = Latencies(tallies.flatMap(\.latencies))
        let window = min(seconds, Double((measuredEnd - measureFrom).components.seconds))
        let signedLater = tallies.reduce(0) { $0 + $1.signedLater }
        print(
            """
            engine \(engine), \(connections) connections, \(Int(window)) s measured after \(Int(warmup)) s warm-up\
            \(signedLater > 0 ? " (\(signedLater) more transactions signed during the run: raise --transactions to sign them before)" : "")
            deliveries \(delivered), errors \(errors), \(format(Double(delivered) / window, 0)) deliveries/s
            latency ms: \(latencies.summary)
            server RSS MB: before \(format(rssBefore, 0)), after warm-up \(format(timeline.first ?? 0, 0)), \
            end \(format(rssEnd, 0)); every 10 s: \(timeline.map { format($0, 0) }.joined(separator: ", "))
            """)
        try await http.shutdown()
        server.stop()
        let ledger = try await LedgerCheck.run(
            databaseURL: databaseURL, customers: customers, acknowledged: Set(tallies.flatMap(\.acknowledged)))
        print("ledger check: \(ledger.summary)")
        // `--check`: a bounded run for the test command, which fails on any error, a server that stopped answering,
        // or a ledger that lost or doubled a delivery.
        if check {
            guard errors == 0, delivered > 0, serverRunning, ledger.passed,
                ledger.unacknowledged <= connections
            else {
                progress("FAILED: \(errors) errors, \(delivered) deliveries, server running \(serverRunning)")
                return 1
            }
        }
        return 0
    }
}

/// The environment `coffer serve` runs with under load: warnings only, and every customer created from this
/// machine's one address allowed.
let serverEnvironment = ["COFFER_LOG_LEVEL": "warning", "COFFER_LIMIT_USERS_BURST": "1000000"]

/// The resident memory of `child` at `start` and every 10 seconds until `end`, in MB.
func memoryTimeline(of child: Child, from start: ContinuousClock.Instant, until end: ContinuousClock.Instant) async
    -> [Double]
{
    try? await Task.sleep(until: start)
    var samples = [child.residentMB]
    while ContinuousClock.now + .seconds(10) <= end {
        try? await Task.sleep(for: .seconds(10))
        samples.append(child.residentMB)
    }
    return samples
}
