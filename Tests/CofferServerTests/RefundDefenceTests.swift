import CofferAPI
import CofferAppStore
import CofferCore
import CofferServer
import CofferService
import CofferSimulator
import CofferStore
import Foundation
import Hummingbird
import HummingbirdTesting
import Testing

/// Apple's CONSUMPTION_REQUEST answered from the ledger with Send Consumption Information v2, only with the
/// customer's consent (`PUT /v1/me/consent`), the preference from `consumption.policy`, and every answer (or why
/// there was none) recorded for support.
@Suite("The refund defence", .timeLimit(.minutes(2)))
struct RefundDefenceTests {
    /// What one refund request left behind: what Apple's simulator received, and what Coffer recorded.
    struct Outcome {
        var sent: SimulatedConsumption?
        var recorded: [ConsumptionAnswerRecord]
    }

    /// A customer buys 400 credits, answers the consent question (`consent`, or never), spends `spent`, and asks
    /// Apple for a refund.
    static func refundRequest(
        _ consumption: ConsumptionConfiguration, consent: Bool?, spent: Int64 = 150, catalog: Catalog? = nil
    ) async throws -> Outcome {
        var configuration = NotificationTests.Setup.defaultConfiguration(wallet: .server)
        configuration.consumption = consumption
        let setup = try NotificationTests.Setup(configuration: configuration, catalog: catalog)
        let user = try await setup.createUser()
        let id = try #require(
            try await setup.apple.purchase(
                account: "gus", productId: "com.example.credits", quantity: 4, appAccountToken: user.appAccountToken
            ).transactionIds.first)
        try await RecoveryTests.withAppleAPI(setup) { api in
            let app = try setup.application(api: api)
            try await app.test(.router) { client in
                #expect(try await setup.deliver(after: 0, with: client) == ["applied"])
                if let consent {
                    let answered = try await client.execute(
                        uri: "/v1/me/consent", method: .put, headers: [.authorization: "Bearer \(user.token)"],
                        body: try ClientAPITests.body(ConsentRequest(customerConsented: consent)))
                    #expect(answered.status == .ok)
                    let me = try await NotificationTests.me(user, client)
                    #expect(me.consent?.customerConsented == consent)
                }
                if spent > 0 {
                    let spending = try await client.execute(
                        uri: "/v1/me/spend", method: .post,
                        headers: [.authorization: "Bearer \(user.token)", .init("Idempotency-Key")!: "s1"],
                        body: try ClientAPITests.body(SpendRequest(amount: spent)))
                    #expect(spending.status == .ok)
                }
                try await setup.apple.requestRefund(transactionId: id)
                #expect(try await setup.deliver(after: 1, with: client) == ["applied"])
            }
        }
        let owner = try #require(
            try await setup.store.user(appAccountToken: user.appAccountToken, environment: .sandbox))
        return Outcome(
            sent: await setup.apple.consumption(for: id),
            recorded: try await setup.store.consumptionAnswers(owner: owner.id, environment: .sandbox, limit: 10))
    }

    @Test("with consent: version 2 from the ledger (delivered, the share spent since), recorded with why")
    func answered() async throws {
        let outcome = try await Self.refundRequest(ConsumptionConfiguration(answer: true), consent: true)
        let kept = try #require(outcome.sent)
        #expect(kept.version == 2 && kept.requested)
        let request = try #require(kept.information)
        #expect(request.customerConsented == true && request.sampleContentProvided == false)
        #expect(request.deliveryStatus == .delivered)
        #expect(request.consumptionPercentage == 37_500, "150 of 400 credits")
        #expect(request.rawRefundPreference == nil, "37.5%: no rule of the default policy applies")
        let record = try #require(outcome.recorded.first)
        #expect(record.sent)
        #expect(record.reason.contains("150 of the 400 credits delivered were used since"))
        #expect(record.body?.contains(#""consumptionPercentage":37500"#) == true)
    }

    @Test("a purchase that gave other currencies is not answered: no one share to stand behind, never a false 100%")
    func severalCurrencies() async throws {
        let outcome = try await Self.refundRequest(
            ConsumptionConfiguration(answer: true), consent: true, catalog: try CurrencyAPITests.catalog())
        #expect(outcome.sent?.information == nil)
        let record = try #require(outcome.recorded.first)
        #expect(!record.sent && record.reason == "not sent: the purchase delivered credits in several currencies")
    }

    @Test("the policy decides the preference: decline above a share, grant when nothing was used")
    func policy() async throws {
        var strict = ConsumptionConfiguration(answer: true)
        strict.policy = try #require(ConsumptionPolicy("grant-unused,decline-above=30"))
        let declined = try await Self.refundRequest(strict, consent: true)
        #expect(declined.sent?.information?.refundPreference == .decline)
        #expect(declined.recorded.first?.reason.contains("more than 30% was used: decline") == true)
        let untouched = try await Self.refundRequest(strict, consent: true, spent: 0)
        #expect(untouched.sent?.information?.refundPreference == .grantFull)
        #expect(untouched.sent?.information?.consumptionPercentage == 0)
        #expect(ConsumptionPolicy("decline-above=101") == nil && ConsumptionPolicy("sometimes") == nil)
        #expect(ConsumptionPolicy("none")?.preference(used: 0).0 == nil)
    }

    @Test("without consent, declined, or with answers off, nothing is sent, and support sees why")
    func notSent() async throws {
        let never = try await Self.refundRequest(ConsumptionConfiguration(answer: true), consent: nil)
        #expect(never.sent == nil)
        #expect(never.recorded.map(\.reason) == ["not sent: the customer was never asked to share consumption data"])
        let declined = try await Self.refundRequest(ConsumptionConfiguration(answer: true), consent: false)
        #expect(declined.sent == nil)
        #expect(declined.recorded.first?.reason == "not sent: the customer declined to share consumption data")
        let off = try await Self.refundRequest(ConsumptionConfiguration(answer: false), consent: true)
        #expect(off.sent == nil)
        #expect(off.recorded.first?.sent == false && off.recorded.first?.reason.contains("consumption.answer") == true)
    }

    @Test("version 1 stays behind consumption.version")
    func versionOne() async throws {
        var configuration = ConsumptionConfiguration(answer: true, refundPreference: .decline)
        configuration.version = 1
        let outcome = try await Self.refundRequest(configuration, consent: true)
        let request = try #require(outcome.sent?.informationV1)
        #expect(outcome.sent?.version == 1)
        #expect(request.customerConsented == true && request.consumptionStatus == 2 && request.deliveryStatus == 0)
        #expect(request.refundPreference == 2 && request.accountTenure == 1)
        #expect(outcome.recorded.first?.sent == true)
    }
}
