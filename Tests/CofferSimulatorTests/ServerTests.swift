import AsyncHTTPClient
import CofferAppStore
import CofferSimulator
import Crypto
import Foundation
import Hummingbird
import HummingbirdTesting
import Synchronization
import Testing

/// Apple's servers, locally: Coffer's own clients (from the Apple formats work) talk to the simulator over
/// real HTTP, and notifications reach a real HTTP endpoint with Apple's retries.
@Suite("App Store simulator servers", .timeLimit(.minutes(2)))
struct ServerTests {
    static let issuerId = "57246542-96fe-1a63-e053-0824d011072a"
    static let keyId = "SIMKEY0001"

    /// Runs `body` with the simulator's router served on a loopback port.
    func withServer(
        _ fixture: SimulatorFixture, key: P256.Signing.PrivateKey,
        _ body: @Sendable (_ baseURL: String, _ http: HTTPClient) async throws -> Void
    ) async throws {
        let tokens = APITokenVerifier(
            keys: [Self.keyId: key.publicKey], issuerId: Self.issuerId, bundleId: SimulatorFixture.bundleId)
        let router = SimulatorServer.router(store: fixture.store, tokens: tokens)
        let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
        try await app.test(.live) { client in
            let http = HTTPClient(eventLoopGroupProvider: .singleton)
            do {
                try await body("http://127.0.0.1:\(try #require(client.port))", http)
            } catch {
                try await http.shutdown()
                throw error
            }
            try await http.shutdown()
        }
    }

    func apiClient(_ baseURL: String, _ http: HTTPClient, key: P256.Signing.PrivateKey) -> AppStoreServerAPIClient {
        var retry = AppStoreServerAPIClient.RetryPolicy()
        retry.initialBackoff = .milliseconds(10)
        return AppStoreServerAPIClient(
            httpClient: http,
            credentials: .init(
                keyId: Self.keyId, issuerId: Self.issuerId, bundleId: SimulatorFixture.bundleId, privateKey: key),
            environment: .sandbox, baseURL: baseURL, retry: retry)
    }

