// The delivery load test: verified, durable deliveries per second over HTTP on loopback.
//
//   DeliveryLoad run --engine sqlite|postgres [--database-url postgres://...] [--seconds 60]
//       [--connections 64] [--transactions 400000] [--warmup 5] [--check]
//
// It starts `coffer serve` (this binary re-run as `DeliveryLoad serve ...`, which is Coffer's own command
// line) in a child process on a fresh database, creates one user per connection, signs distinct StoreKit 2
// transactions with a simulator chain the server trusts, then keeps every connection busy posting them
// to POST /v1/transactions for the given time. It reports deliveries per second, latency percentiles and
// the server's resident memory after warm-up and at the end.
import ArgumentParser
import AsyncHTTPClient
import CofferCLI
import CofferSimulator
import Foundation
import NIOCore
import NIOFoundationCompat

#if canImport(Glibc)
    import Glibc
#endif

let arguments = Array(CommandLine.arguments.dropFirst())
/// Runs an async command (opening the existential, so the async `run` is the one called).
func runAsync<Command: AsyncParsableCommand>(_ command: inout Command) async throws { try await command.run() }

if arguments.first == "serve" {
    // Coffer's own command line, as the `coffer` executable runs it.
    do {
        var command = try Coffer.parseAsRoot(arguments)
        if var asynchronous = command as? any AsyncParsableCommand {
            try await runAsync(&asynchronous)
        } else {
            try command.run()
        }
    } catch {
        Coffer.exit(withError: error)
    }
    exit(0)
}

func option(_ name: String, _ fallback: String) -> String {
    guard let index = arguments.firstIndex(of: "--\(name)"), index + 1 < arguments.count else { return fallback }
    return arguments[index + 1]
}

let engine = option("engine", "sqlite")
let seconds = Double(option("seconds", "60")) ?? 60
let connections = Int(option("connections", "64")) ?? 64
let total = Int(option("transactions", "400000")) ?? 400_000
let warmup = Double(option("warmup", "5")) ?? 5
let bundleId = "com.example.coffer"
let folder = FileManager.default.temporaryDirectory.appendingPathComponent("coffer-load-\(UUID().uuidString)")
try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(at: folder) }

// The app's catalog and the simulator chain the server trusts.
try Data(#"{"products": [{"id": "com.example.credits", "kind": "consumable", "credits": 100}]}"#.utf8)
    .write(to: folder.appendingPathComponent("catalog.json"))
let now = Date()
let pki = try SimulatorPKI(validFrom: now.addingTimeInterval(-86_400), leafValidUntil: now.addingTimeInterval(86_400))
try pki.rootDER().write(to: folder.appendingPathComponent("root.der"))

let databaseURL: String
switch engine {
case "sqlite": databaseURL = "sqlite:" + folder.appendingPathComponent("coffer.sqlite").path
case "postgres": databaseURL = option("database-url", "")
default: fatalError("--engine sqlite|postgres")
}
guard !databaseURL.isEmpty else { fatalError("--database-url postgres://... is required with --engine postgres") }

func freePort() -> Int {
    let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(socket) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, length) }
    }
    _ = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socket, $0, &length) }
    }
    return Int(UInt16(bigEndian: address.sin_port))
}

let port = freePort()
let server = Process()
server.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
server.arguments = [
    "serve", "--bundle-id", bundleId, "--apple-root", folder.appendingPathComponent("root.der").path, "--catalog",
    folder.appendingPathComponent("catalog.json").path, "--port", String(port), "--database-url", databaseURL,
]
// One user per connection, all from this machine's address: the per-address limit on new users is raised.
server.environment = ProcessInfo.processInfo.environment.merging([
    "COFFER_LOG_LEVEL": "warning", "COFFER_LIMIT_USERS_BURST": "1000000",
]) { $1 }
server.standardOutput = FileHandle.nullDevice
try server.run()
defer {
    kill(server.processIdentifier, SIGKILL)
    server.waitUntilExit()
}

