import CofferAPI
import CofferAdmin
import CofferCore
import CofferServer
import CofferStore
import Foundation
import HummingbirdTesting
import Testing

/// A Production server keeps App Review's and TestFlight's customers among its own: the panel's Sandbox view shows
/// them and their grants, "Delete all test grants" reaches only them, and a real customer stays out of reach there.
@Suite("Admin panel: a Production server's Sandbox view", .timeLimit(.minutes(1)))
struct PanelSandboxViewTests {
    typealias Browser = PanelTests.Browser

    @Test(
        "the Sandbox view of a Production server lists its Sandbox-marked customers and grants and deletes only those",
        arguments: ServerEngine.allCases)
    func sandboxView(engine: ServerEngine) async throws {
        let store = try await engine.makeStore()
        let now = AdminAPITests.now
        // App Review's install (its AppTransaction says Sandbox), a TestFlight install registered without one whose
        // purchase is Sandbox data, and a real customer.
        var reviewer = User(
            environment: .production, supportId: try #require(SupportID("_aaaaaaaaaaa1")), tokenHash: "r",
            createdAt: now)
        reviewer.appleAccount = AppleAccount(appTransactionId: "7001", environment: .sandbox)
        let tester = User(
            environment: .production, supportId: try #require(SupportID("_bbbbbbbbbbb2")), tokenHash: "t",
            createdAt: now)
        var customer = User(
            environment: .production, supportId: try #require(SupportID("_ccccccccccc3")), tokenHash: "c",
            createdAt: now)
        customer.appleAccount = AppleAccount(appTransactionId: "7003", environment: .production)
        for user in [reviewer, tester, customer] { try await store.createUser(user) }
        let customerId = customer.id
        var fact = TransactionFact(
            transactionId: "2000000111", productId: "com.example.credits", purchaseDate: now, environment: .sandbox)
        _ = try await store.apply(
            LedgerRequest(owner: tester.id, environment: .production, event: .purchase(fact, credits: 100), at: now))
        fact.transactionId = "1000000222"
        fact.environment = .production
        _ = try await store.apply(
            LedgerRequest(owner: customer.id, environment: .production, event: .purchase(fact, credits: 100), at: now))
        for (user, credits) in [(reviewer, Int64(11)), (tester, 22), (customer, 33)] {
            try await store.createGrant(
                Grant(
                    environment: .production, recipient: user.id, credits: credits, reason: "Ticket", createdBy: "ada",
                    createdAt: now))
        }
        try await PanelTests.signedIn(store, server: .production) { client, _, browser in
            // The Production view: every customer.
            let everyone = String(buffer: try await browser.get(client, "/admin/users").body)
            #expect(["_aaaaaaaaaaa1", "_bbbbbbbbbbb2", "_ccccccccccc3"].allSatisfy(everyone.contains))
            let csrf = try Browser.csrf(try await browser.get(client, "/admin"))
            _ = try await browser.post(client, "/admin/environment", [("environment", "Sandbox"), ("csrf", csrf)])
            // The Sandbox view: App Review's and TestFlight's customers, never the real one.
            let users = String(buffer: try await browser.get(client, "/admin/users").body)
            #expect(users.contains("_aaaaaaaaaaa1") && users.contains("_bbbbbbbbbbb2"))
            #expect(!users.contains("_ccccccccccc3"))
            let grants = String(buffer: try await browser.get(client, "/admin/grants").body)
            #expect(grants.contains("_aaaaaaaaaaa1") && grants.contains("_bbbbbbbbbbb2"))
            #expect(!grants.contains("_ccccccccccc3"))
            #expect(grants.contains(#"id="delete-all""#))
            let dashboard = String(buffer: try await browser.get(client, "/admin").body)
            #expect(dashboard.contains("in this Sandbox view, Users and Grants list only them"))
            // A real customer is out of reach from here; a test customer's page opens.
            let real = try await browser.get(client, "/admin/users/_ccccccccccc3")
            #expect(String(buffer: real.body).contains("is a Production customer"))
            #expect(real.status == .forbidden)
            #expect(try await browser.get(client, "/admin/users/_aaaaaaaaaaa1").status == .ok)
            // A confirmed write crafted for the real customer from this view is refused too, and changes nothing.
            let crafted = try await browser.post(
                client, "/admin/grants",
                [
                    ("supportId", "_ccccccccccc3"), ("credits", "5"), ("reason", "Ticket"), ("confirm", "yes"),
                    ("grantId", UUID().uuidString.lowercased()), ("csrf", csrf),
                ])
            #expect(crafted.status == .forbidden)
            let deleting = try await browser.post(
                client, "/admin/users/_ccccccccccc3/delete", [("confirm", "yes"), ("csrf", csrf)])
            #expect(String(buffer: deleting.body).contains("is a Production customer"))
            #expect(
                try await store.grants(environment: .production, recipient: customerId, status: nil, limit: 5).count
                    == 1)
            #expect(try await store.user(id: customerId)?.deletedAt == nil)
            // "Delete all test grants" reaches the test customers' grants only.
            let confirm = String(buffer: try await browser.get(client, "/admin/grants/delete-all").body)
            #expect(confirm.contains("No real customer"))
            let deleted = try await browser.post(
                client, "/admin/grants/delete-all", [("confirm", "yes"), ("csrf", csrf)])
            #expect(deleted.headers[.location] == "/admin/grants?notice=deleted")
            let left = try await store.grants(environment: .production, recipient: nil, status: nil, limit: 10)
            #expect(left.map(\.recipient) == [customerId])
            let audit = try await store.auditEvents(environment: .production, subject: nil, limit: 5)
            #expect(audit.contains { $0.action == "grants.delete-test" && $0.actor.hasPrefix("ada") })
        }
    }
}