    @Test("the App Store Server API client reads the simulated state; a foreign key is refused with 401")
    func serverAPI() async throws {
        let fixture = try SimulatorFixture()
        let key = P256.Signing.PrivateKey()
        var bought: [String] = []
        for _ in 0..<23 {
            bought += try await fixture.store.purchase(account: "alice", productId: "com.example.credits")
                .transactionIds
        }
        let ids = bought
        let subscription = try await fixture.store.purchase(account: "alice", productId: "com.example.pro.monthly")
        let original = try #require(subscription.transactionIds.first)
        try await fixture.store.refund(transactionId: ids[0])
        let orderId = try #require(await fixture.store.orderId(of: ids[1]))
        try await withServer(fixture, key: key) { baseURL, http in
            let api = apiClient(baseURL, http, key: key)
            let info = try await api.getTransactionInfo(ids[2])
            let decoded = try await fixture.verifier.verifyTransaction(try #require(info.signedTransactionInfo))
            #expect(decoded.transactionId == ids[2])

            let all = try await api.allTransactions(ids[2])
            #expect(all.count == 24)
            let statuses = try await api.getAllSubscriptionStatuses(original)
            #expect(statuses.data?.first?.lastTransactions?.first?.originalTransactionId == original)
            let order = try await api.lookUpOrderId(orderId)
            #expect(order.rawStatus == 0)
            #expect(order.signedTransactions?.count == 1)
            #expect(try await api.lookUpOrderId("MNOSUCHORD").rawStatus == 1)
            let refunds = try await api.getRefundHistory(ids[2])
            #expect(refunds.signedTransactions?.count == 1)

            var request = NotificationHistoryRequest()
            request.startDate = SimulatorFixture.start.addingTimeInterval(-60)
            request.endDate = SimulatorFixture.start.addingTimeInterval(86_400)
            let first = try await api.getNotificationHistory(request)
            #expect(first.notificationHistory?.count == 20)
            #expect(first.hasMore == true)
            let second = try await api.getNotificationHistory(request, paginationToken: first.paginationToken)
            #expect(second.notificationHistory?.count == 5)  // 23 one-time charges, 1 subscription, 1 refund

            // No notification URL yet: Apple's 4040007. With one (a delivery reading the feed), a token.
            do {
                _ = try await api.requestTestNotification()
                Issue.record("a test notification was sent with no URL to send it to")
            } catch let error as AppStoreAPIError {
                guard case .api(404, 4_040_007?, _, _) = error else {
                    Issue.record("refused with \(error)")
                    return
                }
            }
            _ = await fixture.store.notificationFeed()
            let test = try await api.requestTestNotification()
            #expect(test.testNotificationToken != nil)
            var consumption = ConsumptionRequest()
            consumption.customerConsented = true
            consumption.rawDeliveryStatus = DeliveryStatus.delivered.rawValue
            consumption.sampleContentProvided = false
            consumption.consumptionPercentage = 40_000
            try await api.sendConsumptionInformation(ids[3], consumption)
            let kept = try #require(await fixture.store.consumption(for: ids[3]))
            #expect(kept.version == 2 && !kept.requested)
            #expect(kept.information == consumption)
            var extend = ExtendRenewalDateRequest()
            extend.extendByDays = 10
            extend.extendReasonCode = 1
            extend.requestIdentifier = UUID().uuidString
            let extended = try await api.extendSubscriptionRenewalDate(original, extend)
            #expect(extended.success == true)
            #expect(extended.effectiveDate == SimulatorFixture.start.addingTimeInterval(40 * 86_400))

            do {
                _ = try await api.getTransactionInfo("1")
                Issue.record("an unknown transaction was found")
            } catch let error as AppStoreAPIError {
                #expect(error.apiErrorCode == .transactionIdNotFound)
            }
            do {
                _ = try await apiClient(baseURL, http, key: P256.Signing.PrivateKey()).getTransactionInfo(ids[2])
                Issue.record("a foreign key was accepted")
            } catch let error as AppStoreAPIError {
                guard case .api(let status, _, _, _) = error else {
                    Issue.record("unexpected \(error)")
                    return
                }
                #expect(status == 401)
            }
        }
    }

    @Test("verifyReceipt: a sandbox receipt at production gets 21007, then the sandbox answers")
    func verifyReceipt() async throws {
        let fixture = try SimulatorFixture { $0.sharedSecret = "s3cret" }
        try await fixture.store.purchase(account: "bob", productId: "com.example.pro.monthly")
        try await fixture.store.purchase(account: "bob", productId: "com.example.credits", quantity: 2)
        let receipt = await fixture.store.appReceipt(account: "bob")
        try await withServer(fixture, key: P256.Signing.PrivateKey()) { baseURL, http in
            var configuration = VerifyReceiptClient.Configuration(sharedSecret: "s3cret")
            configuration.productionURL = baseURL + "/verifyReceipt/production"
            configuration.sandboxURL = baseURL + "/verifyReceipt/sandbox"
            let response = try await VerifyReceiptClient(httpClient: http, configuration: configuration)
                .verify(receiptData: receipt)
            #expect(response.status == 0)
            #expect(response.environment == "Sandbox")
            #expect(response.receipt?.inApp?.map(\.productId) == ["com.example.pro.monthly", "com.example.credits"])
            #expect(response.receipt?.inApp?.last?.quantity == 2)
            #expect(response.latestReceiptInfo?.count == 1)

            configuration.sharedSecret = "wrong"
            do {
                _ = try await VerifyReceiptClient(httpClient: http, configuration: configuration)
                    .verify(receiptData: receipt)
                Issue.record("a wrong shared secret was accepted")
            } catch let error as VerifyReceiptError {
                guard case .rejected(let status) = error else {
                    Issue.record("unexpected \(error)")
                    return
                }
                #expect(status.code == 21004)
            }
        }
        let production = try SimulatorFixture { $0.environment = .production }
        let productionReceipt = await production.store.appReceipt(account: "carol")
        try await withServer(production, key: P256.Signing.PrivateKey()) { baseURL, http in
            var request = HTTPClientRequest(url: baseURL + "/verifyReceipt/sandbox")
            request.method = .POST
            request.body = .bytes(
                ByteBuffer(data: try JSONSerialization.data(withJSONObject: ["receipt-data": productionReceipt])))
            let answer = try await http.execute(request, timeout: .seconds(5))
            let body = try await answer.body.collect(upTo: 1 << 16)
            let object = try JSONSerialization.jsonObject(with: Data(buffer: body)) as? [String: Any]
            #expect(object?["status"] as? Int == 21008)
        }
    }

    @Test("with a receipt authority, app receipts are PKCS#7 by Apple's receipt policy and verifyReceipt reads them")
    func signedReceipts() async throws {
        let plain = try SimulatorFixture()
        let authority = try SimulatorReceiptAuthority(
            validFrom: SimulatorFixture.start.addingTimeInterval(-86_400),
            validUntil: SimulatorFixture.start.addingTimeInterval(365 * 86_400))
        let store = SimulatedAppStore(
            catalog: await plain.store.catalog, configuration: await plain.store.configuration,
            signer: try plain.pki.signer(), clock: plain.clock, receiptAuthority: authority)
        let bought = try await store.purchase(account: "bob", productId: "com.example.credits", quantity: 2)
        let receipt = await store.appReceipt(account: "bob")
        let read = try await AppReceiptReader(trustedRoots: [authority.rootDER()], now: { plain.clock.now() })
            .read(base64: receipt)
        #expect(read.receiptType == "ProductionSandbox")
        #expect(read.bundleId == SimulatorFixture.bundleId)
        #expect(read.inAppPurchases.compactMap(\.transactionId) == bought.transactionIds)
        #expect(read.inAppPurchases.first?.quantity == 2)
        let body = try JSONSerialization.data(withJSONObject: ["receipt-data": receipt])
        let answer = try #require(
            try JSONSerialization.jsonObject(with: await store.verifyReceipt(body: body, host: .sandbox))
                as? [String: Any])
        #expect(answer["status"] as? Int == 0)
        let inApp = (answer["receipt"] as? [String: Any])?["in_app"] as? [[String: Any]]
        #expect(inApp?.compactMap { $0["transaction_id"] as? String } == bought.transactionIds)
        let production =
            try JSONSerialization.jsonObject(
                with: await store.verifyReceipt(body: body, host: .production)) as? [String: Any]
        #expect(production?["status"] as? Int == 21007)
        // A receipt signed by another authority is not this simulator's.
        let stranger = try SimulatorReceiptAuthority(
            validFrom: SimulatorFixture.start.addingTimeInterval(-86_400),
            validUntil: SimulatorFixture.start.addingTimeInterval(365 * 86_400))
        let forged = try await store.signedAppReceipt(account: "bob", authority: stranger)
        let refused =
            try JSONSerialization.jsonObject(
                with: await store.verifyReceipt(
                    body: try JSONSerialization.data(withJSONObject: ["receipt-data": forged]), host: .sandbox))
            as? [String: Any]
        #expect(refused?["status"] as? Int == 21002)
    }

