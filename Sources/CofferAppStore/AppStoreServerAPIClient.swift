import AsyncHTTPClient
import CofferCore
import Crypto
import Foundation
import NIOCore
import NIOFoundationCompat
import NIOHTTP1

/// Why an App Store Server API call failed.
public enum AppStoreAPIError: Error, Sendable, CustomStringConvertible {
    /// Apple answered with an error status and, usually, an error code (`4040010`, ...); with a 429, when Apple
    /// said in `Retry-After` (a UNIX time in milliseconds) that the next request may be sent.
    case api(httpStatus: Int, code: Int64?, message: String?, retryAfter: Date? = nil)
    /// The connection failed, or an answer did not come in time.
    case transport(String)
    /// Apple's answer could not be decoded.
    case malformed(String)
    /// The request could not be built (a bad key, say).
    case invalidRequest(String)

    /// Apple's error code as a known case, when it is one.
    public var apiErrorCode: APIErrorCode? {
        guard case .api(_, let code?, _, _) = self else { return nil }
        return APIErrorCode(rawValue: code)
    }

    /// When Apple's rate limit lets the next request through (a 429's `Retry-After`), if it said.
    public var retryAfter: Date? {
        guard case .api(429, _, _, let date?) = self else { return nil }
        return date
    }

    /// Whether the call may succeed later: rate limits, Apple's retryable codes, 5xx and transport failures.
    public var isRetryable: Bool {
        switch self {
        case .api(let status, let code, _, _):
            status == 429 || status >= 500 || code.map { APIErrorCode(rawValue: $0)?.isRetryable ?? false } ?? false
        case .transport: true
        case .malformed, .invalidRequest: false
        }
    }

    /// A one-line explanation.
    public var description: String {
        switch self {
        case .api(let status, let code, let message, let retryAfter):
            "App Store Server API error: HTTP \(status)" + (code.map { ", code \($0)" } ?? "")
                + (message.map { ": \($0)" } ?? "") + (retryAfter.map { " (retry after \($0))" } ?? "")
        case .transport(let detail): "App Store Server API unreachable: \(detail)"
        case .malformed(let detail): "App Store Server API answered something unreadable: \(detail)"
        case .invalidRequest(let detail): "cannot build the request: \(detail)"
        }
    }
}

/// Apple's documented error codes that Coffer acts on.
public enum APIErrorCode: Int64, Sendable, CaseIterable {
    /// 4000006: the transaction id is not valid.
    case invalidTransactionId = 4_000_006
    /// 4000005: the revision token is not valid.
    case invalidRequestRevision = 4_000_005
    /// 4000023: the product id is not valid (a history filter's).
    case invalidProductId = 4_000_023
    /// 4000183: the app account token is not a valid UUID (Set App Account Token).
    case invalidAppAccountTokenUUID = 4_000_183
    /// 4040001: no account for the token.
    case accountNotFound = 4_040_001
    /// 4040002: retry later: account not found yet.
    case accountNotFoundRetryable = 4_040_002
    /// 4040003: no app for the bundle id.
    case appNotFound = 4_040_003
    /// 4040004: retry later: app not found yet.
    case appNotFoundRetryable = 4_040_004
    /// 4040005: the original transaction id was not found.
    case originalTransactionIdNotFound = 4_040_005
    /// 4040006: retry later: original transaction id not found yet.
    case originalTransactionIdNotFoundRetryable = 4_040_006
    /// 4040010: the transaction id was not found.
    case transactionIdNotFound = 4_040_010
    /// 4290000: too many requests.
    case rateLimitExceeded = 4_290_000
    /// 5000000: Apple's internal error.
    case generalInternal = 5_000_000
    /// 5000001: Apple's internal error; retry.
    case generalInternalRetryable = 5_000_001

    /// Whether Apple says to try again.
    public var isRetryable: Bool {
        switch self {
        case .accountNotFoundRetryable, .appNotFoundRetryable, .originalTransactionIdNotFoundRetryable,
            .rateLimitExceeded, .generalInternalRetryable:
            true
        default: false
        }
    }
}

/// A client for the App Store Server API, authenticated with an ES256 JWT made from the app's In-App
/// Purchase key (kid, iss, bid, aud `appstoreconnect-v1`, a five-minute expiry). Retries with back-off on
/// 429, 5xx and Apple's retryable codes.
///
/// ```swift
/// let api = AppStoreServerAPIClient(httpClient: http, credentials: credentials, environment: .sandbox)
/// let info = try await api.getTransactionInfo("2000000123456789")
/// ```
public struct AppStoreServerAPIClient: Sendable {
    /// The app's In-App Purchase key from App Store Connect.
    public struct Credentials: Sendable {
        /// The key id (`kid`).
        public var keyId: String
        /// The issuer id (`iss`).
        public var issuerId: String
        /// The app's bundle id (`bid`).
        public var bundleId: String
        /// The private key.
        public var privateKey: P256.Signing.PrivateKey

