import CofferAPI
import CofferAdmin
import CofferAppStore
import CofferCore
import CofferServer
import CofferStore
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

/// Support extends subscriptions through Apple: one customer's (`POST /v1/admin/users/{supportId}/extend`) and every
/// active subscriber of a product (`POST /v1/admin/subscriptions/extend`, followed by
/// `GET /v1/admin/subscriptions/extensions`), against the simulator's App Store Server API, audited.
@Suite("Subscription extensions", .timeLimit(.minutes(2)))
struct SubscriptionExtensionTests {
    static let monthly = "com.example.pro.monthly"

    /// A customer subscribed to the monthly product, the server having heard Apple's notification.
    static func subscriber(_ setup: NotificationTests.Setup, _ client: some TestClientProtocol) async throws
        -> (user: CreateUserResponse, originalTransactionId: String)
    {
        let user = try await NotificationTests.createUser(client)
        let sent = await setup.apple.sentNotifications().count
        let id = try #require(
            try await setup.apple.purchase(
                account: "nina-\(user.supportId)", productId: Self.monthly, appAccountToken: user.appAccountToken
            ).transactionIds.first)
        #expect(try await setup.deliver(after: sent, with: client) == ["applied"])
        return (user, id)
    }

    static func decode<T: Decodable>(_ type: T.Type, _ response: TestResponse) throws -> T {
        try AdminJSON.decoder.decode(T.self, from: Data(buffer: response.body))
    }

    @Test(
        "one customer's subscription: extended by Apple, the new date on Apple's notification, audited on the timeline",
        arguments: ServerEngine.allCases)
    func customer(engine: ServerEngine) async throws {
        let setup = try NotificationTests.Setup(store: try await engine.makeStore(), wallet: .server)
        let signer = try await AdminAPITests.key(in: setup.store)
        try await RecoveryTests.withAppleAPI(setup) { api in
            try await setup.application(api: api).test(.router) { client in
                let (user, original) = try await Self.subscriber(setup, client)
                let before = try #require(
                    try await setup.store.receipts(originalTransactionId: original, environment: .sandbox).last?
                        .transaction.expiresDate)
                let sent = await setup.apple.sentNotifications().count
                let response = try await AdminAPITests.send(
                    client, signer, .post, "/v1/admin/users/\(user.supportId)/extend",
                    body: ExtendSubscriptionRequest(days: 7, reasonCode: 1, reason: "Ticket #7"), at: setup.clock.now())
                #expect(response.status == .ok, "\(String(buffer: response.body))")
                let answer = try Self.decode(ExtendSubscriptionResponse.self, response)
                #expect(answer.days == 7 && answer.reasonCode == 1)
                let item = try #require(answer.extensions.first)
                #expect(answer.extensions.count == 1 && item.extended && item.originalTransactionId == original)
                #expect(item.productId == Self.monthly)
                #expect(item.effectiveDate == before.addingTimeInterval(7 * 86_400))

                // Apple's RENEWAL_EXTENDED moves the period's end on the server too.
                #expect(try await setup.deliver(after: sent, with: client) == ["applied"])
                let after = try await setup.store.receipts(originalTransactionId: original, environment: .sandbox)
                #expect(after.last?.transaction.expiresDate == before.addingTimeInterval(7 * 86_400))

                // Audited, and told on the customer's timeline with Apple's answer.
                let audit = try await setup.store.auditEvents(
                    environment: .sandbox, query: AuditQuery(subject: user.supportId, action: "subscription.extend"),
                    limit: 10)
                #expect(audit.count == 2 && audit.allSatisfy { $0.after?.contains("Ticket #7") == true })
                let page = try Self.decode(
                    UserDetail.self,
                    try await AdminAPITests.send(
                        client, signer, .get, "/v1/admin/users/\(user.supportId)", at: setup.clock.now()))
                #expect(
                    page.timeline.contains {
                        $0.summary.contains("extended the subscription by 7 days (customer satisfaction): Ticket #7")
                            && $0.summary.contains("\(Self.monthly) extended to")
                    })
                #expect(
                    page.timeline.contains { $0.summary.contains("asked Apple to extend the subscription by 7 days") })
                // The same extension again at once (a retry after a lost answer) is refused: Apple allows two a year.
                let again = try await AdminAPITests.send(
                    client, signer, .post, "/v1/admin/users/\(user.supportId)/extend",
                    body: ExtendSubscriptionRequest(days: 7, reasonCode: 1, reason: "Ticket #7"), at: setup.clock.now())
                #expect(again.status == .badRequest)
                #expect(try ClientAPITests.decode(ErrorResponse.self, again).error.message.contains("minutes ago"))
                #expect(await setup.apple.sentNotifications().count == sent + 1)
            }
        }
    }

    @Test("what is refused: days and reason codes out of Apple's range, no active subscription, no key")
    func refusals() async throws {
        let setup = try NotificationTests.Setup(wallet: .server)
        let signer = try await AdminAPITests.key(in: setup.store)
        try await RecoveryTests.withAppleAPI(setup) { api in
            try await setup.application(api: api).test(.router) { client in
                let (user, _) = try await Self.subscriber(setup, client)
                let idle = try await NotificationTests.createUser(client)
                let sent = await setup.apple.sentNotifications().count
                let cases: [(String, ExtendSubscriptionRequest, String)] = [
                    (user.supportId, ExtendSubscriptionRequest(days: 0, reasonCode: 1), "1 to 90 days"),
                    (user.supportId, ExtendSubscriptionRequest(days: 91, reasonCode: 1), "1 to 90 days"),
                    (user.supportId, ExtendSubscriptionRequest(days: 5, reasonCode: 4), "a reason code is"),
                    (
                        user.supportId,
                        ExtendSubscriptionRequest(days: 5, reasonCode: 1, productId: "com.example.credits"),
                        "not an auto-renewable"
                    ),
                    (idle.supportId, ExtendSubscriptionRequest(days: 5, reasonCode: 1), "no active subscription"),
                ]
                for (supportId, request, words) in cases {
                    let response = try await AdminAPITests.send(
                        client, signer, .post, "/v1/admin/users/\(supportId)/extend", body: request,
                        at: setup.clock.now())
                    #expect(response.status == .badRequest, "\(request)")
                    let error = try ClientAPITests.decode(ErrorResponse.self, response).error
                    #expect(error.message.contains(words), "\(error.message)")
                }
                // Nothing was asked of Apple: no extension, so no notification.
                #expect(await setup.apple.sentNotifications().count == sent)
            }
        }
        // A server without an In-App Purchase key cannot ask Apple, and says so.
        try await setup.app.test(.router) { client in
            let user = try await NotificationTests.createUser(client)
            let response = try await AdminAPITests.send(
                client, signer, .post, "/v1/admin/users/\(user.supportId)/extend",
                body: ExtendSubscriptionRequest(days: 5, reasonCode: 1), at: setup.clock.now())
            #expect(response.status == .serviceUnavailable)
            #expect(try ClientAPITests.decode(ErrorResponse.self, response).error.message.contains("appstore.key.id"))
        }
    }

    @Test("an outage: every active subscriber of a product, followed to Apple's completion; owners only")
    func everySubscriber() async throws {
        let setup = try NotificationTests.Setup(wallet: .server)
        let owner = try await AdminAPITests.key(in: setup.store)
        let supportKey = NewAdminKey(name: "support", at: AdminAPITests.now, role: .support, grantLimit: 100)
        try await setup.store.createAdminKey(supportKey.record)
        let support = try AdminRequestSigner(keyId: supportKey.record.id, privateKeyPEM: supportKey.privateKeyPEM)
        try await RecoveryTests.withAppleAPI(setup) { api in
            try await setup.application(api: api).test(.router) { client in
                _ = try await Self.subscriber(setup, client)
                let sent = await setup.apple.sentNotifications().count
                let request = MassExtensionRequest(
                    productId: Self.monthly, days: 3, reasonCode: 3, reason: "Outage of 1 December")
                let refused = try await AdminAPITests.send(
                    client, support, .post, "/v1/admin/subscriptions/extend", body: request, at: setup.clock.now())
                #expect(refused.status == .forbidden)
                let response = try await AdminAPITests.send(
                    client, owner, .post, "/v1/admin/subscriptions/extend", body: request, at: setup.clock.now())
                #expect(response.status == .accepted, "\(String(buffer: response.body))")
                let view = try Self.decode(MassExtensionView.self, response)
                #expect(view.productId == Self.monthly && view.days == 3 && view.reasonCode == 3)
                #expect(UUID(uuidString: view.requestIdentifier) != nil)

                let listed = try Self.decode(
                    MassExtensionsResponse.self,
                    try await AdminAPITests.send(
                        client, support, .get, "/v1/admin/subscriptions/extensions", at: setup.clock.now()))
                let first = try #require(listed.extensions.first)
                #expect(listed.extensions.count == 1 && first.requestIdentifier == view.requestIdentifier)
                #expect(first.complete == true && first.succeededCount == 1 && first.failedCount == 0)
                // Apple extended the subscriber (RENEWAL_EXTENDED) and summed up (RENEWAL_EXTENSION/SUMMARY).
                #expect(await setup.apple.sentNotifications().count == sent + 2)

                let unknown = try await AdminAPITests.send(
                    client, owner, .post, "/v1/admin/subscriptions/extend",
                    body: MassExtensionRequest(productId: "com.example.credits", days: 3, reasonCode: 3),
                    at: setup.clock.now())
                #expect(unknown.status == .badRequest)
                let storefront = try await AdminAPITests.send(
                    client, owner, .post, "/v1/admin/subscriptions/extend",
                    body: MassExtensionRequest(productId: Self.monthly, days: 3, reasonCode: 3, storefronts: ["us"]),
                    at: setup.clock.now())
                #expect(storefront.status == .badRequest)
            }
        }
    }
}

