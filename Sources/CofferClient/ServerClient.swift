import CofferAPI
import CofferCore
import Foundation
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The Coffer server's client API, over URLSession: what the SDK says to the server.
public struct ServerClient: Sendable {
    /// The server, e.g. `https://coffer.example.com`.
    public let baseURL: URL
    private let session: URLSession

    /// How long the event stream may stay silent before it counts as dropped.
    public let eventSilence: TimeInterval
    /// Requests sent so far, shared by every copy of this client.
    private let sent = RequestCount()
    /// Where each request is logged (the SDK's log, once the SDK holds the client).
    private var log = SDKLog.silent

    /// This client, logging each request (method, path, status, time and request id; never a token or a body).
    func logging(to log: SDKLog) -> ServerClient {
        var copy = self
        copy.log = log
        return copy
    }

    /// How many requests this client (and its copies) has sent, the event stream included: a Settings screen's
    /// diagnostics, and how a benchmark counts the requests a game makes.
    public var requestsSent: Int { sent.value.load(ordering: .relaxed) }

    /// A client of the server at `baseURL`; requests time out after `timeout` seconds, and the event stream
    /// after `eventSilence` seconds without a byte.
    public init(baseURL: URL, timeout: TimeInterval = 20, eventSilence: TimeInterval = 45) {
        self.baseURL = baseURL
        self.eventSilence = eventSilence
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = timeout
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        session = URLSession(configuration: configuration)
    }

    /// `POST /v1/users`: a new user; keep the answer in the credential store.
    public func createUser() async throws(ServerClientError) -> CreateUserResponse {
        try await send("POST", "/v1/users")
    }

    /// `POST /v1/users {signedAppTransaction}`: this device, registered to the customer its Apple account is.
    public func register(signedAppTransaction: String) async throws(ServerClientError) -> CreateUserResponse {
        try await send(
            "POST", "/v1/users", body: CreateUserRequest(signedAppTransaction: signedAppTransaction))
    }

    /// `POST /v1/users/cloudkit`: the customer imported from CloudKit under this user record name, claimed by
    /// this install (its `claimKey` kept before asking), with the CloudKit web auth token that proves the
    /// install is that iCloud user's when the app fetches one.
    public func claimCloudKit(
        userRecordName: String, claimKey: String, signedAppTransaction: String? = nil, ckWebAuthToken: String? = nil
    ) async throws(ServerClientError) -> CreateUserResponse {
        try await send(
            "POST", "/v1/users/cloudkit",
            body: CloudKitClaimRequest(
                userRecordName: userRecordName, claimKey: claimKey, signedAppTransaction: signedAppTransaction,
                ckWebAuthToken: ckWebAuthToken))
    }

    /// `GET /v1/catalog`: the catalog the server loaded and its ETag, or `nil` when it is still the one tagged `etag`
    /// (304).
    public func catalog(etag: String?) async throws(ServerClientError) -> (catalog: Catalog, etag: String?)? {
        let (data, status, headers) = try await exchange(
            "GET", "/v1/catalog", headers: etag.map { ["If-None-Match": $0] } ?? [:])
        if status == 304 { return nil }
        try Self.check(status, data)
        do {
            return (try Catalog(json: data), headers.first { $0.key.lowercased() == "etag" }?.value)
        } catch {
            // Not a transport failure: the server answered, with a catalog this SDK cannot read (a newer kind).
            throw .refused(status, "unreadable-catalog", "the server's catalog is not readable: \(error)")
        }
    }

    /// `GET /v1/me`.
    public func me(token: String) async throws(ServerClientError) -> MeResponse {
        try await send("GET", "/v1/me", token: token)
    }

    /// `GET /v1/me/purchases`: every purchase the server holds for the customer.
    public func purchases(token: String) async throws(ServerClientError) -> [PurchaseRecord] {
        let response: PurchasesResponse = try await send("GET", "/v1/me/purchases", token: token)
        return response.purchases
    }

    /// `PUT /v1/me/push-token`: this device's APNs token (hex), `sandbox` for a development build.
    public func registerPushToken(_ token: String, environment: String, bearer: String) async throws(ServerClientError)
    {
        let _: NoContent = try await send(
            "PUT", "/v1/me/push-token", token: bearer, body: PushTokenRequest(token: token, environment: environment))
    }

    /// `DELETE /v1/me/push-token`: forgets this device's APNs token.
    public func unregisterPushToken(_ token: String, bearer: String) async throws(ServerClientError) {
        let _: NoContent = try await send(
            "DELETE", "/v1/me/push-token", token: bearer, body: PushTokenRequest(token: token))
    }