/// The server's resident memory in MB, from /proc.
func residentMB() -> Double {
    guard let status = try? String(contentsOfFile: "/proc/\(server.processIdentifier)/status", encoding: .utf8),
        let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") })
    else { return 0 }
    return (Double(line.split(separator: " ").dropFirst().first ?? "0") ?? 0) / 1024
}

var configuration = HTTPClient.Configuration()
configuration.connectionPool = .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: connections)
let http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
let base = "http://127.0.0.1:\(port)"

func post(_ path: String, token: String?, body: Data?) async throws -> (Int, Data) {
    var request = HTTPClientRequest(url: base + path)
    request.method = .POST
    if let token { request.headers.add(name: "Authorization", value: "Bearer \(token)") }
    if let body { request.body = .bytes(ByteBuffer(data: body)) }
    let response = try await http.execute(request, timeout: .seconds(30))
    let data = try await response.body.collect(upTo: 1 << 20)
    return (Int(response.status.code), Data(buffer: data))
}

var ready = false
for _ in 0..<300 where !ready && server.isRunning {
    var request = HTTPClientRequest(url: base + "/readyz")
    request.method = .GET
    ready = (try? await http.execute(request, timeout: .seconds(2)).status.code) == 200
    if !ready { try await Task.sleep(for: .milliseconds(100)) }
}
guard ready else {
    fatalError("the server did not become ready (exit status \(server.isRunning ? 0 : server.terminationStatus))")
}

// One user per connection; each connection posts its own user's transactions.
struct Account: Sendable {
    var token: String
    var appAccountToken: String
}
var created: [Account] = []
for _ in 0..<connections {
    let (status, data) = try await post("/v1/users", token: nil, body: nil)
    guard status == 201, let json = try JSONSerialization.jsonObject(with: data) as? [String: Any],
        let token = json["token"] as? String, let accountToken = json["appAccountToken"] as? String
    else { fatalError("cannot create a user: \(status)") }
    created.append(Account(token: token, appAccountToken: accountToken.lowercased()))
}
let accounts = created

// Distinct signed transactions, signed before the clock starts, on every core.
let perConnection = (total + connections - 1) / connections
let signer = try pki.signer()
let signedDate = Int64(now.timeIntervalSince1970 * 1000)
let started = ContinuousClock.now
let queues: [[Data]] = try await withThrowingTaskGroup(of: (Int, [Data]).self) { group in
    for (index, account) in accounts.enumerated() {
        group.addTask {
            var bodies: [Data] = []
            bodies.reserveCapacity(perConnection)
            for item in 0..<perConnection {
                let id = 3_000_000_000_000 + index * perConnection + item
                // Written by hand, not by JSONSerialization (slow on Linux): every value is plain ASCII.
                let payload = """
                    {"transactionId":"\(id)","originalTransactionId":"\(id)","webOrderLineItemId":"\(id)",\
                    "bundleId":"\(bundleId)","productId":"com.example.credits","purchaseDate":\(signedDate),\
                    "originalPurchaseDate":\(signedDate),"quantity":1,"type":"Consumable",\
                    "inAppOwnershipType":"PURCHASED","signedDate":\(signedDate),"environment":"Sandbox",\
                    "transactionReason":"PURCHASE","storefront":"USA","storefrontId":"143441","price":990,\
                    "currency":"USD","appAccountToken":"\(account.appAccountToken)"}
                    """
                let jws = try signer.sign(payloadJSON: Data(payload.utf8))
                bodies.append(Data("{\"signedTransaction\":\"\(jws)\"}".utf8))
            }
            return (index, bodies)
        }
    }
    var queues = [[Data]](repeating: [], count: connections)
    for try await (index, bodies) in group { queues[index] = bodies }
    return queues
}
FileHandle.standardError.write(
    Data("signed \(perConnection * connections) transactions in \(ContinuousClock.now - started)\n".utf8))

/// What one connection did during the measured window.
struct Tally: Sendable {
    var delivered = 0
    var errors = 0
    var latencies: [Double] = []  // milliseconds
    var used = 0
}