    @Test("a notification endpoint down for two attempts then receives every notification once")
    func deliveryRetries() async throws {
        let fixture = try SimulatorFixture()
        let received = Mutex<[String: Int]>([:])
        let verifier = fixture.verifier
        let router = Router()
        router.post("notifications") { request, _ -> Response in
            let body = try await request.body.collect(upTo: 1 << 20)
            let object = try JSONSerialization.jsonObject(with: Data(buffer: body)) as? [String: String]
            let notification = try await verifier.verifyNotification(object?["signedPayload"] ?? "")
            let uuid = notification.payload.notificationUUID ?? ""
            let seen = received.withLock { counts in
                counts[uuid, default: 0] += 1
                return counts[uuid] ?? 0
            }
            return Response(status: seen <= 2 ? .serviceUnavailable : .ok)
        }
        let receiver = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
        try await receiver.test(.live) { client in
            let http = HTTPClient(eventLoopGroupProvider: .singleton)
            // One simulated hour passes in a millisecond: 1 + 12 hours of retries take 13 ms.
            let delivery = NotificationDelivery(
                store: fixture.store, url: "http://127.0.0.1:\(try #require(client.port))/notifications",
                httpClient: http, timeScale: 3_600_000)
            let running = Task { await delivery.run() }
            try await Task.sleep(for: .milliseconds(50))  // the feed is open
            try await fixture.store.purchase(account: "dana", productId: "com.example.credits", quantity: 3)
            let subscribed = try await fixture.store.purchase(account: "dana", productId: "com.example.pro.monthly")
            try await fixture.store.refund(transactionId: try #require(subscribed.transactionIds.first))
            let deadline = ContinuousClock.now + .seconds(20)
            while ContinuousClock.now < deadline {
                let history = await fixture.store.history(account: "dana")
                if history.notifications.count == 3, history.notifications.allSatisfy({ $0.attempts.last == "SUCCESS" })
                {
                    break
                }
                try await Task.sleep(for: .milliseconds(20))
            }
            running.cancel()
            try await http.shutdown()
        }
        let history = await fixture.store.history(account: "dana")
        #expect(history.notifications.map(\.type) == ["ONE_TIME_CHARGE", "SUBSCRIBED/INITIAL_BUY", "REFUND"])
        for notification in history.notifications {
            #expect(
                notification.attempts == [
                    "UNSUCCESSFUL_HTTP_RESPONSE_CODE", "UNSUCCESSFUL_HTTP_RESPONSE_CODE", "SUCCESS",
                ])
        }
        // Each notification was accepted once (its third request); none twice after success.
        #expect(received.withLock { $0.values.sorted() } == [3, 3, 3])
        var failures = NotificationHistoryRequest()
        failures.startDate = SimulatorFixture.start.addingTimeInterval(-60)
        failures.endDate = SimulatorFixture.start.addingTimeInterval(86_400)
        failures.onlyFailures = true
        // Failures are what has not reached the server yet: each did in the end.
        #expect(
            try await fixture.store.notificationHistory(failures, paginationToken: nil).notificationHistory?.isEmpty
                == true)
    }
}
