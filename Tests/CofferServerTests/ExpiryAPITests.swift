import CofferAPI
import CofferAdmin
import CofferCore
import CofferServer
import CofferService
import CofferStore
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

/// Credits that expire through the server (issue 39 §3): support grants gems that end some days after the claim,
/// `GET /v1/me` lists what is left (`expiring`), spends take them first, and at their end what is left leaves the
/// balance by `expiry:<grant id>`, once: on the customer's next read, or by the server's sweep.
@Suite("Credits that expire through the API")
struct ExpiryAPITests {
    @Test("a grant of gems that expires: listed, spent first, ended once at its end", arguments: ServerEngine.allCases)
    func grantThatExpires(engine: ServerEngine) async throws {
        let setup = try NotificationTests.Setup(
            store: try await engine.makeStore(),
            configuration: NotificationTests.Setup.defaultConfiguration(wallet: .server),
            catalog: try CurrencyAPITests.catalog())
        try await setup.app.test(.router) { client in
            let user = try await NotificationTests.createUser(client)
            let owner = try #require(
                try await setup.store.user(appAccountToken: user.appAccountToken, environment: .sandbox))
            let support = AdminService(
                store: setup.store, catalog: setup.catalog, walletMode: .server, now: { setup.clock.now() })
            let bought = try await setup.apple.purchase(
                account: "alice", productId: "com.example.gems", appAccountToken: user.appAccountToken)
            _ = try await NotificationTests.present(
                try await setup.apple.signedTransaction(id: try #require(bought.transactionIds.first)), as: user,
                with: client)
            let grant = try await support.createGrant(
                environment: .sandbox, supportId: owner.supportId.rawValue, credits: 40, reason: "Launch event",
                actor: "ada", currency: "gems", expiresInDays: 2)
            #expect(grant.expiresInDays == 2)
            let claim = try await client.execute(
                uri: "/v1/me/grants/\(grant.id.uuidString.lowercased())/claim", method: .post,
                headers: ClientAPITests.bearer(user.token))
            #expect(claim.status == .ok)
            var me = try await NotificationTests.me(user, client)
            #expect(me.balances?["gems"] == 90)
            let ends = setup.clock.now().addingTimeInterval(2 * 86_400).formatted(.iso8601)
            #expect(me.expiring == [ExpiringCredits(currency: "gems", amount: 40, expiresAt: ends)])

            // A spend takes the gems that expire first.
            var headers = ClientAPITests.bearer(user.token)
            headers[HTTPField.Name("Idempotency-Key")!] = "sword"
            _ = try await client.execute(
                uri: "/v1/me/spend", method: .post, headers: headers,
                body: try ClientAPITests.body(SpendRequest(amount: 15, currency: "gems")))
            me = try await NotificationTests.me(user, client)
            #expect(me.balances?["gems"] == 75 && me.expiring?.map(\.amount) == [25])

            // Three days on: the customer's read ends what is left, once.
            _ = try await setup.apple.advanceClock(by: 3 * 86_400)
            me = try await NotificationTests.me(user, client)
            #expect(me.balances?["gems"] == 50 && me.expiring == [])
            me = try await NotificationTests.me(user, client)
            #expect(me.balances?["gems"] == 50)
            let gems = try #require(Currency(rawValue: "gems"))
            let entries = try await setup.store.entries(owner: owner.id, environment: .sandbox, currency: gems)
            let expired = entries.filter { $0.key.kind == .expiry }
            #expect(expired.map(\.key.rawValue) == ["expiry:\(grant.id.uuidString.lowercased())"])
            #expect(expired.map(\.amount) == [-25])
            let detail = try await support.user(environment: .sandbox, supportId: owner.supportId.rawValue)
            #expect(detail.timeline.contains { $0.kind == .expiry && $0.currency == "gems" })

            // Refused: out of range, or in the device wallet.
            await #expect(throws: AdminError.self) {
                _ = try await support.createGrant(
                    environment: .sandbox, supportId: owner.supportId.rawValue, credits: 1, reason: "x",
                    actor: "ada", expiresInDays: 0)
            }
            let device = AdminService(
                store: setup.store, catalog: setup.catalog, walletMode: .device, now: { setup.clock.now() })
            await #expect(throws: AdminError.self) {
                _ = try await device.createGrant(
                    environment: .sandbox, supportId: owner.supportId.rawValue, credits: 1, reason: "x",
                    actor: "ada", expiresInDays: 3)
            }
        }
    }

    @Test("the server's sweep ends every customer's credits whose end has come", arguments: ServerEngine.allCases)
    func sweep(engine: ServerEngine) async throws {
        let store = try await engine.makeStore()
        let start = Date(timeIntervalSince1970: 1_767_225_600)
        let users = (1...3).map { index in
            User(
                environment: .sandbox, supportId: SupportID("_0000000000\(index)a")!, tokenHash: "h\(index)",
                createdAt: start)
        }
        for (index, user) in users.enumerated() {
            try await store.createUser(user)
            _ = try await store.apply(
                LedgerRequest(
                    owner: user.id, environment: .sandbox, event: .grant(id: "g\(index)", credits: 10, reason: "event"),
                    at: start, expiresAt: start.addingTimeInterval(Double(index + 1) * 86_400)))
        }
        let clock = Clock(now: start.addingTimeInterval(2.5 * 86_400))
        var configuration = ServiceConfiguration(bundleId: "com.example.app")
        configuration.environment = .sandbox
        let sweep = try #require(
            CreditExpiry(
                configuration: configuration,
                dependencies: try ServerDependencies(
                    store: store, verifier: try XcodeTestingTests.verifier(xcode: nil),
                    catalog: try Catalog(products: []),
                    now: { clock.now })))
        #expect(try await sweep.runOnce() == 2)
        #expect(try await sweep.runOnce() == 0)
        for (index, user) in users.enumerated() {
            #expect(try await store.wallet(owner: user.id, environment: .sandbox).balance == (index < 2 ? 0 : 10))
        }
    }

    final class Clock: Sendable {
        let now: Date
        init(now: Date) { self.now = now }
    }
}