        /// Creates credentials.
        public init(keyId: String, issuerId: String, bundleId: String, privateKey: P256.Signing.PrivateKey) {
            self.keyId = keyId
            self.issuerId = issuerId
            self.bundleId = bundleId
            self.privateKey = privateKey
        }

        /// Creates credentials from the `.p8` PEM file App Store Connect hands out.
        public init(keyId: String, issuerId: String, bundleId: String, privateKeyPEM: String) throws(AppStoreAPIError) {
            do {
                self.init(
                    keyId: keyId, issuerId: issuerId, bundleId: bundleId,
                    privateKey: try P256.Signing.PrivateKey(pemRepresentation: privateKeyPEM))
            } catch {
                throw .invalidRequest("the private key is not a P-256 PEM key: \(error)")
            }
        }
    }

    /// Retry behaviour for 429, 5xx and retryable codes.
    public struct RetryPolicy: Sendable {
        /// Attempts in all.
        public var maximumAttempts = 3
        /// The first pause; it doubles each time.
        public var initialBackoff: Duration = .milliseconds(500)
        /// The longest one call may take.
        public var callTimeout: Duration = .seconds(15)
        /// The longest `Retry-After` a call waits for itself; a later one is thrown to the caller.
        public var longestRetryAfterWait: Duration = .seconds(5)
        /// The clock the pauses are kept on (the system's; a test's own to step them).
        public var clock: any TimerClock = SystemTimerClock()

        /// The defaults.
        public init() {}
    }

    /// Apple's production host (Apple's documentation and libraries name it since 2026; the older
    /// `api.storekit.itunes.apple.com` answers the same API).
    public static let productionURL = "https://api.storekit.apple.com"
    /// Apple's sandbox host (formerly `api.storekit-sandbox.itunes.apple.com`).
    public static let sandboxURL = "https://api.storekit-sandbox.apple.com"

    private let httpClient: HTTPClient
    let credentials: Credentials
    /// The base URL requests go to.
    public let baseURL: String
    private let retry: RetryPolicy
    let now: @Sendable () -> Date

    /// Creates a client.
    ///
    /// - Parameters:
    ///   - httpClient: The HTTP client (owned and shut down by the caller).
    ///   - credentials: The In-App Purchase key.
    ///   - environment: Production or Sandbox picks Apple's host.
    ///   - baseURL: Another host (the simulator, a test server); overrides `environment`.
    ///   - retry: Retry behaviour.
    ///   - now: The clock, for the token's dates.
    public init(
        httpClient: HTTPClient, credentials: Credentials, environment: SignedDataEnvironment, baseURL: String? = nil,
        retry: RetryPolicy = RetryPolicy(), now: @escaping @Sendable () -> Date = Date.init
    ) {
        self.httpClient = httpClient
        self.credentials = credentials
        self.baseURL = baseURL ?? (environment == .production ? Self.productionURL : Self.sandboxURL)
        self.retry = retry
        self.now = now
    }

    // MARK: Endpoints

    /// Get Transaction Info.
    public func getTransactionInfo(_ transactionId: String) async throws(AppStoreAPIError) -> TransactionInfoResponse {
        try await send(.GET, "/inApps/v1/transactions/\(try escape(transactionId))")
    }

    /// Get Transaction History (v2), one page.
    public func getTransactionHistory(_ transactionId: String, revision: String? = nil) async throws(AppStoreAPIError)
        -> HistoryResponse
    {
        try await send(.GET, "/inApps/v2/history/\(try escape(transactionId))", query: ["revision": revision])
    }

    /// Every signed transaction in the history, following the pages.
    public func allTransactions(_ transactionId: String) async throws(AppStoreAPIError) -> [String] {
        var revision: String?
        var transactions: [String] = []
        while true {
            let page = try await getTransactionHistory(transactionId, revision: revision)
            transactions += page.signedTransactions ?? []
            guard page.hasMore == true, let next = page.revision else { return transactions }
            revision = next
        }
    }

    /// Get All Subscription Statuses.
    public func getAllSubscriptionStatuses(_ transactionId: String) async throws(AppStoreAPIError) -> StatusResponse {
        try await send(.GET, "/inApps/v1/subscriptions/\(try escape(transactionId))")
    }

    /// Look Up Order ID.
    public func lookUpOrderId(_ orderId: String) async throws(AppStoreAPIError) -> OrderLookupResponse {
        try await send(.GET, "/inApps/v1/lookup/\(try escape(orderId))")
    }