/// The panel's extensions: the customer page's "Extend through Apple" and the Subscription extensions page.
@Suite("Panel: subscription extensions", .timeLimit(.minutes(2)))
struct PanelExtensionTests {
    @Test(
        "support extends a customer's subscription from their page; an owner extends every subscriber after an outage")
    func panel() async throws {
        let setup = try NotificationTests.Setup(wallet: .server)
        try await PanelTests.admin(in: setup.store)
        try await RecoveryTests.withAppleAPI(setup) { api in
            try await setup.application(api: api).test(.router) { client in
                let (user, _) = try await SubscriptionExtensionTests.subscriber(setup, client)
                var browser = PanelTests.Browser()
                _ = try await browser.signIn(client)
                let page = try await browser.get(client, "/admin/users/\(user.supportId)")
                #expect(String(buffer: page.body).contains(#"id="extend-form""#))
                let csrf = try PanelTests.Browser.csrf(page)
                let extended = try await browser.post(
                    client, "/admin/users/\(user.supportId)/extend",
                    [("csrf", csrf), ("days", "5"), ("reasonCode", "1"), ("reason", "Ticket #5")])
                #expect(extended.headers[.location]?.hasSuffix("?notice=extended") == true)
                let after = String(
                    buffer: try await browser.get(client, "/admin/users/\(user.supportId)?notice=extended").body)
                #expect(after.contains("extended the subscription by 5 days (customer satisfaction): Ticket #5"))
                #expect(after.contains("Asked Apple to extend the subscription"))
                // Days out of Apple's range come back to the page with why.
                let refused = try await browser.post(
                    client, "/admin/users/\(user.supportId)/extend",
                    [("csrf", csrf), ("days", "120"), ("reasonCode", "1"), ("reason", "Ticket #5")])
                #expect(String(buffer: refused.body).contains("an extension adds 1 to 90 days"))

                let empty = String(buffer: try await browser.get(client, "/admin/extensions").body)
                #expect(empty.contains(#"id="mass-extend-form""#) && empty.contains("No mass extensions yet."))
                let all = try await browser.post(
                    client, "/admin/extensions",
                    [
                        ("csrf", csrf), ("productId", "com.example.pro.monthly"), ("days", "2"), ("reasonCode", "3"),
                        ("reason", "Outage of 1 December"),
                    ])
                #expect(all.headers[.location]?.hasSuffix("?notice=extended-all") == true)
                let listed = String(buffer: try await browser.get(client, "/admin/extensions").body)
                #expect(listed.contains("Complete") && listed.contains("1 extended, 0 not"))
            }
        }
    }
}
