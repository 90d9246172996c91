// wrk as the load generator: C, epoll, a few microseconds of CPU a request, so most of the two cores are
// left to the server. Each wrk thread sends ready-made requests from a file of its own (RequestFile) and
// checks every answer in Lua; the transaction ids answered `delivered` are written out for the ledger check.
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// One wrk process: `connections` connections over `threads` threads against one port.
struct WrkJob {
    var name: String
    var port: Int
    var connections: Int
    var threads: Int
    var seconds: Double
    /// The request files are `prefix.0`, `prefix.1`, ... one per thread.
    var prefix: String
    /// `delivered`: an answer counts when it is 200 with outcome delivered (its transaction id is kept);
    /// `ok`: when its status is 2xx.
    var expect: String
    /// Start a file again at its end (for peers and reads, which store nothing); otherwise a thread that runs
    /// out of requests counts a failure for each request it could not send.
    var rewind = false
    /// Milliseconds each connection waits between requests (pacing a slow route), 0 for none.
    var delay = 0

    var files: [String] { (0..<threads).map { "\(prefix).\($0)" } }
}

/// What a wrk process reported.
struct WrkResult {
    var job: WrkJob
    var requests = 0
    var seconds = 0.0
    var good = 0
    var bad = 0
    var dry = 0
    var socketErrors = [Int](repeating: 0, count: 5)
    /// Latency percentiles in milliseconds: 50, 90, 99, 99.9, and the maximum.
    var p50 = 0.0, p90 = 0.0, p99 = 0.0, p999 = 0.0, max = 0.0
    var acknowledged: [String] = []
    var samples: [String] = []

    var rate: Double { seconds > 0 ? Double(good) / seconds : 0 }
    /// The server's errors: wrong answers and failed sockets. Requests the load had no transaction left for
    /// (``dry``) are the load's shortfall, reported apart, never counted here.
    var errors: Int { bad + socketErrors.reduce(0, +) }

    /// How many transactions to sign for a window of `seconds` after a warm-up: half as many again as the warm-up's
    /// rate asks for (twice `planned` per second when the warm-up itself ran out, so its rate is only a floor), and
    /// never fewer than `planned` per second.
    static func transactions(for seconds: Double, after warm: [WrkResult], planned: Double) -> Int {
        let delivered = warm.reduce(0) { $0 + $1.good }
        let window = warm.map(\.seconds).max() ?? 0
        let ranDry = warm.contains { $0.dry > 0 }
        let rate = ranDry ? 2 * planned : Swift.max(planned, 1.5 * (window > 0 ? Double(delivered) / window : 0))
        return Int((rate * seconds).rounded(.up))
    }

    var latency: String {
        "p50 \(format(p50)), p90 \(format(p90)), p99 \(format(p99)), p99.9 \(format(p999)), max \(format(max)) ms"
    }
}

enum Wrk {
    /// Whether wrk is installed.
    static var path: String? {
        for folder in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin").split(separator: ":") {
            let candidate = "\(folder)/wrk"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }

    /// Runs the job to its end and reads what it reported.
    static func run(_ job: WrkJob) async throws -> WrkResult {
        guard let wrk = path else { throw LoadFailure("wrk is not installed (apt-get install wrk)") }
        let script = job.prefix + ".lua"
        let report = job.prefix + ".report"
        let acknowledged = job.prefix + ".acknowledged"
        try Self.script(report: report, acknowledged: acknowledged, delay: job.delay).write(
            toFile: script, atomically: true, encoding: .utf8)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: wrk)
        process.arguments = [
            "-t", String(job.threads), "-c", String(job.connections), "-d", "\(Int(job.seconds.rounded()))s",
            "--timeout", "30s", "-s", script, "http://127.0.0.1:\(job.port)", "--", job.prefix, job.expect,
            job.rewind ? "1" : "0", String(job.delay),
        ]
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        while process.isRunning { try await Task.sleep(for: .milliseconds(50)) }
        guard process.terminationStatus == 0 else {
            throw LoadFailure("wrk \(job.name) exited \(process.terminationStatus)")
        }
        var result = WrkResult(job: job)
        let text = try String(contentsOfFile: report, encoding: .utf8)
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: " ", maxSplits: 1).map(String.init)
            guard fields.count == 2 else { continue }
            let numbers = fields[1].split(separator: " ").compactMap { Double($0) }
            switch fields[0] {
            case "requests": result.requests = Int(numbers.first ?? 0)
            case "duration_us": result.seconds = (numbers.first ?? 0) / 1e6
            case "errors": result.socketErrors = numbers.map { Int($0) }
            case "p50": result.p50 = (numbers.first ?? 0) / 1000
            case "p90": result.p90 = (numbers.first ?? 0) / 1000
            case "p99": result.p99 = (numbers.first ?? 0) / 1000
            case "p99.9": result.p999 = (numbers.first ?? 0) / 1000
            case "max": result.max = (numbers.first ?? 0) / 1000
            case "thread":
                result.good += Int(numbers[0])
                result.bad += Int(numbers[1])
                result.dry += Int(numbers[2])
            case "sample": result.samples.append(fields[1])
            default: break
            }
        }
        if job.expect == "delivered" {
            result.acknowledged = try String(contentsOfFile: acknowledged, encoding: .utf8).split(separator: "\n")
                .map(String.init)
        }
        return result
    }

    /// The Lua script: requests from the thread's file, every answer checked, a report at the end. wrk waits
    /// `delay()` milliseconds before each request only when the script defines it.
    static func script(report: String, acknowledged: String, delay: Int) -> String {
        """
        local threads = {}
        local counter = 0

        function setup(thread)
          thread:set("id", counter)
          counter = counter + 1
          table.insert(threads, thread)
        end

        function init(args)
          file = assert(io.open(args[1] .. "." .. id, "rb"))
          expect = args[2]
          rewind = args[3] == "1"
          pause = tonumber(args[4])
          good = 0
          bad = 0
          dry = 0
          acked = {}
          sample = nil
        end

        \(delay > 0 ? "function delay()\n  return pause\nend\n" : "")
        function request()
          local length = file:read(8)
          if length == nil and rewind then
            file:seek("set", 0)
            length = file:read(8)
          end
          if length == nil then
            dry = dry + 1
            return "GET /readyz HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\n\\r\\n"
          end
          return file:read(tonumber(length))
        end

        function response(status, headers, body)
          local ok = false
          if expect == "delivered" then
            if status == 200 and body:find('"outcome":"delivered"', 1, true) then
              local id = body:match('"transactionId":"(%d+)"')
              if id then
                ok = true
                acked[#acked + 1] = id
              end
            end
          else
            ok = status >= 200 and status < 300
          end
          if ok then
            good = good + 1
          else
            bad = bad + 1
            if sample == nil then sample = status .. " " .. string.sub(body, 1, 300) end
          end
        end

        function done(summary, latency, requests)
          local out = assert(io.open("\(report)", "w"))
          out:write(string.format("requests %d\\n", summary.requests))
          out:write(string.format("duration_us %d\\n", summary.duration))
          local e = summary.errors
          out:write(string.format("errors %d %d %d %d %d\\n", e.connect, e.read, e.write, e.status, e.timeout))
          out:write(string.format("p50 %d\\n", latency:percentile(50)))
          out:write(string.format("p90 %d\\n", latency:percentile(90)))
          out:write(string.format("p99 %d\\n", latency:percentile(99)))
          out:write(string.format("p99.9 %d\\n", latency:percentile(99.9)))
          out:write(string.format("max %d\\n", latency.max))
          local acks = assert(io.open("\(acknowledged)", "w"))
          for _, thread in ipairs(threads) do
            out:write(string.format("thread %d %d %d\\n", thread:get("good"), thread:get("bad"), thread:get("dry")))
            local sample = thread:get("sample")
            if sample then out:write("sample " .. string.gsub(sample, "\\n", " ") .. "\\n") end
            local acked = thread:get("acked")
            for i = 1, #acked do acks:write(acked[i], "\\n") end
          end
          acks:close()
          out:close()
        end
        """
    }
}
