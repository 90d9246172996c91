import CofferAdmin
import CofferCore
import CofferHTTP
import CofferService
import CofferStore
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import NIOFoundationCompat
import Synchronization

/// Liveness, readiness and metrics, for load balancers and Prometheus.
struct OperationsAPI: Sendable {
    let dependencies: ServerDependencies
    let environment: CofferCore.AppStoreEnvironment
    /// When set, `/metrics` needs `Authorization: Bearer <token>`.
    let metricsToken: String?
    /// The last answer of the database to `/readyz`: asked at most once a second, however many ask.
    let readiness = Readiness()

    /// The routes, each answered by a handler below.
    var routes: RouteCollection<CofferRequestContext> {
        let routes = RouteCollection(context: CofferRequestContext.self)
        routes.get("healthz", use: alive)
        routes.get("readyz", use: ready)
        routes.get("openapi.json", use: document)
        routes.get("metrics", use: metrics)
        return routes
    }

    /// `GET /healthz`: alive, the process answers.
    func alive(_ request: Request, _ context: CofferRequestContext) async throws -> Response { Self.text("ok\n") }

    /// `GET /readyz`: ready, the store answers one cheap query (`SELECT 1`), asked at most once a second: the
    /// route is open to anyone, so a flood of it costs the database nothing more.
    func ready(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        let store = dependencies.store
        let logger = context.logger
        let ready = await readiness.check(now: dependencies.now()) {
            do {
                try await store.ping()
                return true
            } catch {
                logger.error("not ready: the store does not answer: \(error)")
                return false
            }
        }
        return ready ? Self.text("ready\n") : Self.text("the store does not answer\n", status: .serviceUnavailable)
    }

    /// `GET /openapi.json`: the API document, read once and served from memory with an ETag (304 for a client
    /// that has it).
    func document(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        guard let document = ServedDocument.apiDocument else {
            throw ServiceError.notFound("the API document is not installed")
        }
        return document.response(to: request)
    }

    /// `GET /metrics`: Prometheus text, behind the metrics token when one is set.
    func metrics(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        if let metricsToken {
            let offered = request.headers[.authorization] ?? ""
            guard offered.hasPrefix("Bearer "), Secrets.same(String(offered.dropFirst(7)), metricsToken) else {
                throw ServiceError.unauthorized("/metrics needs the metrics bearer token")
            }
        }
        return Response(
            status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
            body: .init(byteBuffer: ByteBuffer(string: dependencies.metrics.exposition())))
    }

    static func text(_ text: String, status: HTTPResponse.Status = .ok) -> Response {
        Response(
            status: status, headers: [.contentType: "text/plain; charset=utf-8"],
            body: .init(byteBuffer: ByteBuffer(string: text)))
    }
}

/// Gives every request an id (the client's `X-Request-Id` when it sends a sensible one), logs one
/// structured line per request with it, echoes it in the answer, and counts the request in the metrics.
struct RequestLogMiddleware<Context: RequestContext>: RouterMiddleware {
    let metrics: ServerMetrics

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response)
        async throws -> Response
    {
        var context = context
        let sent = request.headers.first { $0.name.canonicalName == "x-request-id" }?.value
        let id =
            if let sent, (1...128).contains(sent.count),
                sent.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-_.:".contains($0)) })
            {
                sent
            } else {
                // Hummingbird's id lives in the logger's metadata (`context.id` traps where a log handler keeps
                // none): read it, or make one.
                context.logger[metadataKey: "hb.request.id"]?.description ?? UUID().uuidString.lowercased()
            }
        context.logger[metadataKey: "request_id"] = "\(id)"
        let started = ContinuousClock.now
        let route = context.endpointPath ?? "unmatched"
        var response: Response
        do {
            response = try await next(request, context)
        } catch {
            let status = (error as? any HTTPResponseError)?.status.code ?? 500
            record(request, route: route, status: status, started: started, context: context)
            throw error
        }
        response.headers[values: HTTPField.Name("X-Request-Id")!] = [id]
        record(
            request, route: context.endpointPath ?? route, status: response.status.code, started: started,
            context: context)
        return response
    }

    private func record(
        _ request: Request, route: String, status: Int, started: ContinuousClock.Instant,
        context: Context
    ) {
        let duration = ContinuousClock.now - started
        metrics.request(route: route, method: request.method.rawValue, status: status, duration: duration)
        context.logger.info(
            "request",
            metadata: [
                "method": "\(request.method.rawValue)", "path": "\(request.uri.path)", "status": "\(status)",
                "ms": "\(Double(duration.components.attoseconds) / 1e15 + Double(duration.components.seconds) * 1000)",
            ])
    }
}

