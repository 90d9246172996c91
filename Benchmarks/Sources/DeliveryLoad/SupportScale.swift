// `DeliveryLoad support`: support's pages as the ledger grows (issue 38 §1). One database is filled to each size in
// turn (customers with ten receipts each: 15,000 customers are 150,000 receipts), and at each size `coffer serve`
// answers support, signed in, opening every panel page, every admin API read, the probes and `GET /v1/me` `--samples`
// times each, one at a time; the CLI's reads run as processes. The table gives each page's p50 and p99 per size and
// its growth from the size before; the goal is every p99 under 100 ms and no page growing more than 3x for 10x the
// data.
import AsyncHTTPClient
import BenchmarkSupport
import CofferAdmin
import CofferStorePostgres
import CofferStoreSQLite
import Foundation
import NIOCore
import NIOFoundationCompat
import NIOHTTP1

enum SupportScale {
    /// One page's latencies at one size.
    struct Timing {
        var page: String
        var latencies: Latencies
    }

    static func run(_ options: Options) async throws -> Int32 {
        let engine = options.string("engine", "sqlite")
        let sizes = options.string("customers", "15000,150000,1000000").split(separator: ",").compactMap { Int($0) }
        let samples = options.int("samples", 40)
        let cliRuns = options.int("cli-runs", 5)
        guard !sizes.isEmpty, sizes == sizes.sorted() else { throw LoadFailure("--customers N,M,... ascending") }
        let fixture = try Fixture()
        defer { fixture.remove() }
        let databaseURL = try options.databaseURL(in: fixture.folder)
        // The panel answers a sign-in with a redirect whose cookie the next request must carry: none are followed.
        let http = HTTP(connections: 4, followRedirects: false)
        defer { Task { try? await http.shutdown() } }
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let fill = SupportFill(dialect: engine == "postgres" ? .postgres : .sqlite, now: now)

        // An owner to sign in as and a key for the admin API (the first command migrates the database).
        let created = try await cli(["admin", "create", "--name", "ada", "--database-url", databaseURL])
        guard let password = created.firstMatch(of: /with password (\S+)/).map({ String($0.1) }) else {
            throw LoadFailure("no password in: \(created)")
        }
        let keyFile = fixture.folder.appendingPathComponent("key.pem").path
        let key = try await cli(["keys", "create", "--name", "bench", "--out", keyFile, "--database-url", databaseURL])
        guard let keyId = key.firstMatch(of: /Created admin key (\S+)/).map({ String($0.1) }) else {
            throw LoadFailure("no key id in: \(key)")
        }
        let signer = try AdminRequestSigner(
            keyId: keyId, privateKeyPEM: try String(contentsOfFile: keyFile, encoding: .utf8))

        var results: [(customers: Int, timings: [Timing])] = []
        var filled = 0
        for size in sizes {
            let started = ContinuousClock.now
            for statement in fill.statements(first: filled + 1, last: size) {
                try await SupportFill.execute(statement, databaseURL: databaseURL)
            }
            try await SupportFill.execute("ANALYZE", databaseURL: databaseURL)
            filled = size
            progress("filled \(size) customers, \(size * 10) receipts in \(seconds(since: started)) s")
            let server = try await Child.serve(fixture, databaseURL: databaseURL, wallet: "server", http: http)
            defer { server.stop() }
            // A server that has run a while: PostgreSQL's instances have folded the fill's rollup contributions.
            if engine == "postgres" { try await waitForFolds(databaseURL: databaseURL) }
            let base = "http://127.0.0.1:\(server.port)"
            var timings: [Timing] = []
            // Customer 1 is the same at every size: what grows is everyone else's data.
            let id = SupportFill.supportId(1)
            let browser = try await PanelBrowser.signIn(base: base, password: password, http: http)
            let me = try await createCustomer(base: base, http: http)
            let pages = [
                "/admin", "/admin/users", "/admin/users?q=\(id.prefix(8))", "/admin/users?q=\(id)",
                "/admin/users?q=b1-5", "/admin/users/\(id)", "/admin/users/\(id)/export.json",
                "/admin/users/\(id)/export.csv", "/admin/grants", "/admin/grants?status=pending", "/admin/audit",
                "/admin/audit?customer=\(id)", "/admin/webhooks",
            ]
            for page in pages {
                timings.append(Timing(page: page, latencies: try await time(samples) { try await browser.get(page) }))
            }
            for probe in ["/readyz", "/healthz"] {
                timings.append(
                    Timing(
                        page: probe,
                        latencies: try await time(samples) { try await expect(http.call("GET", base + probe)) }))
            }
            timings.append(
                Timing(
                    page: "GET /v1/me",
                    latencies: try await time(samples) {
                        try await expect(
                            http.call("GET", base + "/v1/me", headers: [("authorization", "Bearer \(me)")]))
                    }))
            for read in [
                "/v1/admin/dashboard?environment=Sandbox", "/v1/admin/users?environment=Sandbox&search=\(id)",
                "/v1/admin/users/\(id)?environment=Sandbox", "/v1/admin/grants?environment=Sandbox",
                "/v1/admin/audit?environment=Sandbox",
            ] {
                timings.append(
                    Timing(
                        page: "API " + read,
                        latencies: try await time(samples) {
                            let headers = try signer.headers(
                                method: "GET", host: "127.0.0.1:\(server.port)", body: Data(), path: read, at: Date())
                            try await expect(
                                http.call("GET", base + read, headers: headers.map { ($0.name, $0.value) }))
                        }))
            }
            for command in [
                ["user", id], ["users", "list", "--search", String(id.prefix(8))], ["grants"],
            ] {
                timings.append(
                    Timing(
                        page: "CLI coffer " + command.joined(separator: " "),
                        latencies: try await time(cliRuns) {
                            _ = try await cli(command + ["--database-url", databaseURL])
                        }))
            }
            server.stop()
            results.append((size, timings))
            report(results)
        }
        return verdict(results) ? 0 : 1
    }

