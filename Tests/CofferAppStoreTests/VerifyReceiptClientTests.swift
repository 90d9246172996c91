import AsyncHTTPClient
import CofferAppStore
import CofferTestSupport
import Foundation
import Hummingbird
import HummingbirdTesting
import Synchronization
import Testing

/// A local server that behaves like Apple's two verifyReceipt hosts. The receipt-data picks the behaviour.
final class FakeVerifyReceipt: Sendable {
    /// What the server saw of one request.
    struct Seen: Sendable {
        var path: String
        var password: String?
        var excludeOldTransactions: Bool?
    }

    /// Every request the server saw.
    let requests = Mutex<[Seen]>([])
    /// Statuses still to answer for "flaky" receipts, front first.
    let flaky = Mutex<[Int]>([])

    func application() -> some ApplicationProtocol {
        let router = Router()
        for host in ["production", "sandbox"] {
            router.post("/\(host)/verifyReceipt") { request, context -> Response in
                let buffer = try await request.body.collect(upTo: 1 << 20)
                let body = (try? JSONSerialization.jsonObject(with: Data(buffer: buffer))) as? [String: Any] ?? [:]
                let seen = Seen(
                    path: host, password: body["password"] as? String,
                    excludeOldTransactions: body["exclude-old-transactions"] as? Bool)
                self.requests.withLock { $0.append(seen) }
                let receipt = body["receipt-data"] as? String ?? ""
                return try await self.answer(host: host, receipt: receipt)
            }
        }
        return Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
    }