/// Answers 503 `timeout` when a request takes longer than the configured time (the event stream, which
/// stays open by design, is exempt). The work is cancelled; every write is idempotent, so the client's
/// retry is safe.
struct TimeoutMiddleware<Context: RequestContext>: RouterMiddleware {
    let seconds: Int
    /// Where requests' deadlines wait: one timer for all of them, not one per request.
    let timer: DeadlineTimer

    init(seconds: Int, timer: DeadlineTimer = DeadlineTimer()) {
        self.seconds = seconds
        self.timer = timer
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response)
        async throws -> Response
    {
        if request.uri.path == "/v1/me/events" { return try await next(request, context) }
        let limit = seconds
        return try await withoutActuallyEscaping(next) { next in
            // The work runs in a task of its own so the deadline can cancel it; it is always awaited before this
            // returns, so `next` never outlives the call.
            nonisolated(unsafe) let work = next
            let task = Task { try await work(request, context) }
            let deadline = timer.schedule(after: .seconds(limit)) { task.cancel() }
            let result = await withTaskCancellationHandler {
                await task.result
            } onCancel: {
                task.cancel()
            }
            // Past the deadline the answer is the timeout's, whatever the cancelled work made of it.
            guard timer.cancel(deadline) else { throw ServiceError.timeout(seconds: limit) }
            return try result.get()
        }
    }
}

/// Refuses a body larger than the server takes before any route looks at the request, so every route
/// answers an oversized upload the same way (413), whatever else it would have checked first. Bodies without
/// a length (chunked) are bounded where each route reads them.
struct BodyLimitMiddleware<Context: RequestContext>: RouterMiddleware {
    /// The server's limit (`body.limit`).
    let limit: Int
    /// Routes that take more by design, by path: a legacy receipt (1 MiB), a Verify Purchases report (256 KiB).
    static var routeLimits: [String: Int] {
        ["/v1/receipts/verify": ReceiptsAPI.maximumBodySize, "/v1/me/verify-report": ClientAPI.verifyReportLimit]
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response)
        async throws -> Response
    {
        // The path as the router matches it: empty components (`//`, a trailing `/`) do not count.
        let path = "/" + request.uri.path.split(separator: "/").joined(separator: "/")
        let limit = max(limit, Self.routeLimits[path] ?? 0)
        if let text = request.headers[.contentLength], let length = Int(text), length > limit {
            throw ServiceError.bodyTooLarge(limit: limit)
        }
        return try await next(request, context)
    }
}

/// A JSON document served from memory with its ETag (a hash of its bytes): the API document, the catalog.
struct ServedDocument: Sendable {
    /// The bytes.
    let body: ByteBuffer
    /// `"<first 16 bytes of SHA-256, hex>"`.
    let etag: String

    /// The document of these bytes.
    init(data: Data) {
        body = ByteBuffer(data: data)
        etag = "\"" + SHA256.hash(data: data).prefix(16).map { String(format: "%02x", $0) }.joined() + "\""
    }

    /// The bundle's API document, read on first use; `nil` when it is not installed.
    static let apiDocument: ServedDocument? = {
        guard let url = Bundle.module.url(forResource: "openapi", withExtension: "json"),
            let data = try? Data(contentsOf: url)
        else { return nil }
        return ServedDocument(data: data)
    }()

    /// The answer: 304 for a client that holds this version (`If-None-Match`), the document otherwise.
    func response(to request: Request) -> Response {
        let tags = (request.headers[.ifNoneMatch] ?? "").split(separator: ",").map {
            $0.trimmingCharacters(in: .whitespaces)
        }
        if tags.contains(etag) || tags.contains("*") {
            return Response(status: .notModified, headers: [.eTag: etag])
        }
        return Response(
            status: .ok, headers: [.contentType: "application/json", .eTag: etag], body: .init(byteBuffer: body))
    }
}

/// The database's last answer to `/readyz`, asked again only once a second has passed: concurrent requests
/// share one question in flight.
actor Readiness {
    /// How long an answer holds.
    static let interval: TimeInterval = 1
    private var last: (at: Date, ready: Bool)?
    private var asking = false

    /// The answer: the last one if it is younger than ``interval``, else `ask`'s, asked by one request at a time
    /// in that request's task (so the store's deadline and the request's cancellation hold); the others wait for
    /// it, polling every 10 ms, while they are not cancelled.
    func check(now: Date, ask: @Sendable () async -> Bool) async -> Bool {
        if let last, now.timeIntervalSince(last.at) < Self.interval, now >= last.at { return last.ready }
        guard !asking else {
            while asking, !Task.isCancelled { try? await Task.sleep(for: .milliseconds(10)) }
            return last?.ready ?? false
        }
        asking = true
        let ready = await ask()
        last = (now, ready)
        asking = false
        return ready
    }
}
