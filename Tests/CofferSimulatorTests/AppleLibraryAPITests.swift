import CofferAppStore
import CofferSimulator
import CofferTestSupport
import Crypto
import Foundation
import Testing

/// Apple's own Python library (app-store-server-library, installed from PyPI by the test command) calls the
/// simulator's App Store Server API with its own tokens and reads every answer with its own models: a developer's
/// backend built on it can be tested against the simulator as against Apple.
@Suite("Apple's Python library calls the simulator's App Store Server API", .timeLimit(.minutes(3)))
struct AppleLibraryAPITests {
    /// One call of the library's `AppStoreServerAPIClient`: its method, arguments as JSON, and which arguments are
    /// the library's models or enums.
    struct Call {
        var method: String
        var args: [Any] = []
        var models: [Int: String] = [:]
        var enums: [Int: String] = [:]

        var json: [String: Any] {
            [
                "method": method, "args": args,
                "models": Dictionary(uniqueKeysWithValues: models.map { (String($0.key), $0.value) }),
                "enums": Dictionary(uniqueKeysWithValues: enums.map { (String($0.key), $0.value) }),
            ]
        }
    }

    /// What the library made of one call: the decoded answer, or its APIException.
    struct Outcome {
        var answer: [String: Any]?
        var error: (status: Int, code: Int?)?
        var answered: Bool

        init(_ json: [String: Any]) {
            answered = json.keys.contains("answer")
            answer = json["answer"] as? [String: Any]
            error = (json["error"] as? [String: Any]).map { ($0["status"] as? Int ?? 0, $0["code"] as? Int) }
        }
    }

