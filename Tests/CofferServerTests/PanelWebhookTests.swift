import CofferAdmin
import CofferCore
import CofferStore
import Foundation
import Hummingbird
import HummingbirdTesting
import Testing

/// The panel's webhooks: owners add, rotate and remove endpoints on the Settings page (the secret shown once), every
/// admin sees the deliveries and sends a dead letter again; a support admin cannot change endpoints.
@Suite("Panel: webhooks", .timeLimit(.minutes(2)))
struct PanelWebhookTests {
    @Test(
        "an owner adds, rotates and removes an endpoint; a dead letter is sent again; support cannot add",
        arguments: ServerEngine.allCases)
    func panel(engine: ServerEngine) async throws {
        let setup = try NotificationTests.Setup(store: try await engine.makeStore(), wallet: .server)
        let store = setup.store
        try await PanelTests.admin(in: store)
        try await store.createAdmin(
            Admin(
                name: "sam", passwordHash: await PasswordHasher(cost: 4).hash(PanelTests.password),
                createdAt: AdminAPITests.now, role: .support, grantLimit: 100))
        try await setup.app.test(.router) { client in
            var browser = PanelTests.Browser()
            _ = try await browser.signIn(client)
            let settings = try await browser.get(client, "/admin/settings")
            let settingsPage = String(buffer: settings.body)
            #expect(settingsPage.contains(#"id="webhook-add-form""#) && settingsPage.contains("No endpoints yet."))
            let csrf = try PanelTests.Browser.csrf(settings)

            // A URL that cannot be one comes back with why; nothing is added.
            let refused = try await browser.post(
                client, "/admin/settings/webhooks", [("csrf", csrf), ("url", "ftp://example.com")])
            #expect(refused.status == .badRequest && String(buffer: refused.body).contains("not an https://"))
            #expect(try await store.webhookEndpoints(environment: .sandbox).isEmpty)

            let added = try await browser.post(
                client, "/admin/settings/webhooks",
                [
                    ("csrf", csrf), ("url", "https://api.example.com/coffer"), ("event-purchase.refunded", "on"),
                    ("event-balance.adjusted", "on"),
                ])
            let addedPage = String(buffer: added.body)
            let secret = try #require(
                addedPage.firstMatch(of: /id="webhook-secret">(whsec_[0-9a-f]+)</).map { String($0.1) })
            let endpoint = try #require(try await store.webhookEndpoints(environment: .sandbox).first)
            #expect(endpoint.secret == secret && endpoint.events == ["balance.adjusted", "purchase.refunded"])
            let listed = String(buffer: try await browser.get(client, "/admin/settings").body)
            #expect(listed.contains(endpoint.id) && listed.contains("https://api.example.com/coffer"))
            #expect(!listed.contains(secret), "the secret is shown once")

            let rotated = try await browser.post(
                client, "/admin/settings/webhooks/rotate", [("csrf", csrf), ("id", endpoint.id)])
            #expect(String(buffer: rotated.body).contains("The secret before signs too"))
            #expect(try await store.webhookEndpoints(environment: .sandbox).first?.previousSecret == secret)
            let done = try await browser.post(
                client, "/admin/settings/webhooks/rotate", [("csrf", csrf), ("id", endpoint.id), ("done", "1")])
            #expect(done.headers[.location]?.hasSuffix("?notice=webhook-rotated") == true)
            #expect(try await store.webhookEndpoints(environment: .sandbox).first?.previousSecret == nil)

            // A dead letter: listed with "Send again", which makes it pending with its attempts from zero.
            let user = try await NotificationTests.createUser(client)
            let customer = try #require(
                try await store.user(supportId: SupportID(user.supportId)!, environment: .sandbox))
            _ = try await store.apply(
                LedgerRequest(
                    owner: customer.id, environment: .sandbox,
                    event: .adjustment(id: "a1", delta: 5, reason: "Ticket #1"), at: AdminAPITests.now))
            _ = try await store.routeWebhookEvents(environment: .sandbox, limit: 10, at: AdminAPITests.now) { record in
                WebhookEvent(id: UUID(), type: "balance.adjusted", body: "{}", endpoints: [endpoint.id])
            }
            let leased = try #require(
                try await store.leaseWebhookDeliveries(
                    environment: .sandbox, holder: "t", limit: 1, at: AdminAPITests.now,
                    until: AdminAPITests.now.addingTimeInterval(60)
                ).first)
            _ = try await store.finishWebhookAttempt(
                WebhookAttempt(
                    endpoint: endpoint.id, seq: leased.seq, outcome: .failed(retryAt: nil), status: 502,
                    error: "answered 502",
                    at: AdminAPITests.now), environment: .sandbox, holder: "t")
            let hooks = String(buffer: try await browser.get(client, "/admin/webhooks").body)
            #expect(hooks.contains(#"id="resend-\#(endpoint.id)-\#(leased.seq)""#) && hooks.contains("answered 502"))
            let resent = try await browser.post(
                client, "/admin/webhooks/resend",
                [("csrf", csrf), ("endpoint", endpoint.id), ("seq", String(leased.seq))])
            #expect(resent.headers[.location]?.hasSuffix("?notice=webhook-resent") == true)
            let pending = try await store.webhookDeliveries(environment: .sandbox, state: .pending, limit: 10)
            #expect(pending.map(\.seq) == [leased.seq] && pending.first?.attempts == 0)
            let audit = try await store.auditEvents(
                environment: .sandbox, query: AuditQuery(subject: endpoint.id), limit: 10)
            #expect(
                Set(audit.map(\.action)) == ["webhook.add", "webhook.rotate", "webhook.rotate.done", "webhook.resend"])

            let removed = try await browser.post(
                client, "/admin/settings/webhooks/remove", [("csrf", csrf), ("id", endpoint.id)])
            #expect(removed.headers[.location]?.hasSuffix("?notice=webhook-removed") == true)
            #expect(try await store.webhookEndpoints(environment: .sandbox).isEmpty)

            // Support sees the deliveries, and cannot change the endpoints.
            var support = PanelTests.Browser()
            _ = try await support.signIn(client, name: "sam")
            let page = try await support.get(client, "/admin/webhooks")
            #expect(page.status == .ok)
            let supportSettings = try await support.get(client, "/admin/settings")
            #expect(!String(buffer: supportSettings.body).contains(#"id="webhook-add-form""#))
            let forbidden = try await support.post(
                client, "/admin/settings/webhooks",
                [("csrf", try PanelTests.Browser.csrf(supportSettings)), ("url", "https://evil.example.com")])
            #expect(forbidden.status == .forbidden)
            #expect(try await store.webhookEndpoints(environment: .sandbox).isEmpty)
        }
    }
}