    /// `POST /v1/me/merge-code`: a one-time code (15 minutes) the customer reads to support, who types it in to
    /// merge this customer into their Apple account's.
    public func mergeCode(bearer: String) async throws(ServerClientError) -> MergeCodeResponse {
        try await send("POST", "/v1/me/merge-code", token: bearer)
    }

    /// `POST /v1/me/milestones`: records a milestone once per customer; answers whether this was the first time.
    public func milestone(_ name: String, bearer: String) async throws(ServerClientError) -> MilestoneResponse {
        try await send("POST", "/v1/me/milestones", token: bearer, body: MilestoneRequest(name: name))
    }

    /// `PUT /v1/me/verify-report`: what Verify Purchases found, for support.
    public func reportVerification(_ items: [ReconciliationItem], bearer: String) async throws(ServerClientError)
        -> VerifyReportResponse
    {
        try await send(
            "PUT", "/v1/me/verify-report", token: bearer,
            body: VerifyReportRequest(
                items: items.prefix(500).map {
                    VerifyReportItem(
                        transactionId: $0.transaction.transactionId, productId: $0.transaction.productId,
                        finished: $0.transaction.isFinished, verified: $0.transaction.isVerified,
                        verdict: $0.verdict.rawValue)
                }))
    }

    /// `POST /v1/transactions`: the server verifies and delivers once; `previouslyDelivered` records a purchase the
    /// app delivered before it used Coffer, without credits.
    public func post(signedTransaction: String, previouslyDelivered: Bool = false, token: String)
        async throws(ServerClientError) -> TransactionResponse
    {
        try await send(
            "POST", "/v1/transactions", token: token,
            body: TransactionRequest(
                signedTransaction: signedTransaction, previouslyDelivered: previouslyDelivered ? true : nil))
    }

    /// `GET /v1/me/backup`, or `nil` when there is none yet.
    public func backup(token: String) async throws(ServerClientError) -> BackupBody? {
        do {
            return try await send("GET", "/v1/me/backup", token: token)
        } catch .refused(404, _, _) {
            return nil
        }
    }

    /// `PUT /v1/me/backup` with `If-Match` (none for the first write), and the mailbox keys the balance holds; a
    /// conflict comes back as ``ServerClientError/refused(_:_:_:)`` with status 412.
    public func saveBackup(
        value: Int64, deficit: Int64 = 0, device: String, version: Int64?, applied: [String]? = nil,
        currencies: [String: BackupCurrency]? = nil, token: String
    ) async throws(ServerClientError) -> BackupBody {
        try await send(
            "PUT", "/v1/me/backup", token: token,
            body: BackupRequest(
                value: value, device: device, deficit: deficit, applied: applied, currencies: currencies),
            headers: version.map { ["If-Match": String($0)] } ?? [:])
    }

    /// `GET /v1/me/grants?status=pending`, every currency's.
    public func pendingGrants(token: String) async throws(ServerClientError) -> [GrantBody] {
        let response: GrantsResponse = try await send("GET", "/v1/me/grants?status=pending&currencies=1", token: token)
        return response.grants
    }

    /// `GET /v1/me/grants?status=cancelled`: grants support cancelled before any claim, every currency's.
    public func cancelledGrants(token: String) async throws(ServerClientError) -> [GrantBody] {
        let response: GrantsResponse = try await send(
            "GET", "/v1/me/grants?status=cancelled&currencies=1", token: token)
        return response.grants
    }

    /// `POST /v1/me/grants/{id}/claim` (idempotent).
    public func claim(grant id: UUID, token: String) async throws(ServerClientError) -> ClaimResponse {
        try await send("POST", "/v1/me/grants/\(id.uuidString.lowercased())/claim", token: token)
    }

    /// `GET /v1/me/adjustments`: the device wallet's mailbox; with `currencies`, the other currencies' too.
    public func adjustments(token: String, currencies: Bool = false) async throws(ServerClientError)
        -> [AdjustmentBody]
    {
        let response: AdjustmentsResponse = try await send(
            "GET", currencies ? "/v1/me/adjustments?currencies=1" : "/v1/me/adjustments", token: token)
        return response.adjustments
    }

    /// `POST /v1/me/spend` (server wallet): spends credits once per `key` (a retry with the same key is
    /// answered with the same balance, never spent twice), of `currency` by id (`nil`: the default currency).
    public func spend(amount: Int64, key: String, token: String, currency: String? = nil)
        async throws(ServerClientError) -> BalanceResponse
    {
        try await send(
            "POST", "/v1/me/spend", token: token, body: SpendRequest(amount: amount, currency: currency),
            headers: ["Idempotency-Key": key])
    }