    /// Prints the table so far: each page's p50 and p99 per size, and its growth from the size before.
    static func report(_ results: [(customers: Int, timings: [Timing])]) {
        let header = results.map { "\($0.customers * 10) receipts p50 / p99" }
        print("| page | " + header.joined(separator: " | ") + " | growth of p99 |")
        print("|---|" + String(repeating: "---|", count: header.count + 1))
        guard let first = results.first else { return }
        for (index, timing) in first.timings.enumerated() {
            let cells = results.map { result in
                let latencies = result.timings[index].latencies
                return "\(format(latencies.percentile(0.5))) / \(format(latencies.percentile(0.99))) ms"
            }
            let growth = zip(results.dropFirst(), results).map { later, earlier in
                format(
                    later.timings[index].latencies.percentile(0.99)
                        / max(0.001, earlier.timings[index].latencies.percentile(0.99)), 1) + "x"
            }
            print(
                "| \(timing.page) | " + cells.joined(separator: " | ") + " | " + growth.joined(separator: ", ") + " |")
        }
    }

    /// Every page and probe under 100 ms at p99 (the CLI's processes aside: a process starting is most of theirs),
    /// and none growing more than 3x from one size to one ten times larger.
    static func verdict(_ results: [(customers: Int, timings: [Timing])]) -> Bool {
        var passed = true
        for result in results {
            for timing in result.timings where !timing.page.hasPrefix("CLI") {
                let p99 = timing.latencies.percentile(0.99)
                if p99 >= 100 {
                    print("FAILED: \(timing.page) p99 \(format(p99)) ms at \(result.customers * 10) receipts")
                    passed = false
                }
            }
        }
        for (later, earlier) in zip(results.dropFirst(), results) where later.customers >= earlier.customers * 10 {
            for (now, before) in zip(later.timings, earlier.timings) {
                // Below a millisecond, the loopback's own spread is the growth.
                let ratio = now.latencies.percentile(0.99) / max(1, before.latencies.percentile(0.99))
                if ratio > 3 {
                    print("FAILED: \(now.page) p99 grew \(format(ratio, 1))x for 10x the data")
                    passed = false
                }
            }
        }
        print(passed ? "PASSED" : "FAILED")
        return passed
    }