    private func answer(host: String, receipt: String) async throws -> Response {
        switch receipt {
        case "sandbox-receipt" where host == "production": return json(#"{"status": 21007}"#)
        case "sandbox-receipt", "good":
            return json(
                #"""
                {"status": 0, "environment": "\#(host == "production" ? "Production" : "Sandbox")",
                 "receipt": {"bundle_id": "com.example", "in_app": [{"transaction_id": "1000000000000001",
                   "original_transaction_id": "1000000000000001", "product_id": "com.example.credits", "quantity": "3",
                   "purchase_date_ms": "1767225600000", "is_trial_period": "false"}]}}
                """#)
        case "expired-subscription": return json(#"{"status": "21006", "receipt": {"bundle_id": "com.example"}}"#)
        case "hang":
            try await Task.sleep(for: .seconds(3))
            return json(#"{"status": 0}"#)
        case "flaky":
            let next = flaky.withLock { $0.isEmpty ? 0 : $0.removeFirst() }
            return json(next == 0 ? #"{"status": 0}"# : #"{"status": \#(next), "is-retryable": true}"#)
        case "ping-pong": return json(host == "production" ? #"{"status": 21007}"# : #"{"status": 21008}"#)
        case "not-json": return json("<html>")
        default:
            if receipt.hasPrefix("status-"), let code = Int(receipt.dropFirst(7)) {
                return json(#"{"status": \#(code)}"#)
            }
            return json(#"{"status": 21002}"#)
        }
    }

    private func json(_ text: String) -> Response {
        Response(
            status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(string: text)))
    }
}

@Suite("verifyReceipt client")
struct VerifyReceiptClientTests {
    func withClient(
        callTimeout: Duration = .seconds(10),
        deadline: Duration = .seconds(30),
        excludeOldTransactions: Bool = false,
        _ body: @Sendable (VerifyReceiptClient, FakeVerifyReceipt) async throws -> Void
    ) async throws {
        let fake = FakeVerifyReceipt()
        try await fake.application().test(.live) { client in
            let port = try #require(client.port)
            var configuration = VerifyReceiptClient.Configuration(sharedSecret: "s3cret")
            configuration.productionURL = "http://127.0.0.1:\(port)/production/verifyReceipt"
            configuration.sandboxURL = "http://127.0.0.1:\(port)/sandbox/verifyReceipt"
            configuration.initialBackoff = .milliseconds(10)
            configuration.callTimeout = callTimeout
            configuration.deadline = deadline
            configuration.excludeOldTransactions = excludeOldTransactions
            let http = HTTPClient(eventLoopGroupProvider: .singleton)
            do {
                try await body(VerifyReceiptClient(httpClient: http, configuration: configuration), fake)
            } catch {
                try await http.shutdown()
                throw error
            }
            try await http.shutdown()
        }
    }

    @Test("production first; the shared secret and exclude-old-transactions are sent; string numbers decode")
    func production() async throws {
        try await withClient(excludeOldTransactions: true) { client, fake in
            let response = try await client.verify(receiptData: "good")
            #expect(response.status == 0)
            #expect(response.environment == "Production")
            let purchase = try #require(response.receipt?.inApp?.first)
            #expect(purchase.quantity == 3)
            #expect(purchase.purchaseDate == Date(timeIntervalSince1970: 1_767_225_600))
            #expect(purchase.isTrialPeriod == false)
            let requests = fake.requests.withLock { $0 }
            #expect(requests.map(\.path) == ["production"])
            #expect(requests.first?.password == "s3cret")
            #expect(requests.first?.excludeOldTransactions == true)
        }
    }

    @Test("21007 from production falls back to the sandbox")
    func sandboxFallback() async throws {
        try await withClient { client, fake in
            let response = try await client.verify(receiptData: "sandbox-receipt")
            #expect(response.environment == "Sandbox")
            #expect(fake.requests.withLock { $0.map(\.path) } == ["production", "sandbox"])
        }
    }

    @Test("hosts that send the receipt to each other are asked once each, then the receipt is refused")
    func pingPong() async throws {
        try await withClient { client, fake in
            do {
                _ = try await client.verify(receiptData: "ping-pong")
                Issue.record("a ping-pong receipt was accepted")
            } catch let error as VerifyReceiptError {
                guard case .rejected(let status) = error else {
                    Issue.record("\(error)")
                    return
                }
                #expect(status.code == 21008)
            }
            #expect(fake.requests.withLock { $0.map(\.path) } == ["production", "sandbox"])
        }
    }

    @Test("21006 is a valid receipt; every documented status is mapped with whether it is retryable")
    func statuses() async throws {
        try await withClient { client, _ in
            #expect(try await client.verify(receiptData: "expired-subscription").status == 21006)
            for code in [21000, 21001, 21003, 21004, 21008, 21010] {
                do {
                    _ = try await client.verify(receiptData: "status-\(code)")
                    Issue.record("status \(code) accepted")
                } catch let error as VerifyReceiptError {
                    guard case .rejected(let status) = error else {
                        Issue.record("\(error)")
                        continue
                    }
                    #expect(status.code == code)
                    #expect(!status.isRetryable)
                }
            }
        }
        let retryable = [21002, 21005, 21009] + Array(21100...21199)
        for code in [0, 21006] + retryable + [21000, 21001, 21003, 21004, 21007, 21008, 21010] {
            let status = VerifyReceiptStatus(code: code)
            #expect(!status.meaning.hasPrefix("unknown"), "\(code)")
            #expect(status.isRetryable == retryable.contains(code), "\(code)")
        }
        #expect(VerifyReceiptStatus(code: 12345).meaning.hasPrefix("unknown"))
    }

    @Test("retryable statuses are retried with back-off, then give up")
    func retries() async throws {
        try await withClient { client, fake in
            fake.flaky.withLock { $0 = [21005, 21009] }
            #expect(try await client.verify(receiptData: "flaky").status == 0)
            #expect(fake.requests.withLock { $0.count } == 3)
            fake.flaky.withLock { $0 = [21005, 21005, 21005, 21005] }
            do {
                _ = try await client.verify(receiptData: "flaky")
                Issue.record("a failing receipt was accepted")
            } catch let error as VerifyReceiptError {
                guard case .exhausted(let status) = error else {
                    Issue.record("\(error)")
                    return
                }
                #expect(status.code == 21005)
                #expect(error.isRetryable)
            }
        }
    }

    @Test("a hanging host times out per call and within the overall deadline", .tags(.timing))
    func hang() async throws {
        try await withClient(callTimeout: .milliseconds(300), deadline: .seconds(2)) { client, _ in
            let started = ContinuousClock.now
            do {
                _ = try await client.verify(receiptData: "hang")
                Issue.record("a hanging host answered")
            } catch let error as VerifyReceiptError {
                guard case .timedOut = error else {
                    Issue.record("\(error)")
                    return
                }
            }
            // The 2-second deadline, plus slack for a loaded 2-core machine running every suite at once
            // (a hang without the deadline would never end).
            #expect(ContinuousClock.now - started < .seconds(6))
        }
    }

    @Test("an unreadable answer and an unreachable host are reported, never taken as valid")
    func failures() async throws {
        try await withClient { client, _ in
            do {
                _ = try await client.verify(receiptData: "not-json")
                Issue.record("HTML accepted")
            } catch let error as VerifyReceiptError {
                guard case .malformed = error else {
                    Issue.record("\(error)")
                    return
                }
            }
        }
        var configuration = VerifyReceiptClient.Configuration()
        configuration.productionURL = "http://127.0.0.1:9/verifyReceipt"
        configuration.callTimeout = .seconds(2)
        let http = HTTPClient(eventLoopGroupProvider: .singleton)
        do {
            _ = try await VerifyReceiptClient(httpClient: http, configuration: configuration).verify(receiptData: "x")
            Issue.record("an unreachable host answered")
        } catch {
            #expect(error.isRetryable)
        }
        try await http.shutdown()
    }
}
