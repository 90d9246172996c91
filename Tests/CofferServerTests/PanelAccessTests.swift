import CofferAPI
import CofferAdmin
import CofferCore
import CofferPanel
import CofferServer
import CofferService
import CofferStore
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

/// The panel for the people who sign in: two-factor sign-in, roles, the audit log and exports, behind TLS.
extension PanelTests {
    @Test(
        "two-factor sign-in: on with a code from the app; then a wrong code is refused, a code works once, a recovery code once",
        arguments: ServerEngine.allCases)
    func twoFactor(engine: ServerEngine) async throws {
        let store = try await engine.makeStore()
        try await Self.signedIn(store) { client, _, browser in
            // Another session, signed in with the password alone before two-factor was on.
            var earlier = Browser()
            #expect(try await earlier.signIn(client).headers[.location] == "/admin")
            let csrf = try Browser.csrf(try await browser.get(client, "/admin/settings"))
            let setup = String(
                buffer: try await browser.post(client, "/admin/settings/two-factor/begin", [("csrf", csrf)]).body)
            let secret = String(try #require(setup.firstMatch(of: /name="secret" value="([A-Za-z0-9]{20})"/)).1)
            #expect(setup.contains("otpauth://totp/Coffer:ada?secret="))
            // A wrong code turns nothing on.
            let wrong = try await browser.post(
                client, "/admin/settings/two-factor", [("secret", secret), ("code", "000000"), ("csrf", csrf)])
            #expect(wrong.status == .badRequest)
            #expect(try await store.admin(name: "ada")?.hasTwoFactor == false)
            let now = AdminAPITests.now
            let step = TwoFactor.step(at: now)
            let on = String(
                buffer: try await browser.post(
                    client, "/admin/settings/two-factor",
                    [("secret", secret), ("code", TwoFactor.code(secret: secret, step: step - 1)), ("csrf", csrf)]
                ).body)
            let codes = on.matches(of: /<li>([a-z2-7]{4}-[a-z2-7]{4}-[a-z2-7]{4})<\/li>/).map { String($0.1) }
            #expect(codes.count == 10)
            #expect(try await store.admin(name: "ada")?.twoFactorSecret == secret)
            // The password-only session ends; this one goes on.
            #expect(try await earlier.get(client, "/admin").headers[.location] == "/admin/login")
            #expect(try await browser.get(client, "/admin").status == .ok)
            #expect(
                try await store.auditEvents(environment: .sandbox, subject: "admin ada", limit: 5).map(\.action)
                    == ["admin.two-factor.on"])

            // Signing in again: the password opens only the code page.
            _ = try await browser.post(client, "/admin/logout", [("csrf", csrf)])
            let password = try await browser.signIn(client)
            #expect(password.headers[.location] == "/admin/login/code")
            #expect(try await browser.get(client, "/admin").headers[.location] == "/admin/login/code")
            let codePage = try await browser.get(client, "/admin/login/code")
            let codeCsrf = try Browser.csrf(codePage)
            let refused = try await browser.post(client, "/admin/login/code", [("code", "123456"), ("csrf", codeCsrf)])
            #expect(refused.status == .unauthorized && String(buffer: refused.body).contains("not right"))
            // The step used to turn it on does not sign in again; the next one does, once.
            let replay = try await browser.post(
                client, "/admin/login/code",
                [("code", TwoFactor.code(secret: secret, step: step - 1)), ("csrf", codeCsrf)])
            #expect(replay.status == .unauthorized)
            let good = TwoFactor.code(secret: secret, step: step)
            let signedIn = try await browser.post(client, "/admin/login/code", [("code", good), ("csrf", codeCsrf)])
            #expect(signedIn.headers[.location] == "/admin")
            #expect(try await browser.get(client, "/admin").status == .ok)

            // Another sign-in: the same code is used; a recovery code works, once.
            var other = Browser()
            _ = try await other.signIn(client)
            let otherCsrf = try Browser.csrf(try await other.get(client, "/admin/login/code"))
            #expect(
                try await other.post(client, "/admin/login/code", [("code", good), ("csrf", otherCsrf)]).status
                    == .unauthorized)
            let recovered = try await other.post(
                client, "/admin/login/code", [("code", codes[0].uppercased()), ("csrf", otherCsrf)])
            #expect(recovered.headers[.location] == "/admin")
            var third = Browser()
            _ = try await third.signIn(client)
            let thirdCsrf = try Browser.csrf(try await third.get(client, "/admin/login/code"))
            #expect(
                try await third.post(client, "/admin/login/code", [("code", codes[0]), ("csrf", thirdCsrf)]).status
                    == .unauthorized)
            #expect(try await store.admin(name: "ada")?.recoveryCodeHashes.count == 9)

