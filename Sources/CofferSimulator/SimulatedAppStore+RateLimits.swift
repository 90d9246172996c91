import Foundation
import Hummingbird
import NIOCore

/// Apple's rate limits on the App Store Server API (Identifying rate limits): per endpoint, counted per hour; past
/// one, Apple answers 429 with RateLimitExceededError (4290000) and `Retry-After`, the UNIX time in milliseconds when
/// the next request may be sent. The simulator has none until a test or `coffer appstore-sim` sets them, so that
/// loads and benchmarks run unhindered; set, they count on the simulator's clock.
extension SimulatedAppStore {
    /// The endpoints a limit can be set on, by the names the control takes.
    public static let rateLimitedEndpoints: Set<String> = [
        "transaction-info", "transaction-history", "refund-history", "subscription-statuses",
        "notification-history", "order-lookup", "other",
    ]

    /// Limits `endpoint` to `perHour` requests in each hour of the simulator's clock; `nil` or 0 removes the limit.
    public func setRateLimit(_ endpoint: String, perHour: Int?) throws(SimulatorError) -> SimulatorReport {
        guard Self.rateLimitedEndpoints.contains(endpoint) else {
            throw SimulatorError(
                "invalid-request",
                "endpoint must be one of \(Self.rateLimitedEndpoints.sorted().joined(separator: ", "))")
        }
        var report = SimulatorReport()
        if let perHour, perHour > 0 {
            guard perHour <= 10_000_000 else { throw SimulatorError("invalid-request", "perHour is at most 10000000") }
            rateLimits[endpoint] = perHour
            report.happened.append("\(endpoint) limited to \(perHour) requests an hour")
        } else {
            rateLimits[endpoint] = nil
            rateWindows[endpoint] = nil
            report.happened.append("\(endpoint) has no rate limit")
        }
        return report
    }

    /// Counts a request to `endpoint`: `nil` when it may be answered, else when the next one may be sent.
    func admit(_ endpoint: String) -> Date? {
        guard let limit = rateLimits[endpoint] else { return nil }
        let now = clock.now()
        let hour = Int64((now.timeIntervalSince1970 / 3_600).rounded(.down))
        var window: (hour: Int64, count: Int) =
            rateWindows[endpoint].flatMap { $0.hour == hour ? $0 : nil } ?? (hour, 0)
        guard window.count < limit else { return Date(timeIntervalSince1970: Double(hour + 1) * 3_600) }
        window.count += 1
        rateWindows[endpoint] = window
        return nil
    }

    /// The endpoint an App Store Server API path (after `/inApps/`) counts against.
    static func rateLimitedEndpoint(_ path: String) -> String {
        if path.contains("/history/") { return "transaction-history" }
        if path.contains("/refund/lookup/") { return "refund-history" }
        if path.hasPrefix("/inApps/v1/transactions/") && !path.contains("appAccountToken") && !path.contains("finish") {
            return "transaction-info"
        }
        if path.hasPrefix("/inApps/v1/subscriptions/") && !path.contains("extend") { return "subscription-statuses" }
        if path.hasPrefix("/inApps/v1/notifications/history") { return "notification-history" }
        if path.hasPrefix("/inApps/v1/lookup/") { return "order-lookup" }
        return "other"
    }
}

/// Answers 429 with `Retry-After`, as Apple does, to a request past its endpoint's limit.
struct RateLimitMiddleware<Context: RequestContext>: RouterMiddleware {
    let store: SimulatedAppStore

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response)
        async throws -> Response
    {
        let endpoint = SimulatedAppStore.rateLimitedEndpoint(request.uri.path)
        guard let until = await store.admit(endpoint) else { return try await next(request, context) }
        let body = #"{"errorCode":4290000,"errorMessage":"Rate limit exceeded."}"#
        var headers: HTTPFields = [.contentType: "application/json"]
        headers[.retryAfter] = String(Int64((until.timeIntervalSince1970 * 1_000).rounded()))
        return Response(
            status: .tooManyRequests, headers: headers, body: .init(byteBuffer: ByteBuffer(string: body)))
    }
}