    /// `PUT /v1/me/consent`: the customer's answer to sharing consumption data with Apple for refund requests.
    public func saveConsent(_ consented: Bool, token: String) async throws(ServerClientError) -> ConsentResponse {
        try await send("PUT", "/v1/me/consent", token: token, body: ConsentRequest(customerConsented: consented))
    }

    /// `POST /v1/me/offers/sign`: a promotional offer of a subscription signed for the user with the app's In-App
    /// Purchase key, both ways StoreKit takes it.
    public func signOffer(productId: String, offerId: String, token: String) async throws(ServerClientError)
        -> OfferSignatureResponse
    {
        try await send(
            "POST", "/v1/me/offers/sign", token: token,
            body: OfferSignatureRequest(productId: productId, offerId: offerId))
    }

    /// `POST /v1/me/offers/introductory-eligibility`: whether the user may take a subscription's introductory offer,
    /// signed for StoreKit.
    public func introductoryOfferEligibility(productId: String, token: String) async throws(ServerClientError)
        -> IntroductoryOfferResponse
    {
        try await send(
            "POST", "/v1/me/offers/introductory-eligibility", token: token,
            body: IntroductoryOfferRequest(productId: productId))
    }

    /// `GET /v1/me/events`: the server's hints of what changed for the user, as Server-Sent Events, until the
    /// connection drops (it then ends with ``ServerClientError/transport(_:)``) or the reader stops.
    public func events(token: String) -> AsyncThrowingStream<ServerEventSignal, any Error> {
        let (stream, continuation) = AsyncThrowingStream<ServerEventSignal, any Error>.makeStream()
        guard let url = endpoint("/v1/me/events") else {
            continuation.finish(throwing: ServerClientError.transport("bad path /v1/me/events"))
            return stream
        }
        var request = URLRequest(url: url)
        request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
        request.setValue("text/event-stream", forHTTPHeaderField: "Accept")
        let configuration = URLSessionConfiguration.ephemeral
        // The server sends a keep-alive comment every 15 seconds by default; silence for longer is a dead line.
        configuration.timeoutIntervalForRequest = eventSilence
        configuration.timeoutIntervalForResource = .infinity
        let reader = EventStreamReader(continuation: continuation)
        let session = URLSession(configuration: configuration, delegate: reader, delegateQueue: reader.queue)
        let task = session.dataTask(with: request)
        sent.value.add(1, ordering: .relaxed)
        // On Apple platforms cancelling the task is enough: the delegate then hears it complete and invalidates
        // the session on its own queue. FoundationNetworking (Linux) traps when a cancel meets the task's
        // completion ("a task that is not in the registry"), and deadlocks when it cancels under the reader's
        // cancellation: there the reader only stops reading, and the connection ends when the server ends it.
        #if canImport(FoundationNetworking)
            continuation.onTermination = { _ in reader.stop() }
        #else
            continuation.onTermination = { _ in task.cancel() }
        #endif
        task.resume()
        return stream
    }

    private func send<Answer: Decodable>(
        _ method: String, _ path: String, token: String? = nil, body: (some Encodable)? = String?.none,
        headers: [String: String] = [:]
    ) async throws(ServerClientError) -> Answer {
        let (data, status, _) = try await exchange(method, path, token: token, body: body, headers: headers)
        try Self.check(status, data)
        if status == 204, let nothing = NoContent() as? Answer { return nothing }
        do {
            return try Self.decoder.decode(Answer.self, from: data)
        } catch {
            throw .transport("the server's answer is not readable: \(error)")
        }
    }