    /// Get Refund History, one page.
    public func getRefundHistory(_ transactionId: String, revision: String? = nil) async throws(AppStoreAPIError)
        -> RefundHistoryResponse
    {
        try await send(.GET, "/inApps/v2/refund/lookup/\(try escape(transactionId))", query: ["revision": revision])
    }

    /// Get Notification History, one page.
    public func getNotificationHistory(_ request: NotificationHistoryRequest, paginationToken: String? = nil)
        async throws(AppStoreAPIError) -> NotificationHistoryResponse
    {
        try await send(
            .POST, "/inApps/v1/notifications/history", query: ["paginationToken": paginationToken], body: request)
    }

    /// Request a Test Notification.
    public func requestTestNotification() async throws(AppStoreAPIError) -> SendTestNotificationResponse {
        try await send(.POST, "/inApps/v1/notifications/test")
    }

    /// Send Consumption Information (version 2), answering a `CONSUMPTION_REQUEST` (Apple answers 202 with no
    /// body).
    public func sendConsumptionInformation(_ transactionId: String, _ request: ConsumptionRequest)
        async throws(AppStoreAPIError)
    {
        let _: EmptyResponse = try await send(
            .PUT, "/inApps/v2/transactions/consumption/\(try escape(transactionId))", body: request)
    }

    /// Send Consumption Information version 1, Apple's older coded form (Apple answers 202 with no body).
    public func sendConsumptionInformationV1(_ transactionId: String, _ request: ConsumptionRequestV1)
        async throws(AppStoreAPIError)
    {
        let _: EmptyResponse = try await send(
            .PUT, "/inApps/v1/transactions/consumption/\(try escape(transactionId))", body: request)
    }

    /// Get App Transaction Info: the customer's app transaction, by any of their transaction ids or their app
    /// transaction id.
    public func getAppTransactionInfo(_ anyTransactionId: String) async throws(AppStoreAPIError)
        -> AppTransactionInfoResponse
    {
        try await send(.GET, "/inApps/v1/transactions/appTransactions/\(try escape(anyTransactionId))")
    }

    /// Set App Account Token: the purchase `originalTransactionId` names, and its renewals from now on, carry
    /// `token` (Apple answers 200 with no body).
    public func setAppAccountToken(_ originalTransactionId: String, _ token: UUID) async throws(AppStoreAPIError) {
        var body = UpdateAppAccountTokenRequest()
        body.appAccountToken = token.uuidString.lowercased()
        let _: EmptyResponse = try await send(
            .PUT, "/inApps/v1/transactions/\(try escape(originalTransactionId))/appAccountToken", body: body)
    }

    /// Finish Transaction: tells Apple the server delivered the purchase, as `Transaction.finish()` does on the
    /// device (Apple answers 200 with no body).
    public func finishTransaction(_ transactionId: String) async throws(AppStoreAPIError) {
        let _: EmptyResponse = try await send(.POST, "/inApps/v1/transactions/\(try escape(transactionId))/finish")
    }

    /// Extend a Subscription Renewal Date.
    public func extendSubscriptionRenewalDate(_ originalTransactionId: String, _ request: ExtendRenewalDateRequest)
        async throws(AppStoreAPIError) -> ExtendRenewalDateResponse
    {
        try await send(.PUT, "/inApps/v1/subscriptions/extend/\(try escape(originalTransactionId))", body: request)
    }

    /// Extend Renewal Dates for All Active Subscribers of a product (Apple runs it in the background; see
    /// ``getStatusOfRenewalDateExtensions(productId:requestIdentifier:)``).
    public func extendRenewalDatesForAllActiveSubscribers(_ request: MassExtendRenewalDateRequest)
        async throws(AppStoreAPIError) -> MassExtendRenewalDateResponse
    {
        try await send(.POST, "/inApps/v1/subscriptions/extend/mass", body: request)
    }

    /// Get Status of Subscription Renewal Date Extensions.
    public func getStatusOfRenewalDateExtensions(productId: String, requestIdentifier: String)
        async throws(AppStoreAPIError) -> MassExtendRenewalDateStatusResponse
    {
        try await send(
            .GET, "/inApps/v1/subscriptions/extend/mass/\(try escape(productId))/\(try escape(requestIdentifier))")
    }

    // MARK: Authentication

    /// The bearer token: an ES256 JWT signed with the In-App Purchase key, valid for five minutes.
    public func makeToken() throws(AppStoreAPIError) -> String {
        let issuedAt = Int64(now().timeIntervalSince1970)
        let claims: [String: any Sendable] = [
            "iss": credentials.issuerId, "iat": issuedAt, "exp": issuedAt + 300, "aud": "appstoreconnect-v1",
            "bid": credentials.bundleId,
        ]
        do {
            return try CompactJWT.sign(
                header: ["kid": credentials.keyId, "typ": "JWT"], claims: claims, key: credentials.privateKey)
        } catch {
            throw .invalidRequest("cannot sign the token: \(error)")
        }
    }

