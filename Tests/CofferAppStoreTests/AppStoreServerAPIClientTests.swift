import AsyncHTTPClient
import CofferAppStore
import CofferCore
import CofferTestSupport
import Crypto
import Foundation
import Hummingbird
import HummingbirdTesting
import Synchronization
import Testing

/// A local App Store Server API: it checks the bearer JWT's signature and claims and answers with
/// Apple's sample bodies.
final class FakeServerAPI: Sendable {
    let publicKey: P256.Signing.PublicKey
    let bundleId: String
    /// Requests refused for their token, and consumption bodies received.
    let refusedTokens = Mutex(0)
    let consumption = Mutex<[String: String]>([:])
    let flakyFailures = Mutex(1)

    init(publicKey: P256.Signing.PublicKey, bundleId: String) {
        self.publicKey = publicKey
        self.bundleId = bundleId
    }

    func application() -> some ApplicationProtocol {
        let router = Router()
        router.get("/inApps/v1/transactions/:id") { request, context -> Response in
            try self.authorize(request)
            let id = context.parameters.get("id") ?? ""
            if id == "missing" { return try self.sample("transactionIdNotFoundError", status: .notFound) }
            if id == "flaky",
                self.flakyFailures.withLock({ count in
                    defer { count -= 1 }
                    return count > 0
                })
            {
                return try self.sample("apiTooManyRequestsException", status: .tooManyRequests)
            }
            return try self.sample("transactionInfoResponse")
        }
        router.get("/inApps/v2/history/:id") { request, _ -> Response in
            try self.authorize(request)
            if request.uri.queryParameters.get("revision") == "revision_output" {
                return self.json(
                    #"{"revision": "end", "hasMore": false, "bundleId": "com.example", "signedTransactions": ["last_value"]}"#
                )
            }
            return try self.sample("transactionHistoryResponse")
        }
        router.get("/inApps/v1/subscriptions/:id") { request, _ in
            try self.authorize(request)
            return try self.sample("getAllSubscriptionStatusesResponse")
        }
        router.get("/inApps/v1/lookup/:id") { request, _ in
            try self.authorize(request)
            return try self.sample("lookupOrderIdResponse")
        }
        router.get("/inApps/v2/refund/lookup/:id") { request, _ in
            try self.authorize(request)
            return try self.sample("getRefundHistoryResponse")
        }
        router.post("/inApps/v1/notifications/history") { request, _ -> Response in
            try self.authorize(request)
            let body = try await request.body.collect(upTo: 1 << 16)
            let object = try JSONSerialization.jsonObject(with: Data(buffer: body)) as? [String: Any]
            guard object?["startDate"] is NSNumber, object?["endDate"] is NSNumber else {
                return Response(status: .badRequest)
            }
            return try self.sample("getNotificationHistoryResponse")
        }
        router.post("/inApps/v1/notifications/test") { request, _ in
            try self.authorize(request)
            return try self.sample("requestTestNotificationResponse")
        }
        for version in ["v1", "v2"] {
            router.put("/inApps/\(version)/transactions/consumption/:id") { request, context -> Response in
                try self.authorize(request)
                let body = try await request.body.collect(upTo: 1 << 16)
                let id = context.parameters.get("id") ?? ""
                self.consumption.withLock { $0["\(version)/\(id)"] = String(buffer: body) }
                return Response(status: .accepted)
            }
        }
        router.put("/inApps/v1/subscriptions/extend/:id") { request, _ in
            try self.authorize(request)
            return try self.sample("extendSubscriptionRenewalDateResponse")
        }
        return Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
    }

    /// Checks the JWT as Apple does (the same check the App Store simulator makes).
    private func authorize(_ request: Request) throws {
        let tokens = APITokenVerifier(keys: ["KEY123": publicKey], issuerId: "issuer-uuid", bundleId: bundleId)
        guard let header = request.headers[.authorization], header.hasPrefix("Bearer "),
            (try? tokens.verify(String(header.dropFirst(7)))) != nil
        else { throw refuse() }
    }