            // Three wrong codes end the half-open session: the password is asked again.
            var guesser = Browser()
            _ = try await guesser.signIn(client)
            let guesserCsrf = try Browser.csrf(try await guesser.get(client, "/admin/login/code"))
            var last: TestResponse?
            for guess in ["111111", "222222", "333333"] {
                last = try await guesser.post(client, "/admin/login/code", [("code", guess), ("csrf", guesserCsrf)])
            }
            #expect(String(buffer: try #require(last).body).contains("Too many wrong codes"))
            #expect(try await guesser.get(client, "/admin/login/code").headers[.location] == "/admin/login")
        }
    }

    @Test(
        "roles: support reads and grants up to its limit; balances, merges, cleanup and admins are an owner's",
        arguments: ServerEngine.allCases)
    func roles(engine: ServerEngine) async throws {
        let store = try await engine.makeStore()
        try await Self.signedIn(store) { client, user, owner in
            // The owner creates a support admin with a limit of 50,000 credits.
            let csrf = try Browser.csrf(try await owner.get(client, "/admin/admins"))
            let created = String(
                buffer: try await owner.post(
                    client, "/admin/admins",
                    [("name", "sam"), ("role", "support"), ("limit", "50,000"), ("csrf", csrf)]
                ).body)
            let password = String(try #require(created.firstMatch(of: /with the password ([A-Za-z0-9]{20})/)).1)
            #expect(try await store.admin(name: "sam")?.grantCeiling == 50_000)
            // The only owner cannot stop being one.
            let demote = try await owner.post(
                client, "/admin/admins/ada/role", [("role", "support"), ("limit", "5"), ("csrf", csrf)])
            #expect(demote.status == .badRequest && String(buffer: demote.body).contains("only owner"))

            var support = Browser()
            #expect(try await support.signIn(client, name: "sam", password: password).headers[.location] == "/admin")
            let page = try await support.get(client, "/admin/users/\(user.supportId)")
            #expect(page.status == .ok)
            let body = String(buffer: page.body)
            #expect(!body.contains("balance-form") && !body.contains("/admin/admins"))
            let samCsrf = try Browser.csrf(page)
            let over = try await support.post(
                client, "/admin/grants",
                [
                    ("supportId", user.supportId), ("credits", "50001"), ("reason", "x"), ("confirm", "yes"),
                    ("csrf", samCsrf),
                ])
            #expect(over.status == .forbidden && String(buffer: over.body).contains("over your grant limit of 50,000"))
            let within = try await support.post(
                client, "/admin/grants",
                [
                    ("supportId", user.supportId), ("credits", "50000"), ("reason", "x"), ("confirm", "yes"),
                    ("csrf", samCsrf),
                ])
            #expect(within.status == .seeOther)
            #expect(
                try await store.grants(environment: .sandbox, recipient: nil, status: nil, limit: 5).map(\.credits) == [
                    50_000
                ])
            for (uri, fields) in [
                ("/admin/users/\(user.supportId)/balance", [("balance", "1"), ("reason", "x"), ("confirm", "yes")]),
                ("/admin/users/\(user.supportId)/merge", [("into", "_abcdef123456")]),
                ("/admin/users/\(user.supportId)/delete", [("confirm", "yes")]),
                ("/admin/grants/delete-all", [("confirm", "yes")]),
                ("/admin/admins", [("name", "eve"), ("role", "owner")]),
                ("/admin/admins/sam/role", [("role", "owner")]),
            ] {
                let refused = try await support.post(client, uri, fields + [("csrf", samCsrf)])
                #expect(refused.status == .forbidden, "\(uri)")
            }
            #expect(try await support.get(client, "/admin/admins").status == .forbidden)
            #expect(try await store.admin(name: "eve") == nil)
            #expect(try await store.admin(name: "sam")?.role == .support)
            #expect(try await store.grants(environment: .sandbox, recipient: nil, status: nil, limit: 5).count == 1)
            // The owner raises the limit; it applies to sam's next request, and counts the day's grants in all.
            _ = try await owner.post(
                client, "/admin/admins/sam/role", [("role", "support"), ("limit", "100000"), ("csrf", csrf)])
            let total = try await support.post(
                client, "/admin/grants",
                [
                    ("supportId", user.supportId), ("credits", "50001"), ("reason", "x"), ("confirm", "yes"),
                    ("csrf", samCsrf),
                ])
            #expect(total.status == .forbidden && String(buffer: total.body).contains("last 24 hours"))
            let raised = try await support.post(
                client, "/admin/grants",
                [
                    ("supportId", user.supportId), ("credits", "50000"), ("reason", "x"), ("confirm", "yes"),
                    ("csrf", samCsrf),
                ])
            #expect(raised.status == .seeOther)
        }
    }

    @Test(
        "the audit log is filtered by admin, customer and action and exported as CSV; a customer's history as CSV and JSON, audited",
        arguments: ServerEngine.allCases)
    func auditAndExports(engine: ServerEngine) async throws {
        let store = try await engine.makeStore()
        try await Self.signedIn(store) { client, user, browser in
            let csrf = try Browser.csrf(try await browser.get(client, "/admin"))
            for (credits, reason) in [("5", "=HYPERLINK(\"http://evil\")"), ("6", "Ticket #2")] {
                _ = try await browser.post(
                    client, "/admin/grants",
                    [
                        ("supportId", user.supportId), ("credits", credits), ("reason", reason), ("confirm", "yes"),
                        ("csrf", csrf),
                    ])
            }
            try await store.recordAudit(
                AuditEvent(
                    environment: .sandbox, actor: "cli:root", action: "key.create", subject: "key",
                    at: AdminAPITests.now))
            let filtered = String(buffer: try await browser.get(client, "/admin/audit?admin=ada&action=grant").body)
            #expect(filtered.components(separatedBy: "<td class=\"mono\">grant.create</td>").count == 3)
            #expect(!filtered.contains("key.create"))
            #expect(filtered.contains(#"href="/admin/audit.csv?admin=ada&amp;action=grant""#))
            let csv = try await browser.get(client, "/admin/audit.csv?admin=ada&action=grant")
            #expect(csv.headers[.contentType] == "text/csv; charset=utf-8")
            #expect(csv.headers[.contentDisposition]?.contains("attachment") == true)
            let text = String(buffer: csv.body)
            #expect(text.hasPrefix("\"at (UTC)\",\"admin\",\"action\""))
            #expect(text.components(separatedBy: "\r\n").count == 4 && !text.contains("key.create"))
            #expect(text.contains("\"grant.create\""))
            let all = String(buffer: try await browser.get(client, "/admin/audit.csv").body)
            #expect(all.contains("key.create"))

            let exportCSV = try await browser.get(client, "/admin/users/\(user.supportId)/export.csv")
            let timeline = String(buffer: exportCSV.body)
            #expect(exportCSV.headers[.contentDisposition] == "attachment; filename=\"coffer-\(user.supportId).csv\"")
            // A reason that is a formula stays inside its quoted field, its quotes doubled, never a field's start.
            #expect(timeline.contains(#"granted 5 credits: =HYPERLINK(""http://evil"")""#))
            #expect(!timeline.contains(#","=HYPERLINK"#))
            let exportJSON = try await browser.get(client, "/admin/users/\(user.supportId)/export.json")
            let decoder = JSONDecoder()
            decoder.dateDecodingStrategy = .iso8601
            let detail = try decoder.decode(UserDetail.self, from: Data(buffer: exportJSON.body))
            #expect(detail.user.supportId == user.supportId && detail.grants.count == 2)
            let exports = try await store.auditEvents(
                environment: .sandbox, query: AuditQuery(subject: user.supportId, action: "customer.export"), limit: 5)
            #expect(exports.count == 2)
            #expect(try await browser.get(client, "/admin/users/_000000000000/export.json").status == .notFound)
            let tooLong = try await browser.get(client, "/admin/audit?admin=" + String(repeating: "a", count: 201))
            #expect(tooLong.status == .badRequest)
        }
    }

    @Test(
        "the dashboard's Apple card: no notification yet, then the last one and the week's by type, refusals on this instance, recovery",
        arguments: ServerEngine.allCases)
    func appleHealth(engine: ServerEngine) async throws {
        let store = try await engine.makeStore()
        try await Self.signedIn(store) { client, _, browser in
            var card = String(buffer: try await browser.get(client, "/admin").body)
            #expect(card.contains("No notification from Apple yet"))
            #expect(card.contains("None refused on this instance"))
            #expect(card.contains("Off: without the App Store Server API key"))
            let now = AdminAPITests.now
            for (index, type) in ["DID_RENEW", "DID_RENEW", "REFUND"].enumerated() {
                #expect(
                    try await store.recordNotification(
                        NotificationRecord(
                            uuid: "n-\(index)", environment: .sandbox, type: type, signedDate: now,
                            receivedAt: now.addingTimeInterval(Double(index - 3) * 3_600), outcome: .logged)))
            }
            #expect(
                try await store.recordNotification(
                    NotificationRecord(
                        uuid: "old", environment: .sandbox, type: "TEST", signedDate: now,
                        receivedAt: now.addingTimeInterval(-8 * 86_400), outcome: .logged)))
            // Something that is not Apple's signed data, posted to Apple's route: refused and counted.
            let forged = try await client.execute(
                uri: "/v1/apple/notifications", method: .post, headers: [.contentType: "application/json"],
                body: ByteBuffer(string: #"{"signedPayload": "a.b.c"}"#))
            #expect(forged.status == .unprocessableContent)
            card = String(buffer: try await browser.get(client, "/admin").body)
            #expect(card.contains("REFUND at ") && card.contains("1 hours ago, from Apple"))
            #expect(card.contains("DID_RENEW 2") && card.contains("REFUND 1") && !card.contains("TEST 1"))
            #expect(!card.contains("apple-quiet"))
            #expect(card.contains("1 refused on this instance"))
        }
    }

    @Test(
        "a customer's page shows subscriptions by group with their state and the wallet in words",
        arguments: ServerEngine.allCases)
    func subscriptions(engine: ServerEngine) async throws {
        let store = try await engine.makeStore()
        try await Self.signedIn(store) { client, user, browser in
            let owner = try #require(await storeUser(store, user))
            let fact = TransactionFact(
                transactionId: "2000000555", productId: "com.example.pro.monthly",
                purchaseDate: AdminAPITests.now.addingTimeInterval(-86_400),
                expiresDate: AdminAPITests.now.addingTimeInterval(29 * 86_400), environment: .sandbox)
            _ = try await store.apply(
                LedgerRequest(
                    owner: owner.id, environment: .sandbox, event: .purchase(fact, credits: 0), at: AdminAPITests.now))
            _ = try await store.saveRenewalState(
                RenewalState(
                    originalTransactionId: "2000000555", environment: .sandbox, owner: owner.id, autoRenews: false,
                    signedDate: AdminAPITests.now))
            let page = String(buffer: try await browser.get(client, "/admin/users/\(user.supportId)").body)
            #expect(page.contains("<td>pro</td><td>Pro, monthly</td>"))
            #expect(page.contains(#"<span class="tag expiring">expiring</span>"#))
            #expect(page.contains("Set not to renew: access ends at"))
            #expect(page.contains("The app keeps the balance on the device and has not backed it up here yet"))
        }
    }

    @Test("behind TLS the session cookie is Secure with the __Host- prefix")
    func secureCookies() async throws {
        let store = InMemoryStore()
        try await Self.admin(in: store)
        var panel = PanelConfiguration()
        panel.secureCookies = true
        let setup = try Fixture.Setup(store: store, panel: panel)
        try await setup.app.test(.router) { client in
            var browser = Browser()
            let response = try await browser.signIn(client)
            let cookie = try #require(
                response.headers[values: .setCookie].first { $0.hasPrefix("__Host-coffer-session=") })
            // Attributes come in any order.
            let attributes = Set(cookie.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) })
            #expect(attributes.isSuperset(of: ["Secure", "Path=/", "HttpOnly", "SameSite=Strict"]))
            #expect(try await browser.get(client, "/admin").status == .ok)
        }
    }
}