    /// The server's dates are ISO 8601.
    static var decoder: JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }

    /// Throws what a status other than 2xx means: out of reach for 5xx, 429 and no answer (tried again later),
    /// refused with the server's code otherwise.
    static func check(_ status: Int, _ data: Data) throws(ServerClientError) {
        guard !(200..<300).contains(status) else { return }
        let detail = try? decoder.decode(ErrorResponse.self, from: data)
        if status >= 500 || status == 0 || status == 429 {
            throw .transport("the server answered \(status) \(detail?.error.message ?? "")")
        }
        throw .refused(status, detail?.error.code ?? "http-\(status)", detail?.error.message ?? "")
    }

    /// The server's URL of `path` (which starts with `/`), under the base URL's own path: a server at
    /// `https://example.com/coffer/` answers `/v1/me` at `https://example.com/coffer/v1/me`.
    func endpoint(_ path: String) -> URL? {
        var base = baseURL.absoluteString
        while base.hasSuffix("/") { base.removeLast() }
        return URL(string: base + path)
    }

    /// One request and its answer's bytes, status and headers.
    private func exchange(
        _ method: String, _ path: String, token: String? = nil, body: (some Encodable)? = String?.none,
        headers: [String: String] = [:]
    ) async throws(ServerClientError) -> (Data, Int, [String: String]) {
        guard let url = endpoint(path) else { throw .transport("bad path \(path)") }
        var request = URLRequest(url: url)
        request.httpMethod = method
        // The request's id, sent so the server's log line and this one name the same request even when no answer
        // comes back; the server answers with it in `X-Request-Id`.
        let requestId = UUID().uuidString.lowercased()
        request.setValue(requestId, forHTTPHeaderField: "X-Request-Id")
        if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        if let body {
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            do {
                request.httpBody = try JSONEncoder().encode(body)
            } catch {
                throw .transport("cannot encode the request: \(error)")
            }
        }
        let data: Data
        let response: URLResponse
        sent.value.add(1, ordering: .relaxed)
        let started = ContinuousClock.now
        do {
            (data, response) = try await load(request)
        } catch {
            log(.warning, .server, "\(method) \(path): no answer (\(error.localizedDescription)), request \(requestId)")
            throw .transport(error.localizedDescription)
        }
        let http = response as? HTTPURLResponse
        var fields: [String: String] = [:]
        for (name, value) in http?.allHeaderFields ?? [:] {
            if let name = name as? String, let value = value as? String { fields[name] = value }
        }
        let status = http?.statusCode ?? 0
        // The server's id as it answered, when it is one an id can be (a proxy's could be anything): else ours.
        let answeredId =
            fields.first { $0.key.lowercased() == "x-request-id" }.map(\.value).flatMap { id in
                (1...128).contains(id.count)
                    && id.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "-_.:".contains($0)) } ? id : nil
            } ?? requestId
        let took = (ContinuousClock.now - started).components
        let milliseconds = took.seconds * 1_000 + took.attoseconds / 1_000_000_000_000_000
        log(
            (200..<300).contains(status) ? .debug : .notice, .server,
            "\(method) \(path): \(status) in \(milliseconds) ms, request \(answeredId)")
        return (data, status, fields)
    }

    /// A 204 answer.
    struct NoContent: Decodable {}

    /// URLSession's `data(for:)`, answering a cancelled caller at once with `CancellationError`. On Apple
    /// platforms the request is cancelled too. FoundationNetworking (Linux) cancels its own `data(for:)` under
    /// the Swift task's status lock, which deadlocks against a request completing at that moment, and its
    /// `cancel()` traps when it meets the completion: there the request is left to finish (its timeout bounds
    /// it) and its answer is dropped.
    private func load(_ request: URLRequest) async throws -> (Data, URLResponse) {
        let pending = PendingRequest()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                // A caller cancelled already is answered at once, and no task is made (one never resumed
                // would stay in the session's registry).
                guard pending.begin(continuation) else { return }
                let task = session.dataTask(with: request) { data, response, error in
                    if let error {
                        pending.finish(.failure(error))
                    } else if let response {
                        pending.finish(.success((data ?? Data(), response)))
                    } else {
                        pending.finish(.failure(URLError(.badServerResponse)))
                    }
                }
                // On Apple platforms a caller cancelled meanwhile never sends its request; FoundationNetworking
                // (Linux) must resume every task it made, and the answer is dropped.
                #if canImport(FoundationNetworking)
                    pending.started(task)
                    task.resume()
                #else
                    if pending.started(task) { task.resume() } else { task.cancel() }
                #endif
            }
        } onCancel: {
            pending.cancel()
        }
    }
}

/// One request's continuation, resumed exactly once: by the answer, or by the caller's cancellation.
final class PendingRequest: Sendable {
    private struct State {
        var continuation: CheckedContinuation<(Data, URLResponse), any Error>?
        var task: URLSessionTask?
        var cancelled = false
    }
    private let state = Mutex(State())

    /// Holds the continuation; false (and the continuation resumed with `CancellationError`) when the caller
    /// was cancelled already, so no request is made.
    func begin(_ continuation: CheckedContinuation<(Data, URLResponse), any Error>) -> Bool {
        let cancelled = state.withLock { state in
            if !state.cancelled { state.continuation = continuation }
            return state.cancelled
        }
        if cancelled { continuation.resume(throwing: CancellationError()) }
        return !cancelled
    }