    private func refuse() -> HTTPError {
        refusedTokens.withLock { $0 += 1 }
        return HTTPError(.unauthorized)
    }

    private func sample(_ name: String, status: HTTPResponse.Status = .ok) throws -> Response {
        var response = json(String(decoding: try AppleFiles.data("models/\(name).json"), as: UTF8.self))
        response.status = status
        return response
    }

    private func json(_ text: String) -> Response {
        Response(
            status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(string: text)))
    }
}

@Suite("App Store Server API client")
struct AppStoreServerAPIClientTests {
    func withAPI(
        key: P256.Signing.PrivateKey = P256.Signing.PrivateKey(), clock: any TimerClock = SystemTimerClock(),
        _ body: @Sendable (AppStoreServerAPIClient, FakeServerAPI) async throws -> Void
    ) async throws {
        let fake = FakeServerAPI(publicKey: key.publicKey, bundleId: "com.example")
        try await fake.application().test(.live) { client in
            let port = try #require(client.port)
            var retry = AppStoreServerAPIClient.RetryPolicy()
            retry.initialBackoff = .milliseconds(10)
            retry.clock = clock
            let http = HTTPClient(eventLoopGroupProvider: .singleton)
            let api = AppStoreServerAPIClient(
                httpClient: http,
                credentials: .init(keyId: "KEY123", issuerId: "issuer-uuid", bundleId: "com.example", privateKey: key),
                environment: .sandbox, baseURL: "http://127.0.0.1:\(port)", retry: retry)
            do {
                try await body(api, fake)
            } catch {
                try await http.shutdown()
                throw error
            }
            try await http.shutdown()
        }
    }

