import AsyncHTTPClient
import CofferCore
import Foundation
import NIOCore
import NIOFoundationCompat

/// Why verifyReceipt could not give an answer.
public enum VerifyReceiptError: Error, Sendable, CustomStringConvertible {
    /// Apple answered with a status that is not a valid receipt.
    case rejected(VerifyReceiptStatus)
    /// Apple kept failing with a retryable status until the attempts or the deadline ran out.
    case exhausted(VerifyReceiptStatus)
    /// One call took longer than its timeout, or the overall deadline passed.
    case timedOut(String)
    /// The connection failed or Apple answered with an HTTP error.
    case transport(String)
    /// Apple's answer could not be decoded.
    case malformed(String)

    /// Whether asking again later may help.
    public var isRetryable: Bool {
        switch self {
        case .rejected(let status): status.isRetryable
        case .exhausted, .timedOut, .transport: true
        case .malformed: false
        }
    }

    /// A one-line explanation.
    public var description: String {
        switch self {
        case .rejected(let status): "verifyReceipt refused the receipt: \(status)"
        case .exhausted(let status): "verifyReceipt kept failing: \(status)"
        case .timedOut(let detail): "verifyReceipt timed out: \(detail)"
        case .transport(let detail): "verifyReceipt could not be reached: \(detail)"
        case .malformed(let detail): "verifyReceipt answered something unreadable: \(detail)"
        }
    }
}

/// A client for Apple's legacy verifyReceipt endpoint: production first, the sandbox when production
/// answers 21007, retries of retryable statuses (Apple's `is-retryable` honoured) with back-off, a
/// timeout per call and a deadline for the whole verification.
///
/// ```swift
/// let client = VerifyReceiptClient(httpClient: http, configuration: .init(sharedSecret: secret))
/// let response = try await client.verify(receiptData: base64)
/// ```
public struct VerifyReceiptClient: Sendable {
    /// Where and how to ask.
    public struct Configuration: Sendable {
        /// Apple's production endpoint.
        public var productionURL = "https://buy.itunes.apple.com/verifyReceipt"
        /// Apple's sandbox endpoint.
        public var sandboxURL = "https://sandbox.itunes.apple.com/verifyReceipt"
        /// The app-specific shared secret (`password`), needed for auto-renewable subscriptions.
        public var sharedSecret: String?
        /// Ask Apple to leave out old renewal transactions (`exclude-old-transactions`).
        public var excludeOldTransactions = false
        /// The longest one HTTP call may take.
        public var callTimeout: Duration = .seconds(10)
        /// The longest a whole verification (fallback and retries included) may take.
        public var deadline: Duration = .seconds(30)
        /// How many times a retryable status is tried in all.
        public var maximumAttempts = 3
        /// The first pause between retries; it doubles each time.
        public var initialBackoff: Duration = .milliseconds(500)
        /// The clock the deadline and the pauses are kept on (the system's; a test's own to step them).
        public var clock: any TimerClock = SystemTimerClock()

        /// The defaults, with an optional shared secret.
        public init(sharedSecret: String? = nil) { self.sharedSecret = sharedSecret }
    }

    private let httpClient: HTTPClient
    /// The configuration in use.
    public let configuration: Configuration

    /// Creates a client.
    ///
    /// - Parameters:
    ///   - httpClient: The HTTP client (owned and shut down by the caller).
    ///   - configuration: Endpoints, secret and timing.
    public init(httpClient: HTTPClient, configuration: Configuration) {
        self.httpClient = httpClient
        self.configuration = configuration
    }

    /// Verifies a base64 app receipt with Apple.
    ///
    /// - Returns: Apple's answer for a valid receipt (status 0 or 21006).
    /// - Throws: ``VerifyReceiptError``.
    public func verify(receiptData: String) async throws(VerifyReceiptError) -> VerifyReceiptResponse {
        let clock = configuration.clock
        let deadline = clock.elapsed + configuration.deadline
        var url = configuration.productionURL
        var attempt = 1
        var backoff = configuration.initialBackoff
        var switchedHost = false
        while true {
            let response = try await post(receiptData: receiptData, to: url, deadline: deadline, clock: clock)
            let status = VerifyReceiptStatus(code: response.status)
            if status.isValidReceipt { return response }
            // One switch of host at most: two hosts that each send the receipt to the other must not loop.
            if !switchedHost, status.code == 21007 || status.code == 21008 {
                switchedHost = true
                url = url == configuration.productionURL ? configuration.sandboxURL : configuration.productionURL
                continue
            }
            let retryable = response.isRetryable ?? status.isRetryable
            guard retryable else { throw .rejected(status) }
            guard attempt < configuration.maximumAttempts, clock.elapsed + backoff < deadline else {
                throw .exhausted(status)
            }
            do {
                try await clock.sleep(for: backoff)
            } catch {
                throw .timedOut("cancelled")
            }
            attempt += 1
            backoff *= 2
        }
    }

    private func post(
        receiptData: String, to url: String, deadline: Duration, clock: any TimerClock
    ) async throws(VerifyReceiptError) -> VerifyReceiptResponse {
        let remaining = deadline - clock.elapsed
        guard remaining > .zero else { throw .timedOut("the deadline of \(configuration.deadline) passed") }
        let timeout = min(remaining, configuration.callTimeout)
        var body: [String: Any] = ["receipt-data": receiptData]
        if let secret = configuration.sharedSecret { body["password"] = secret }
        if configuration.excludeOldTransactions { body["exclude-old-transactions"] = true }
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        do {
            request.body = .bytes(ByteBuffer(bytes: try JSONSerialization.data(withJSONObject: body)))
        } catch {
            throw .malformed("cannot encode the request: \(error)")
        }
        let bytes: ByteBuffer
        do {
            let response = try await httpClient.execute(
                request,
                timeout: .nanoseconds(
                    Int64(timeout.components.seconds) * 1_000_000_000 + timeout.components.attoseconds / 1_000_000_000))
            guard response.status == .ok else {
                throw VerifyReceiptError.transport("HTTP \(response.status.code) from \(url)")
            }
            bytes = try await response.body.collect(upTo: 16 * 1024 * 1024)
        } catch let error as VerifyReceiptError {
            throw error
        } catch let error as HTTPClientError where error == .deadlineExceeded || error == .readTimeout {
            throw .timedOut("no answer from \(url) within \(timeout)")
        } catch {
            throw .transport("\(url): \(error)")
        }
        do {
            return try StrictJSON.decode(VerifyReceiptResponse.self, from: Data(buffer: bytes))
        } catch {
            throw .malformed("\(error)")
        }
    }
}