    /// Holds the request about to start; false when the caller was cancelled meanwhile.
    @discardableResult
    func started(_ task: URLSessionTask) -> Bool {
        state.withLock { state in
            state.task = task
            return !state.cancelled
        }
    }

    /// Resumes the caller with the answer, unless it was cancelled.
    func finish(_ result: Result<(Data, URLResponse), any Error>) {
        state.withLock { state in
            defer { state.continuation = nil }
            return state.continuation
        }?.resume(with: result)
    }

    /// Resumes the caller with `CancellationError` now; on Apple platforms cancels the request too.
    func cancel() {
        let (continuation, task) = state.withLock { state in
            state.cancelled = true
            defer { state.continuation = nil }
            return (state.continuation, state.task)
        }
        continuation?.resume(throwing: CancellationError())
        #if !canImport(FoundationNetworking)
            task?.cancel()
        #else
            _ = task
        #endif
    }
}

/// Why a server call failed.
public enum ServerClientError: Error, Equatable, Sendable {
    /// The server could not be reached or failed (5xx, 429): try again later; nothing is lost.
    case transport(String)
    /// The server refused the request (4xx) with a code; retrying the same request will not help.
    case refused(Int, String, String)
}

/// What the event stream says: that it is open (events sent while it was not are lost, so look at
/// everything once), or one event.
public enum ServerEventSignal: Sendable, Equatable {
    /// The stream is open.
    case connected
    /// Something changed.
    case event(ServerEventBody)
}

/// Reads a Server-Sent Events response as it arrives. Every callback runs on ``queue`` (one at a time), which
/// is all that touches ``buffer``.
private final class EventStreamReader: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    let continuation: AsyncThrowingStream<ServerEventSignal, any Error>.Continuation
    let queue: OperationQueue = {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        return queue
    }()
    private var buffer = Data()
    /// Set when the stream's reader stopped: what arrives after is dropped.
    private let stopped = Mutex(false)
    /// Frames larger than this are not from a Coffer server; the stream is dropped.
    private static let maximumFrame = 64 * 1_024

    init(continuation: AsyncThrowingStream<ServerEventSignal, any Error>.Continuation) {
        self.continuation = continuation
    }

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
    ) {
        let status = (response as? HTTPURLResponse)?.statusCode ?? 0
        guard status == 200 else {
            completionHandler(.cancel)
            continuation.finish(
                throwing: status >= 500 || status == 429
                    ? ServerClientError.transport("the event stream answered \(status)")
                    : ServerClientError.refused(status, "http-\(status)", "the event stream was refused"))
            return
        }
        continuation.yield(.connected)
        completionHandler(.allow)
    }

    /// The reader stopped: nothing more is read.
    func stop() { stopped.withLock { $0 = true } }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        guard !stopped.withLock({ $0 }) else { return }
        buffer.append(data)
        let separator = Data("\n\n".utf8)
        while let end = buffer.range(of: separator) {
            let frame = String(decoding: buffer[buffer.startIndex..<end.lowerBound], as: UTF8.self)
            buffer.removeSubrange(buffer.startIndex..<end.upperBound)
            if let event = Self.event(frame) { continuation.yield(.event(event)) }
        }
        if buffer.count > Self.maximumFrame {
            stop()
            buffer = Data()
            #if !canImport(FoundationNetworking)
                dataTask.cancel()
            #endif
            continuation.finish(throwing: ServerClientError.transport("an event frame is too large"))
        }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        continuation.finish(
            throwing: ServerClientError.transport(
                error.map { "the event stream dropped: \($0.localizedDescription)" }
                    ?? "the event stream ended"))
        session.finishTasksAndInvalidate()
    }

    /// The event of one frame: its `data:` lines as JSON; comments (`: keep-alive`) and unknown kinds are none.
    static func event(_ frame: String) -> ServerEventBody? {
        let data = frame.split(separator: "\n").filter { $0.hasPrefix("data:") }.map {
            $0.dropFirst(5).trimmingCharacters(in: .whitespaces)
        }
        guard !data.isEmpty else { return nil }
        return try? JSONDecoder().decode(ServerEventBody.self, from: Data(data.joined(separator: "\n").utf8))
    }
}

/// A count shared by a ``ServerClient`` and its copies.
private final class RequestCount: Sendable {
    let value = Atomic<Int>(0)
}