    // MARK: Transport

    private struct EmptyResponse: Decodable {}

    /// A `Retry-After` value as Apple sends it: a UNIX time in milliseconds (Identifying rate limits); a small
    /// number is taken as seconds from now, as HTTP's own form is, and anything else as absent.
    static func retryAfter(_ header: String, now: Date) -> Date? {
        guard let number = Int64(header.trimmingCharacters(in: .whitespaces)), number >= 0 else { return nil }
        // Apple's milliseconds are 13 digits today; HTTP's delay-seconds are small.
        if number < 100_000_000_000 { return now.addingTimeInterval(Double(min(number, 86_400))) }
        return Date(timeIntervalSince1970: Double(number) / 1_000)
    }

    private func escape(_ component: String) throws(AppStoreAPIError) -> String {
        guard !component.isEmpty,
            let escaped = component.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(["-", "_", "."]))
        else { throw .invalidRequest("empty identifier") }
        return escaped
    }

    private func send<Response: Decodable>(
        _ method: HTTPMethod, _ path: String, query: [String: String?] = [:], body: (some Encodable)? = String?.none
    ) async throws(AppStoreAPIError) -> Response {
        var url = baseURL + path
        let items = query.compactMap { key, value in value.map { (key, $0) } }.sorted { $0.0 < $1.0 }
        if !items.isEmpty {
            url +=
                "?"
                + items.map { key, value in
                    "\(key)=\(value.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")"
                }.joined(separator: "&")
        }
        let bodyBytes: Data?
        do {
            bodyBytes = try body.map { try AppleJSON.encode($0) }
        } catch {
            throw .invalidRequest("cannot encode the body: \(error)")
        }
        var backoff = retry.initialBackoff
        var attempt = 1
        while true {
            switch await once(method, url, body: bodyBytes, as: Response.self) {
            case .success(let response): return response
            case .failure(let error):
                guard error.isRetryable, attempt < retry.maximumAttempts else { throw error }
                // Apple's rate limit names when to come back: waited for here when it is near, otherwise the
                // caller's to decide (a reconciliation pauses; a request on a customer's behalf fails fast).
                if let until = error.retryAfter {
                    let wait = until.timeIntervalSince(now())
                    guard wait <= Double(retry.longestRetryAfterWait.components.seconds) else { throw error }
                    if wait > 0 { backoff = .milliseconds(Int64(wait * 1_000)) }
                }
            }
            do {
                try await retry.clock.sleep(for: backoff)
            } catch {
                throw .transport("cancelled")
            }
            attempt += 1
            backoff *= 2
        }
    }

    private func once<Response: Decodable>(_ method: HTTPMethod, _ url: String, body: Data?, as type: Response.Type)
        async
        -> Result<Response, AppStoreAPIError>
    {
        do {
            return .success(try await exchange(method, url, body: body, as: type))
        } catch {
            return .failure(error)
        }
    }

    private func exchange<Response: Decodable>(_ method: HTTPMethod, _ url: String, body: Data?, as type: Response.Type)
        async throws(AppStoreAPIError) -> Response
    {
        var request = HTTPClientRequest(url: url)
        request.method = method
        request.headers.add(name: "Authorization", value: "Bearer \(try makeToken())")
        request.headers.add(name: "User-Agent", value: "Coffer")
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(data: body))
        }
        let status: Int
        let retryAfterHeader: String?
        let bytes: ByteBuffer
        do {
            let seconds = retry.callTimeout.components.seconds
            let response = try await httpClient.execute(request, timeout: .seconds(seconds))
            status = Int(response.status.code)
            retryAfterHeader = response.headers.first(name: "Retry-After")
            bytes = try await response.body.collect(upTo: 16 * 1024 * 1024)
        } catch {
            throw .transport("\(url): \(error)")
        }
        let data = Data(buffer: bytes)
        guard (200..<300).contains(status) else {
            let payload = try? AppleJSON.decode(ErrorPayload.self, from: data)
            throw .api(
                httpStatus: status, code: payload?.errorCode, message: payload?.errorMessage,
                retryAfter: status == 429 ? retryAfterHeader.flatMap { Self.retryAfter($0, now: now()) } : nil)
        }
        if Response.self == EmptyResponse.self, data.isEmpty, let empty = EmptyResponse() as? Response { return empty }
        do {
            return try AppleJSON.decode(Response.self, from: data)
        } catch {
            throw .malformed("\(error)")
        }
    }
}