/// Keeps one connection busy until `deadline`, counting only requests that start after `measureFrom`.
func drive(_ index: Int, from start: Int, measureFrom: ContinuousClock.Instant, until deadline: ContinuousClock.Instant)
    async -> Tally
{
    var tally = Tally()
    var next = start
    let queue = queues[index]
    let token = accounts[index].token
    while ContinuousClock.now < deadline, next < queue.count {
        let body = queue[next]
        next += 1
        let sent = ContinuousClock.now
        let result = try? await post("/v1/transactions", token: token, body: body)
        let elapsed = ContinuousClock.now - sent
        guard sent >= measureFrom else { continue }
        if let (status, data) = result, status == 200, String(decoding: data, as: UTF8.self).contains("\"delivered\"") {
            tally.delivered += 1
        } else {
            tally.errors += 1
        }
        tally.latencies.append(
            Double(elapsed.components.attoseconds) / 1e15 + Double(elapsed.components.seconds) * 1000)
    }
    tally.used = next
    return tally
}

let rssBefore = residentMB()
let warmStart = ContinuousClock.now
let measureFrom = warmStart + .milliseconds(Int(warmup * 1000))
let deadline = measureFrom + .milliseconds(Int(seconds * 1000))
var rssAfterWarmup = 0.0
let tallies = await withTaskGroup(of: Tally.self) { group in
    for index in 0..<connections {
        group.addTask { await drive(index, from: 0, measureFrom: measureFrom, until: deadline) }
    }
    group.addTask {
        // The server's memory at the start of the measured window and every 10 seconds after, in KB.
        try? await Task.sleep(until: measureFrom)
        var samples: [Double] = [residentMB() * 1024]
        while ContinuousClock.now + .seconds(10) <= deadline {
            try? await Task.sleep(for: .seconds(10))
            samples.append(residentMB() * 1024)
        }
        return Tally(delivered: -1, errors: 0, latencies: samples, used: 0)
    }
    var tallies: [Tally] = []
    for await tally in group { tallies.append(tally) }
    return tallies
}
let measuredEnd = ContinuousClock.now
let rssEnd = residentMB()
var rssTimeline: [Double] = []
for tally in tallies where tally.delivered == -1 {
    rssTimeline = tally.latencies.map { $0 / 1024 }
    rssAfterWarmup = rssTimeline.first ?? 0
}
let real = tallies.filter { $0.delivered >= 0 }
let delivered = real.reduce(0) { $0 + $1.delivered }
let errors = real.reduce(0) { $0 + $1.errors }
let latencies = real.flatMap(\.latencies).sorted()
let window = min(seconds, Double((measuredEnd - measureFrom).components.seconds))
func percentile(_ p: Double) -> Double {
    latencies.isEmpty ? 0 : latencies[min(latencies.count - 1, Int(Double(latencies.count) * p))]
}
let exhausted = real.contains { $0.used >= perConnection }
print(
    """
    engine \(engine), \(connections) connections, \(Int(window)) s measured after \(Int(warmup)) s warm-up\
    \(exhausted ? " (a connection ran out of signed transactions: raise --transactions)" : "")
    deliveries \(delivered), errors \(errors), \(String(format: "%.0f", Double(delivered) / window)) deliveries/s
    latency ms: p50 \(String(format: "%.2f", percentile(0.5))), p90 \(String(format: "%.2f", percentile(0.9))), \
    p99 \(String(format: "%.2f", percentile(0.99))), max \(String(format: "%.2f", latencies.last ?? 0))
    server RSS MB: before \(String(format: "%.0f", rssBefore)), after warm-up \(String(format: "%.0f", rssAfterWarmup)), \
    end \(String(format: "%.0f", rssEnd)); every 10 s: \(rssTimeline.map { String(format: "%.0f", $0) }.joined(separator: ", "))
    """)
try await http.shutdown() as Void
// `--check`: a bounded run for the test command, which fails on any error, a connection that ran dry, or a
// server that stopped answering.
if arguments.contains("--check") {
    guard errors == 0, delivered > 0, !exhausted, server.isRunning else {
        FileHandle.standardError.write(Data("FAILED: \(errors) errors, \(delivered) deliveries\n".utf8))
        exit(1)
    }
}
