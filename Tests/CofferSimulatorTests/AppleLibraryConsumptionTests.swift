import AsyncHTTPClient
import CofferAppStore
import CofferSimulator
import CofferTestSupport
import Crypto
import Foundation
import Testing

/// Apple's Python library sends consumption information (both versions) and looks orders up; the simulator checks
/// each field as Apple does, records what it took, and names every transaction's order id.
@Suite("Apple's Python library: consumption information and order ids", .timeLimit(.minutes(3)))
struct AppleLibraryConsumptionTests {
    typealias Call = AppleLibraryAPITests.Call

    static func v2(_ id: String, _ body: [String: Any]) -> Call {
        Call(method: "send_consumption_information", args: [id, body], models: [1: "ConsumptionRequest"])
    }

    static func v1(_ id: String, _ body: [String: Any]) -> Call {
        Call(method: "send_consumption_data", args: [id, body], models: [1: "ConsumptionRequestV1"])
    }

    static var delivered: [String: Any] {
        [
            "customerConsented": true, "sampleContentProvided": false, "deliveryStatus": "DELIVERED",
            "consumptionPercentage": 25_000, "refundPreference": "GRANT_PRORATED",
        ]
    }

    static var coded: [String: Any] {
        [
            "customerConsented": true, "consumptionStatus": 2, "platform": 1, "sampleContentProvided": false,
            "deliveryStatus": 0, "appAccountToken": "", "accountTenure": 3, "playTime": 0, "lifetimeDollarsRefunded": 0,
            "lifetimeDollarsPurchased": 1, "userStatus": 1, "refundPreference": 2,
        ]
    }

    static func with(_ body: [String: Any], _ changes: [String: Any]) -> [String: Any] {
        body.merging(changes) { _, new in new }
    }

    @Test("Send Consumption Information v2 and v1: taken and recorded, or refused with Apple's code")
    func consumption() async throws {
        guard let python = AppleLibraryTests.pythonOrSay("Apple's Python library consumption check") else { return }
        let fixture = try SimulatorFixture()
        let store = fixture.store
        let asked = try #require(
            try await store.purchase(account: "alice", productId: "com.example.credits").transactionIds.first)
        let unasked = try #require(
            try await store.purchase(account: "alice", productId: "com.example.credits").transactionIds.first)
        let monthly = try #require(
            try await store.purchase(account: "alice", productId: "com.example.pro.monthly").transactionIds.first)
        try await store.requestRefund(transactionId: asked)
        let appTransactionId = try #require(
            try await fixture.verifier.verifyAppTransaction(try await store.signedAppTransaction(account: "alice"))
                .appTransactionId)
        let calls: [Call] = [
            Self.v2(asked, Self.delivered),
            Self.v2(asked, Self.with(Self.delivered, ["customerConsented": false])),
            Self.v2(monthly, Self.with(Self.delivered, ["refundPreference": "DECLINE"])),
            Self.v2(asked, Self.with(Self.delivered, ["deliveryStatus": "UNDELIVERED_OTHER"])),
            Self.v2(asked, Self.with(Self.delivered, ["consumptionPercentage": 100_001])),
            Self.v2(asked, Self.with(Self.delivered, ["consumptionPercentage": 0])),
            Self.v2(appTransactionId, Self.delivered),
            Self.v2("1", Self.delivered),
            Self.v1(unasked, Self.coded),
            Self.v1(unasked, Self.with(Self.coded, ["consumptionStatus": 9])),
            Self.v1(unasked, Self.with(Self.coded, ["appAccountToken": "not a UUID"])),
            Self.v1(unasked, Self.with(Self.coded, ["customerConsented": false])),
            Call(method: "look_up_order_id", args: [try #require(await store.orderId(of: monthly))]),
        ]
        let key = P256.Signing.PrivateKey()
        let plan = try AppleLibraryAPITests.Plan(calls)
        try await ServerTests().withServer(fixture, key: key) { baseURL, http in
            let results = try await AppleLibraryAPITests.outcomes(
                of: plan, python: python, baseURL: baseURL, key: key)
            results.expectTaken(0)
            results.expectRefused(1, 400, 4_000_035)
            results.expectRefused(2, 400, 4_000_209)  // a percentage for an auto-renewable subscription
            results.expectRefused(3, 400, 4_000_000)  // undelivered, yet a share consumed
            results.expectRefused(4, 400, 4_000_000)  // beyond 100%
            results.expectRefused(5, 400, 4_000_000)  // a prorated refund wanted with nothing consumed
            results.expectRefused(6, 400, 4_000_048)
            results.expectRefused(7, 404, 4_040_010)
            results.expectTaken(8)
            results.expectRefused(9, 400, 4_000_034)
            results.expectRefused(10, 400, 4_000_033)
            results.expectRefused(11, 400, 4_000_035)
            #expect(results[12].answer?["status"] as? Int == 0)
            let found = try #require((results[12].answer?["signedTransactions"] as? [String])?.first)
            #expect(try await fixture.verifier.verifyTransaction(found).transactionId == monthly)

            // What was taken is recorded, refusals change nothing, and the controls' history shows it.
            let first = try #require(await store.consumption(for: asked))
            #expect(first.version == 2 && first.requested)
            #expect(first.information?.consumptionPercentage == 25_000)
            #expect(first.information?.refundPreference == .grantProrated)
            let second = try #require(await store.consumption(for: unasked))
            #expect(second.version == 1 && !second.requested)
            #expect(second.informationV1?.consumptionStatus == 2)
            #expect(await store.consumption(for: monthly) == nil)

            let response = try await http.execute(
                HTTPClientRequest(url: baseURL + "/simulator/history?account=alice"), timeout: .seconds(10))
            let history = try AppleJSON.decode(
                SimulatorHistory.self, from: Data(buffer: try await response.body.collect(upTo: 1 << 20)))
            for item in history.transactions {
                #expect(item.orderId == (await store.orderId(of: item.transactionId)), "the order of each")
            }
            #expect(history.transactions.first { $0.transactionId == asked }?.consumption == first)
        }
    }

    @Test("a purchase's report names its order id, and Look Up Order ID finds the transaction by it")
    func orderIds() async throws {
        let fixture = try SimulatorFixture()
        try await ServerTests().withServer(fixture, key: P256.Signing.PrivateKey()) { baseURL, http in
            var request = HTTPClientRequest(url: baseURL + "/simulator/purchase")
            request.method = .POST
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(Data(#"{"account":"bob","productId":"com.example.credits","quantity":2}"#.utf8))
            let response = try await http.execute(request, timeout: .seconds(10))
            let report = try JSONDecoder().decode(
                SimulatorReport.self, from: Data(buffer: try await response.body.collect(upTo: 1 << 20)))
            let id = try #require(report.transactionIds.first)
            let order = try #require(report.orderIds[id])
            #expect(order == (await fixture.store.orderId(of: id)))
            let lookup = try await fixture.store.lookUpOrder(order)
            let signed = try #require(lookup.signedTransactions?.first)
            #expect(try await fixture.verifier.verifyTransaction(signed).transactionId == id)
        }
    }
}