    /// Waits (up to 20 minutes) until the server has folded the rollups' contributions down to a few seconds' worth.
    static func waitForFolds(databaseURL: String) async throws {
        let started = ContinuousClock.now
        while ContinuousClock.now - started < .seconds(1_200) {
            let psql = Process()
            psql.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            // Folded, and the table vacuumed after the burst (the server does it once the backlog is drained).
            let query = """
                SELECT (SELECT count(*) FROM dashboard_deltas) + COALESCE((SELECT n_dead_tup FROM pg_stat_user_tables
                    WHERE relname = 'dashboard_deltas'), 0)
                """
            psql.arguments = ["psql", databaseURL, "-At", "-c", query]
            let output = Pipe()
            psql.standardOutput = output
            try psql.run()
            let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            psql.waitUntilExit()
            let left = Int(text.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
            if left >= 0, left < 10_000 {
                progress("rollups folded and their table vacuumed in \(seconds(since: started)) s")
                return
            }
            try await Task.sleep(for: .seconds(2))
        }
        throw LoadFailure("the server did not fold the rollups' contributions within 20 minutes")
    }

    /// Milliseconds of each of `count` runs of `body`, one after another, after three not counted (the first loads
    /// of a page warm its statements and the pages the database reads).
    static func time(_ count: Int, _ body: () async throws -> Void) async throws -> Latencies {
        for _ in 0..<3 { try await body() }
        var values: [Double] = []
        for _ in 0..<count {
            let start = ContinuousClock.now
            try await body()
            let elapsed = ContinuousClock.now - start
            values.append(Double(elapsed.components.seconds) * 1e3 + Double(elapsed.components.attoseconds) / 1e15)
        }
        return Latencies(values)
    }

    static func seconds(since start: ContinuousClock.Instant) -> String {
        format(Double((ContinuousClock.now - start).components.seconds), 0)
    }

    static func expect(_ answer: (status: Int, body: Data)) throws {
        guard answer.status == 200 else {
            throw LoadFailure("answered \(answer.status): \(String(decoding: answer.body.prefix(300), as: UTF8.self))")
        }
    }

    /// A customer of the API, for `GET /v1/me`: their token.
    static func createCustomer(base: String, http: HTTP) async throws -> String {
        let (status, body) = try await http.call("POST", base + "/v1/users")
        guard status == 201, let json = try JSONSerialization.jsonObject(with: body) as? [String: Any],
            let token = json["token"] as? String
        else { throw LoadFailure("creating a customer answered \(status)") }
        return token
    }

    /// Runs Coffer's command line (this binary) and returns what it printed; fails on a non-zero exit.
    @discardableResult
    static func cli(_ arguments: [String]) async throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
        process.arguments = ["cli"] + arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let text = String(decoding: data, as: UTF8.self)
        guard process.terminationStatus == 0 else {
            throw LoadFailure("coffer \(arguments.joined(separator: " ")) exited \(process.terminationStatus): \(text)")
        }
        return text
    }
}

/// An admin signed in to the panel: its session cookie.
struct PanelBrowser {
    let base: String
    let http: HTTP
    var cookies: [String: String] = [:]

    static func signIn(base: String, password: String, http: HTTP) async throws -> PanelBrowser {
        var browser = PanelBrowser(base: base, http: http)
        let form = try await browser.request("GET", "/admin/login")
        guard let csrf = String(decoding: form, as: UTF8.self).firstMatch(of: /name="csrf" value="([^"]+)"/) else {
            throw LoadFailure("no sign-in form")
        }
        let body =
            "csrf=\(csrf.1)&name=ada&password=\(password.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? password)"
        _ = try await browser.request("POST", "/admin/login", body: Data(body.utf8), expecting: 303)
        guard browser.cookies["coffer-session"] != nil else { throw LoadFailure("the panel gave no session") }
        return browser
    }

    /// Opens a page; anything but 200 fails the run.
    func get(_ path: String) async throws {
        var copy = self
        _ = try await copy.request("GET", path)
    }

    mutating func request(_ method: String, _ path: String, body: Data? = nil, expecting: Int = 200) async throws
        -> Data
    {
        var request = HTTPClientRequest(url: base + path)
        request.method = HTTPMethod(rawValue: method)
        if !cookies.isEmpty {
            request.headers.add(name: "cookie", value: cookies.map { "\($0.key)=\($0.value)" }.joined(separator: "; "))
        }
        if let body {
            request.headers.add(name: "content-type", value: "application/x-www-form-urlencoded")
            request.body = .bytes(ByteBuffer(data: body))
        }
        let response = try await http.client.execute(request, timeout: .seconds(60))
        for line in response.headers["set-cookie"] {
            let pair = line.split(separator: ";")[0].split(separator: "=", maxSplits: 1)
            cookies[String(pair[0])] = pair.count > 1 ? String(pair[1]) : nil
        }
        let data = Data(buffer: try await response.body.collect(upTo: 64 << 20))
        guard Int(response.status.code) == expecting else {
            throw LoadFailure("\(method) \(path) answered \(response.status.code)")
        }
        return data
    }
}
