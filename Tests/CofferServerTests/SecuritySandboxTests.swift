import CofferAPI
import CofferAdmin
import CofferCore
import CofferStore
import Foundation
import Hummingbird
import HummingbirdTesting
import Testing

/// The third security round's attack with free Sandbox purchases on a Production server: a TestFlight install
/// buys with the account token of a customer installed from the App Store.
extension SecurityTests {
    @Test(
        "on a Production server Sandbox data never reaches a customer whose AppTransaction says Production",
        arguments: ServerEngine.allCases)
    func sandboxDataForProductionCustomers(engine: ServerEngine) async throws {
        let setup = try NotificationTests.Setup(
            store: try await engine.makeStore(),
            configuration: NotificationTests.Setup.defaultConfiguration(wallet: .server), reviewers: ["tester"])
        try await setup.app.test(.router) { client in
            // Mallory installed from the App Store (Production AppTransaction) and from TestFlight.
            let mallory = try ClientAPITests.decode(
                CreateUserResponse.self,
                try await AccountTests.register(try await setup.apple.signedAppTransaction(account: "mallory"), client))
            // The TestFlight build buys for free, naming Mallory's App Store account token.
            let consumable = try await setup.apple.purchase(
                account: "tester", productId: "com.example.credits", appAccountToken: mallory.appAccountToken)
            let subscription = try await setup.apple.purchase(
                account: "tester", productId: "com.example.pro.monthly", appAccountToken: mallory.appAccountToken)
            // Apple's Sandbox notifications about them are recorded and applied to nobody.
            for notification in await setup.apple.sentNotifications() {
                let posted = try await NotificationTests.post(notification.signedPayload, with: client)
                #expect(posted.status == .ok)
            }
            for id in consumable.transactionIds + subscription.transactionIds {
                let signed = try await setup.apple.signedTransaction(id: id)
                let presented = try await client.execute(
                    uri: "/v1/transactions", method: .post, headers: ClientAPITests.bearer(mallory.token),
                    body: try ClientAPITests.body(TransactionRequest(signedTransaction: signed)))
                #expect(presented.status == .unprocessableContent)
                #expect(try AdminAPITests.errorCode(presented) == "sandbox-data-for-production-customer")
                #expect(try await setup.store.receipt(transactionId: id, environment: .production) == nil)
            }
            let me = try ClientAPITests.decode(MeResponse.self, try await AccountTests.me(mallory.token, client))
            #expect(me.balance == 0 && me.entitlements.isEmpty)
            let malloryId = try #require(SupportID(mallory.supportId))
            let malloryUser = try #require(try await setup.store.user(supportId: malloryId, environment: .production))
            #expect(try await setup.store.entries(owner: malloryUser.id, environment: .production).isEmpty)

            // The TestFlight install's own customer (Sandbox AppTransaction) takes its Sandbox purchases, as App
            // Review needs; so does an install registered without an AppTransaction.
            let tester = try ClientAPITests.decode(
                CreateUserResponse.self,
                try await AccountTests.register(try await setup.apple.signedAppTransaction(account: "tester"), client))
            let own = try await setup.apple.purchase(
                account: "tester", productId: "com.example.credits", appAccountToken: tester.appAccountToken)
            let signedOwn = try await setup.apple.signedTransaction(id: try #require(own.transactionIds.first))
            #expect(try await NotificationTests.present(signedOwn, as: tester, with: client).outcome == .delivered)
            // A purchase of the tester's Apple account made without a token is the tester's (the server wallet), even
            // when an install registered without an AppTransaction presents it first.
            let anonymous = try ClientAPITests.decode(
                CreateUserResponse.self, try await client.execute(uri: "/v1/users", method: .post))
            let tokenless = try await setup.apple.purchase(account: "tester", productId: "com.example.credits")
            let signedTokenless = try await setup.apple.signedTransaction(
                id: try #require(tokenless.transactionIds.first))
            let refused = try await client.execute(
                uri: "/v1/transactions", method: .post, headers: ClientAPITests.bearer(anonymous.token),
                body: try ClientAPITests.body(TransactionRequest(signedTransaction: signedTokenless)))
            #expect(refused.status == .forbidden)
            #expect(
                try ClientAPITests.decode(MeResponse.self, try await AccountTests.me(tester.token, client)).balance
                    == 200)
        }
        // The Production dashboard shows the Sandbox figures beside the real ones.
        let figures = try await setup.store.dashboard(environment: .production, days: 30, now: setup.clock.now())
        #expect(figures.users == 2, "Mallory and the anonymous install")
        #expect(figures.otherEnvironmentCustomers == 1 && figures.otherEnvironmentPurchases == 2)
        #expect(figures.otherEnvironmentCredits == 200 && figures.otherEnvironmentSubscriptions == 0)
    }
}

extension SecurityTests {
    @Test(
        "an anonymous install holding Sandbox purchases is not merged into a customer installed from the App Store",
        arguments: ServerEngine.allCases)
    func sandboxThroughMerge(engine: ServerEngine) async throws {
        let setup = try NotificationTests.Setup(
            store: try await engine.makeStore(),
            configuration: NotificationTests.Setup.defaultConfiguration(wallet: .server), reviewers: ["tester"])
        let admin = AdminService(
            store: setup.store, catalog: setup.catalog, walletMode: .server, now: { setup.clock.now() })
        try await setup.app.test(.router) { client in
            let mallory = try ClientAPITests.decode(
                CreateUserResponse.self,
                try await AccountTests.register(try await setup.apple.signedAppTransaction(account: "mallory"), client))
            // A fresh anonymous install takes the TestFlight build's free purchase, as App Review needs.
            let anonymous = try ClientAPITests.decode(
                CreateUserResponse.self, try await client.execute(uri: "/v1/users", method: .post))
            let free = try await setup.apple.purchase(account: "tester", productId: "com.example.credits")
            let signed = try await setup.apple.signedTransaction(id: try #require(free.transactionIds.first))
            #expect(try await NotificationTests.present(signed, as: anonymous, with: client).outcome == .delivered)
            // Merged into the App Store customer with the install's own code: refused, nothing moves.
            let code = try ClientAPITests.decode(
                MergeCodeResponse.self,
                try await client.execute(
                    uri: "/v1/me/merge-code", method: .post, headers: ClientAPITests.bearer(anonymous.token)))
            do {
                _ = try await admin.mergeUsers(
                    environment: .production, from: anonymous.supportId, into: mallory.supportId,
                    consent: .code(code.code), actor: "test")
                Issue.record("merged Sandbox purchases into an App Store customer")
            } catch let error as AdminError {
                #expect(error.description.contains("holds Sandbox purchases"))
            }
            let me = try ClientAPITests.decode(MeResponse.self, try await AccountTests.me(mallory.token, client))
            #expect(me.balance == 0)
        }
    }
}
