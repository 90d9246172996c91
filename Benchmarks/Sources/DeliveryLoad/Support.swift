// Processes, ports, HTTP calls and /proc readings for the load tool.
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOFoundationCompat
import NIOHTTP1

#if canImport(Glibc)
    import Glibc
#endif

/// A fatal mistake of the run: printed, and the tool exits 1.
struct LoadFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// The command line: `--name value` options and `--flag` switches.
struct Options {
    let arguments: [String]

    func string(_ name: String, _ fallback: String) -> String {
        guard let index = arguments.firstIndex(of: "--\(name)"), index + 1 < arguments.count else { return fallback }
        return arguments[index + 1]
    }

    func int(_ name: String, _ fallback: Int) -> Int { Int(string(name, String(fallback))) ?? fallback }
    func double(_ name: String, _ fallback: Double) -> Double { Double(string(name, String(fallback))) ?? fallback }
    func flag(_ name: String) -> Bool { arguments.contains("--\(name)") }

    /// The database `--engine` names: a new SQLite file in `folder`, or `--database-url` for PostgreSQL.
    func databaseURL(in folder: URL) throws -> String {
        switch string("engine", "sqlite") {
        case "sqlite": return "sqlite:" + folder.appendingPathComponent("coffer.sqlite").path
        case "postgres":
            let url = string("database-url", "")
            guard !url.isEmpty else { throw LoadFailure("--database-url postgres://... is required with postgres") }
            return url
        default: throw LoadFailure("--engine sqlite|postgres")
        }
    }
}

/// A free TCP port on loopback.
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

/// Readings of a process from /proc.
enum ProcReading {
    static let ticksPerSecond = Double(sysconf(Int32(_SC_CLK_TCK)))

    /// User and system CPU seconds a process has used so far (0 once it is gone).
    static func cpuSeconds(_ pid: Int32) -> Double {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return 0 }
        // Fields after the command name: state is field 3; utime and stime are fields 14 and 15.
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
        return (user + system) / ticksPerSecond
    }

    /// CPU seconds used by every process whose command name is `name` (PostgreSQL's backends).
    static func cpuSeconds(named name: String) -> Double {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        var total = 0.0
        for entry in entries {
            guard let pid = Int32(entry),
                let comm = try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8),
                comm.trimmingCharacters(in: .whitespacesAndNewlines) == name
            else { continue }
            total += cpuSeconds(pid)
        }
        return total
    }

    /// The whole machine's busy and total CPU seconds so far (from /proc/stat).
    static func machine() -> (busy: Double, total: Double) {
        guard let stat = try? String(contentsOfFile: "/proc/stat", encoding: .utf8),
            let line = stat.split(separator: "\n").first
        else { return (0, 0) }
        let values = line.split(separator: " ").dropFirst().compactMap { Double($0) }
        guard values.count >= 5 else { return (0, 0) }
        let total = values.reduce(0, +)
        let idle = values[3] + values[4]
        return ((total - idle) / ticksPerSecond, total / ticksPerSecond)
    }

    /// A process's resident memory in MB.
    static func residentMB(_ pid: Int32) -> Double {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") })
        else { return 0 }
        return (Double(line.split(separator: " ").dropFirst().first ?? "0") ?? 0) / 1024
    }
}

/// A child process of this tool: `coffer serve` or the bare peer, this binary run again.
final class Child: @unchecked Sendable {
    let process = Process()
    let port: Int
    let name: String

    /// `coffer serve` for `fixture` on a free port, with the load's environment, once it is ready.
    static func serve(_ fixture: Fixture, databaseURL: String, wallet: String, http: HTTP) async throws -> Child {
        let port = freePort()
        return try await Child(
            name: "coffer serve",
            arguments: fixture.serveArguments(port: port, databaseURL: databaseURL, wallet: wallet),
            port: port, environment: serverEnvironment, http: http, readiness: "/readyz")
    }

    /// Starts this binary with `arguments` and waits until `GET /readyz` (or `readiness`) answers 200.
    init(name: String, arguments: [String], port: Int, environment: [String: String], http: HTTP, readiness: String)
        async throws
    {
        self.name = name
        self.port = port
        process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        for _ in 0..<600 where process.isRunning {
            if (try? await http.call("GET", "http://127.0.0.1:\(port)\(readiness)", timeout: 2).status) == 200 {
                return
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        kill(process.processIdentifier, SIGKILL)
        throw LoadFailure("\(name) did not become ready (running: \(process.isRunning))")
    }

    var pid: Int32 { process.processIdentifier }
    var cpuSeconds: Double { ProcReading.cpuSeconds(pid) }
    var residentMB: Double { ProcReading.residentMB(pid) }

    /// Stops it gracefully (SIGTERM), then by force after `grace` seconds.
    func stop(grace: Double = 15) {
        guard process.isRunning else { return }
        kill(pid, SIGTERM)
        let deadline = Date().addingTimeInterval(grace)
        while process.isRunning, Date() < deadline { usleep(50_000) }
        if process.isRunning { kill(pid, SIGKILL) }
        process.waitUntilExit()
    }
}

/// The few HTTP calls the tool makes outside the measured load (creating users, readiness).
struct HTTP: Sendable {
    let client: HTTPClient

    init(connections: Int, followRedirects: Bool = true) {
        var configuration = HTTPClient.Configuration()
        if !followRedirects { configuration.redirectConfiguration = .disallow }
        configuration.connectionPool = .init(
            idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: connections)
        client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }

    func call(
        _ method: String, _ url: String, headers: [(String, String)] = [], body: Data? = nil, timeout: Int64 = 30
    ) async throws -> (status: Int, body: Data) {
        var request = HTTPClientRequest(url: url)
        request.method = HTTPMethod(rawValue: method)
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let body { request.body = .bytes(ByteBuffer(data: body)) }
        let response = try await client.execute(request, timeout: .seconds(timeout))
        let data = try await response.body.collect(upTo: 1 << 20)
        return (Int(response.status.code), Data(buffer: data))
    }

    func shutdown() async throws { try await client.shutdown() }
}

/// Percentiles of latencies in milliseconds.
struct Latencies {
    var sorted: [Double]

    init(_ values: [Double]) { sorted = values.sorted() }

    func percentile(_ p: Double) -> Double {
        sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
    }

    var summary: String {
        "p50 \(format(percentile(0.5))), p90 \(format(percentile(0.9))), p99 \(format(percentile(0.99))), "
            + "max \(format(sorted.last ?? 0)) ms"
    }
}

/// A number with the given decimals.
func format(_ value: Double, _ decimals: Int = 2) -> String { String(format: "%.\(decimals)f", value) }

/// Writes to standard error (progress, so standard output stays the report).
func progress(_ text: String) { FileHandle.standardError.write(Data((text + "\n").utf8)) }