    @Test("each endpoint answers the library's calls with Apple's paths, bodies, statuses and error codes")
    func endpoints() async throws {
        guard let python = AppleLibraryTests.pythonOrSay("Apple's Python library API check") else { return }
        let fixture = try SimulatorFixture()
        let store = fixture.store
        let credits = try #require(
            try await store.purchase(account: "alice", productId: "com.example.credits").transactionIds.first)
        let monthly = try #require(
            try await store.purchase(account: "alice", productId: "com.example.pro.monthly").transactionIds.first)
        try await store.refund(transactionId: credits, percentage: nil)
        let appTransactionId = try #require(
            try await fixture.verifier.verifyAppTransaction(try await store.signedAppTransaction(account: "alice"))
                .appTransactionId)
        let test = try await store.sendTestNotification()
        _ = await store.notificationFeed()  // a notification URL: Request a Test Notification answers
        let token = UUID()
        let start = Int64(SimulatorFixture.start.timeIntervalSince1970 * 1_000)
        let calls: [Call] = [
            Call(method: "get_transaction_info", args: [credits]),
            Call(method: "get_transaction_info", args: ["1"]),
            Call(
                method: "get_transaction_history", args: [credits, NSNull(), [String: Any](), "v1"],
                models: [2: "TransactionHistoryRequest"], enums: [3: "GetTransactionHistoryVersion"]),
            Call(
                method: "get_transaction_history", args: [appTransactionId, NSNull(), [String: Any](), "v2"],
                models: [2: "TransactionHistoryRequest"], enums: [3: "GetTransactionHistoryVersion"]),
            Call(method: "get_all_subscription_statuses", args: [monthly]),
            Call(method: "get_refund_history", args: [credits, NSNull()]),
            Call(method: "get_app_transaction_info", args: [credits]),
            Call(method: "get_app_transaction_info", args: [appTransactionId]),
            Call(method: "get_app_transaction_info", args: ["1"]),
            Call(method: "get_test_notification_status", args: [test]),
            Call(method: "get_test_notification_status", args: ["nothing"]),
            Call(
                method: "set_app_account_token", args: [monthly, ["appAccountToken": token.uuidString]],
                models: [1: "UpdateAppAccountTokenRequest"]),
            Call(
                method: "set_app_account_token", args: [monthly, ["appAccountToken": "not a UUID"]],
                models: [1: "UpdateAppAccountTokenRequest"]),
            Call(method: "finish_transaction", args: [monthly]),
            Call(method: "finish_transaction", args: ["1"]),
            Call(method: "look_up_order_id", args: ["NOORDER"]),
            Call(
                method: "get_notification_history",
                args: [NSNull(), ["startDate": start - 60_000, "endDate": start + 86_400_000]],
                models: [1: "NotificationHistoryRequest"]),
            Call(
                method: "extend_subscription_renewal_date",
                args: [monthly, ["extendByDays": 7, "extendReasonCode": 1, "requestIdentifier": UUID().uuidString]],
                models: [1: "ExtendRenewalDateRequest"]),
            Call(method: "request_test_notification"),
            // Version 2's filters, as the library writes them (its booleans as Python prints them: `True`).
            Call(
                method: "get_transaction_history", args: [credits, NSNull(), ["productTypes": ["CONSUMABLE"]], "v2"],
                models: [2: "TransactionHistoryRequest"], enums: [3: "GetTransactionHistoryVersion"]),
            Call(
                method: "get_transaction_history", args: [credits, NSNull(), ["revoked": false], "v2"],
                models: [2: "TransactionHistoryRequest"], enums: [3: "GetTransactionHistoryVersion"]),
            Call(
                method: "get_transaction_history",
                args: [credits, NSNull(), ["sort": "DESCENDING", "productIds": ["com.example.credits"]], "v2"],
                models: [2: "TransactionHistoryRequest"], enums: [3: "GetTransactionHistoryVersion"]),
            Call(method: "get_all_subscription_statuses", args: [monthly, [1]], enums: [1: "Status"]),
            Call(method: "get_all_subscription_statuses", args: [monthly, [2, 5]], enums: [1: "Status"]),
            Call(
                method: "get_transaction_history",
                args: [credits, NSNull(), ["startDate": start + 1_000, "endDate": start], "v2"],
                models: [2: "TransactionHistoryRequest"], enums: [3: "GetTransactionHistoryVersion"]),
        ]
        let key = P256.Signing.PrivateKey()
        let (methods, plan) = (calls.map(\.method), try Plan(calls))
        let lookup = try Plan([Call(method: "get_transaction_info", args: [credits])])
        try await ServerTests().withServer(fixture, key: key) { baseURL, _ in
            let results = try await Self.outcomes(of: plan, python: python, baseURL: baseURL, key: key)
            func signed(_ index: Int, _ field: String) throws -> String {
                try #require(results[index].answer?[field] as? String, "\(methods[index]) answered no \(field)")
            }
            #expect(
                try await fixture.verifier.verifyTransaction(try signed(0, "signedTransactionInfo")).transactionId
                    == credits)
            results.expectRefused(1, 404, 4_040_010)
            for index in [2, 3] {
                #expect((results[index].answer?["signedTransactions"] as? [String])?.count == 2, "history \(index)")
            }
            let groups = try #require(results[4].answer?["data"] as? [[String: Any]])
            #expect(groups.count == 1)
            #expect(((results[5].answer?["signedTransactions"]) as? [String])?.count == 1)
            for index in [6, 7] {
                let app = try await fixture.verifier.verifyAppTransaction(try signed(index, "signedAppTransactionInfo"))
                #expect(app.appTransactionId == appTransactionId)
            }
            results.expectRefused(8, 404, 4_040_019)
            #expect(try !signed(9, "signedPayload").isEmpty)
            results.expectRefused(10, 404, 4_040_008)
            results.expectTaken(11)
            results.expectRefused(12, 400, 4_000_183)
            results.expectTaken(13)
            results.expectRefused(14, 404, 4_040_010)
            #expect(results[15].answer?["status"] as? Int == 1)
            #expect((results[16].answer?["notificationHistory"] as? [Any])?.isEmpty == false)
            #expect(results[17].answer?["success"] as? Bool == true)
            #expect(try !signed(18, "testNotificationToken").isEmpty)
            func history(_ index: Int) async throws -> [String] {
                var found: [String] = []
                for jws in results[index].answer?["signedTransactions"] as? [String] ?? [] {
                    found.append(try #require(try await fixture.verifier.verifyTransaction(jws).transactionId))
                }
                return found
            }
            #expect(try await history(19) == [credits], "only the consumable")
            #expect(try await history(20) == [monthly], "only what was not refunded")
            #expect(try await history(21) == [credits], "only the product named")
            #expect((results[22].answer?["data"] as? [Any])?.count == 1, "active subscriptions")
            #expect((results[23].answer?["data"] as? [Any])?.isEmpty == true, "expired or revoked: none")
            results.expectRefused(24, 400, 4_000_013)
            // The new token stands on the subscription, and the finished transaction is no longer replayed.
            let transactions = await store.deviceTransactions(account: "alice")
            #expect(transactions.first { $0.id == monthly }?.appAccountToken == token)
            #expect(await store.unfinishedTransactions(account: "alice").contains { $0.id == monthly } == false)

            // A key the simulator does not know: every call is refused 401, as Apple refuses it.
            let stranger = try await Self.outcomes(
                of: lookup, python: python, baseURL: baseURL, key: P256.Signing.PrivateKey())
            #expect(stranger.first?.error?.status == 401)
        }
    }

    /// Runs Apple's library over `calls` (the JSON of ``Call``s) against the simulator at `baseURL`, signing with
    /// `key`; returns what the script printed.
    static func run(python: String, baseURL: String, key: P256.Signing.PrivateKey, calls: Data) throws -> Data {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "coffer-applelib-api-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let spec: [String: Any] = [
            "baseURL": baseURL, "key": key.pemRepresentation, "keyId": ServerTests.keyId,
            "issuerId": ServerTests.issuerId, "bundleId": SimulatorFixture.bundleId, "environment": "Sandbox",
            "calls": try JSONSerialization.jsonObject(with: calls),
        ]
        let file = folder.appendingPathComponent("spec.json")
        try JSONSerialization.data(withJSONObject: spec).write(to: file)
        return try AppleLibraryTests.run(
            python: python, script: AppleLibraryTests.script("api.py"), argument: file.path)
    }

    /// The calls of one run as the script reads them, and how many.
    struct Plan: Sendable {
        let json: Data
        let count: Int

        init(_ calls: [Call]) throws {
            json = try JSONSerialization.data(withJSONObject: calls.map(\.json))
            count = calls.count
        }
    }

    /// Runs `plan` through Apple's library against the simulator at `baseURL`: one outcome per call.
    static func outcomes(of plan: Plan, python: String, baseURL: String, key: P256.Signing.PrivateKey) async throws
        -> [Outcome]
    {
        let results = try outcomes(
            try await blockingWork { try run(python: python, baseURL: baseURL, key: key, calls: plan.json) })
        try #require(results.count == plan.count)
        return results
    }

    /// The script's output, one outcome per call.
    static func outcomes(_ printed: Data) throws -> [Outcome] {
        try #require(JSONSerialization.jsonObject(with: printed) as? [[String: Any]]).map(Outcome.init)
    }
}

extension [AppleLibraryAPITests.Outcome] {
    /// Expects the call at `index` answered with no error.
    func expectTaken(_ index: Int, sourceLocation: SourceLocation = #_sourceLocation) {
        let error = self[index].error.map { "\($0)" } ?? ""
        #expect(
            self[index].answered && error.isEmpty, "call \(index) was refused: \(error)", sourceLocation: sourceLocation
        )
    }

    /// Expects the call at `index` refused with Apple's `status` and `code`.
    func expectRefused(_ index: Int, _ status: Int, _ code: Int, sourceLocation: SourceLocation = #_sourceLocation) {
        let error = self[index].error
        #expect(
            error?.status == status && error?.code == code,
            "call \(index) answered \(error.map { "\($0)" } ?? "no error")", sourceLocation: sourceLocation)
    }
}