    @Test("transaction info, history across pages, statuses, order lookup and refund history decode Apple's bodies")
    func reads() async throws {
        try await withAPI { api, fake in
            #expect(try await api.getTransactionInfo("123").signedTransactionInfo == "signed_transaction_info_value")
            #expect(
                try await api.allTransactions("123") == [
                    "signed_transaction_value", "signed_transaction_value2", "last_value",
                ])
            let statuses = try await api.getAllSubscriptionStatuses("123")
            #expect(statuses.data?.first?.lastTransactions?.map(\.status) == [.active, .revoked])
            let order = try await api.lookUpOrderId("W002182")
            #expect(order.status == .invalid)
            #expect(try await api.getRefundHistory("123").hasMore == true)
            #expect(fake.refusedTokens.withLock { $0 } == 0)
        }
    }

    @Test("notification history, test notification, consumption information and renewal extension")
    func writes() async throws {
        try await withAPI { api, fake in
            var request = NotificationHistoryRequest()
            request.startDate = Date(timeIntervalSince1970: 1_767_225_600)
            request.endDate = Date(timeIntervalSince1970: 1_767_312_000)
            let history = try await api.getNotificationHistory(request)
            #expect(
                history.notificationHistory?.first?.sendAttempts?.map(\.sendAttemptResult) == [.noResponse, .success])
            #expect(history.paginationToken == "57715481-805a-4283-8499-1c19b5d6b20a")
            #expect(try await api.requestTestNotification().testNotificationToken != nil)
            var consumption = ConsumptionRequest()
            consumption.customerConsented = true
            consumption.consumptionPercentage = 25_000
            consumption.rawDeliveryStatus = DeliveryStatus.delivered.rawValue
            consumption.sampleContentProvided = false
            try await api.sendConsumptionInformation("2000000001", consumption)
            let sent = try #require(fake.consumption.withLock { $0["v2/2000000001"] })
            #expect(sent.contains(#""consumptionPercentage":25000"#))
            #expect(sent.contains(#""deliveryStatus":"DELIVERED""#))
            var v1 = ConsumptionRequestV1()
            v1.customerConsented = true
            v1.consumptionStatus = 3
            v1.deliveryStatus = 0
            try await api.sendConsumptionInformationV1("2000000002", v1)
            let sentV1 = try #require(fake.consumption.withLock { $0["v1/2000000002"] })
            #expect(sentV1.contains(#""consumptionStatus":3"#))
            var extend = ExtendRenewalDateRequest()
            extend.extendByDays = 7
            extend.extendReasonCode = 1
            extend.requestIdentifier = UUID().uuidString
            let extended = try await api.extendSubscriptionRenewalDate("2312412", extend)
            #expect(extended.success == true)
            #expect(extended.effectiveDate == Date(timeIntervalSince1970: 1_698_148_900))
        }
    }

    @Test("a 429 is asked again after the backoff on the client's clock, and not before")
    func backoffOnClock() async throws {
        let clock = TestClock()
        try await withAPI(clock: clock) { api, fake in
            let call = Task { try await api.getTransactionInfo("flaky") }
            // Apple answered 429 once: the client waits its 10 ms on the clock the test moves.
            await clock.waitForSleepers(1)
            #expect(fake.flakyFailures.withLock { $0 } == 0)
            clock.advance(0.01)
            let info = try await call.value
            #expect(info.signedTransactionInfo != nil)
        }
    }

    @Test("Apple's error codes are mapped; 429 is retried; a token from the wrong key is refused")
    func errors() async throws {
        try await withAPI { api, _ in
            do {
                _ = try await api.getTransactionInfo("missing")
                Issue.record("a missing transaction was found")
            } catch let error as AppStoreAPIError {
                #expect(error.apiErrorCode == .transactionIdNotFound)
                #expect(!error.isRetryable)
            }
            #expect(try await api.getTransactionInfo("flaky").signedTransactionInfo != nil)
        }
        let fake = FakeServerAPI(publicKey: P256.Signing.PrivateKey().publicKey, bundleId: "com.example")
        try await fake.application().test(.live) { client in
            let http = HTTPClient(eventLoopGroupProvider: .singleton)
            let api = AppStoreServerAPIClient(
                httpClient: http,
                credentials: .init(
                    keyId: "KEY123", issuerId: "issuer-uuid", bundleId: "com.example",
                    privateKey: P256.Signing.PrivateKey()),
                environment: .sandbox, baseURL: "http://127.0.0.1:\(client.port ?? 0)")
            do {
                _ = try await api.getTransactionInfo("123")
                Issue.record("a forged token was accepted")
            } catch let error as AppStoreAPIError {
                guard case .api(let status, _, _, _) = error else {
                    Issue.record("\(error)")
                    return
                }
                #expect(status == 401)
            }
            try await http.shutdown()
        }
        #expect(fake.refusedTokens.withLock { $0 } == 1)
    }

    @Test("the token carries Apple's claims and a short expiry")
    func token() async throws {
        let key = P256.Signing.PrivateKey()
        let http = HTTPClient(eventLoopGroupProvider: .singleton)
        let api = AppStoreServerAPIClient(
            httpClient: http,
            credentials: .init(keyId: "KEY123", issuerId: "issuer-uuid", bundleId: "com.example", privateKey: key),
            environment: .production, now: { Date(timeIntervalSince1970: 1_767_225_600) })
        let token = try? api.makeToken()
        try await http.shutdown()
        // Apple's current hosts, as its libraries use since 2026.
        #expect(api.baseURL == "https://api.storekit.apple.com")
        #expect(AppStoreServerAPIClient.sandboxURL == "https://api.storekit-sandbox.apple.com")
        let parts = try #require(token).split(separator: ".").map(String.init)
        var claimsText = parts[1].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        claimsText += String(repeating: "=", count: (4 - claimsText.count % 4) % 4)
        let claimsData = try #require(Data(base64Encoded: claimsText))
        let claims = try #require(try JSONSerialization.jsonObject(with: claimsData) as? [String: Any])
        #expect(claims["aud"] as? String == "appstoreconnect-v1")
        #expect(claims["iat"] as? Int == 1_767_225_600)
        #expect(claims["exp"] as? Int == 1_767_225_900)
        #expect(claims["bid"] as? String == "com.example")
        #expect(claims["iss"] as? String == "issuer-uuid")
    }
}
