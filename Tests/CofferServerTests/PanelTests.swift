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
import NIOCore
import Testing

/// The admin panel over HTTP: sign-in, sessions, CSRF, throttling, environments. (The browser run in
/// Tests/Browser drives the same pages in Chromium.)
@Suite("Admin panel", .timeLimit(.minutes(1)))
struct PanelTests {
    typealias Fixture = ClientAPITests
    static let password = "correct horse battery"

    /// A browser's cookie jar, just enough for the panel.
    struct Browser {
        var cookies: [String: String] = [:]
        /// Headers sent with every request (an `X-Forwarded-For` from a proxy, say).
        var extra: HTTPFields = [:]

        var header: HTTPFields {
            var fields = extra
            if !cookies.isEmpty { fields[.cookie] = cookies.map { "\($0.key)=\($0.value)" }.joined(separator: "; ") }
            return fields
        }

        mutating func keep(_ response: TestResponse) {
            for line in response.headers[values: .setCookie] {
                let pair = line.split(separator: ";")[0].split(separator: "=", maxSplits: 1)
                let value = pair.count > 1 ? String(pair[1]) : ""
                cookies[String(pair[0])] = value.isEmpty ? nil : value
            }
        }

        mutating func get(_ client: some TestClientProtocol, _ uri: String) async throws -> TestResponse {
            let response = try await client.execute(uri: uri, method: .get, headers: header)
            keep(response)
            return response
        }

        mutating func post(_ client: some TestClientProtocol, _ uri: String, _ fields: [(String, String)]) async throws
            -> TestResponse
        {
            var headers = header
            headers[.contentType] = "application/x-www-form-urlencoded"
            let body = fields.map { "\($0.0)=\(Self.escape($0.1))" }.joined(separator: "&")
            let response = try await client.execute(
                uri: uri, method: .post, headers: headers, body: ByteBuffer(string: body))
            keep(response)
            return response
        }

        static func escape(_ text: String) -> String {
            text.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? text
        }

        /// The value of a hidden `csrf` field on a page.
        static func csrf(_ response: TestResponse) throws -> String {
            let page = String(buffer: response.body)
            let match = try #require(page.firstMatch(of: /name="csrf" value="([^"]+)"/))
            return String(match.1)
        }

        /// Signs in and returns the session's CSRF token.
        mutating func signIn(
            _ client: some TestClientProtocol, name: String = "ada", password: String = PanelTests.password
        ) async throws -> TestResponse {
            let form = try await get(client, "/admin/login")
            return try await post(
                client, "/admin/login", [("csrf", try Self.csrf(form)), ("name", name), ("password", password)])
        }
    }

    static func admin(in store: any CofferStore) async throws {
        try await store.createAdmin(
            Admin(
                name: "ada", passwordHash: await PasswordHasher(cost: 4).hash(password),
                createdAt: AdminAPITests.now))
    }

    @Test(
        "sign-in: no session redirects; the form needs its token; wrong passwords refused; HttpOnly SameSite=Strict; sign-out",
        arguments: ServerEngine.allCases)
    func signIn(engine: ServerEngine) async throws {
        let store = try await engine.makeStore()
        try await Self.admin(in: store)
        let setup = try Fixture.Setup(store: store)
        try await setup.app.test(.router) { client in
            var browser = Browser()
            for page in ["/admin", "/admin/users", "/admin/grants", "/admin/audit"] {
                let response = try await browser.get(client, page)
                #expect(response.status == .seeOther && response.headers[.location] == "/admin/login")
            }
            let login = try await browser.get(client, "/admin/login")
            #expect(String(buffer: login.body).contains("answers only on this machine"))
            let noToken = try await client.execute(
                uri: "/admin/login", method: .post, headers: [.contentType: "application/x-www-form-urlencoded"],
                body: ByteBuffer(string: "name=ada&password=\(Browser.escape(Self.password))"))
            #expect(noToken.status == .forbidden)
            let wrong = try await browser.signIn(client, password: "wrong password!")
            #expect(wrong.status == .unauthorized)
            #expect(String(buffer: wrong.body).contains("Wrong name or password"))
            #expect(browser.cookies["coffer-session"] == nil)

            let right = try await browser.signIn(client)
            #expect(right.status == .seeOther && right.headers[.location] == "/admin")
            let cookie = try #require(right.headers[values: .setCookie].first { $0.hasPrefix("coffer-session=") })
            let attributes = Set(cookie.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) })
            #expect(attributes.isSuperset(of: ["HttpOnly", "SameSite=Strict", "Path=/admin"]))
            #expect(!attributes.contains("Secure"))
            let dashboard = try await browser.get(client, "/admin")
            #expect(dashboard.status == .ok)
            #expect(String(buffer: dashboard.body).contains(#"id="environment">Sandbox<"#))
            #expect(dashboard.headers[.contentSecurityPolicy]?.contains("default-src 'none'") == true)

            let csrf = try Browser.csrf(dashboard)
            let out = try await browser.post(client, "/admin/logout", [("csrf", csrf)])
            #expect(out.headers[.location] == "/admin/login")
            #expect(try await browser.get(client, "/admin").status == .seeOther)
        }
    }

    @Test(
        "every form needs the session's CSRF token: without it nothing changes; with it the grant and its audit land",
        arguments: ServerEngine.allCases)
    func csrf(engine: ServerEngine) async throws {
        let store = try await engine.makeStore()
        try await Self.signedIn(store) { client, user, browser in
            let grant = [("supportId", user.supportId), ("credits", "400000"), ("reason", "Ticket #42")]
            #expect(try await browser.post(client, "/admin/grants", grant).status == .forbidden)
            #expect(try await browser.post(client, "/admin/grants", grant + [("csrf", "guess")]).status == .forbidden)
            let forged = try await browser.post(
                client, "/admin/users/\(user.supportId)/balance",
                [("balance", "1"), ("reason", "x"), ("csrf", "")])
            #expect(forged.status == .forbidden)
            #expect(try await store.grants(environment: .sandbox, recipient: nil, status: nil, limit: 10).isEmpty)
            #expect(
                try await store.backup(owner: try #require(await storeUser(store, user)).id, environment: .sandbox)
                    == nil)

            let csrf = try Browser.csrf(try await browser.get(client, "/admin/grants"))
            // First the confirmation page, which changes nothing; then the grant.
            let confirm = try await browser.post(client, "/admin/grants", grant + [("csrf", csrf)])
            #expect(confirm.status == .ok && String(buffer: confirm.body).contains("Grant 400,000 credits to"))
            #expect(try await store.grants(environment: .sandbox, recipient: nil, status: nil, limit: 10).isEmpty)
            let created = try await browser.post(client, "/admin/grants", grant + [("confirm", "yes"), ("csrf", csrf)])
            #expect(created.status == .seeOther)
            let grants = try await store.grants(environment: .sandbox, recipient: nil, status: nil, limit: 10)
            #expect(grants.map(\.credits) == [400_000] && grants.first?.createdBy.hasPrefix("ada from ") == true)
            let audit = try await store.auditEvents(environment: .sandbox, subject: nil, limit: 10)
            #expect(audit.map(\.action) == ["grant.create"] && audit.first?.actor.hasPrefix("ada from ") == true)

            // Bad input comes back to the form with a reason and changes nothing.
            let bad = try await browser.post(
                client, "/admin/grants",
                [
                    ("supportId", user.supportId), ("credits", "lots"), ("reason", "x"),
                    ("csrf", csrf),
                ])
            #expect(bad.status == .badRequest && String(buffer: bad.body).contains("whole number"))
            let script = try await browser.post(
                client, "/admin/grants",
                [
                    ("supportId", "<script>alert(1)</script>"), ("credits", "5"),
                    ("reason", "x"), ("csrf", csrf),
                ])
            #expect(script.status == .badRequest)
            #expect(!String(buffer: script.body).contains("<script>"))
            #expect(try await store.grants(environment: .sandbox, recipient: nil, status: nil, limit: 10).count == 1)
        }
    }

    /// Runs `body` with an admin signed in and one customer, on a server over `store`.
    static func signedIn(
        _ store: any CofferStore, server environment: AppStoreEnvironment = .sandbox,
        _ body: @Sendable (any TestClientProtocol, CreateUserResponse, inout Browser) async throws -> Void
    ) async throws {
        try await admin(in: store)
        let setup = try Fixture.Setup(store: store, environment: environment)
        try await setup.app.test(.router) { client in
            let user = try Fixture.decode(
                CreateUserResponse.self, try await client.execute(uri: "/v1/users", method: .post))
            var browser = Browser()
            _ = try await browser.signIn(client)
            try await body(client, user, &browser)
        }
    }

    func storeUser(_ store: any CofferStore, _ user: CreateUserResponse) async throws -> User? {
        try await store.user(supportId: try #require(SupportID(user.supportId)), environment: .sandbox)
    }

    @Test("sign-ins are throttled per account: after 5 failures even the right password waits")
    func throttle() async throws {
        let store = InMemoryStore()
        try await Self.admin(in: store)
        let setup = try Fixture.Setup(store: store)
        try await setup.app.test(.router) { client in
            var browser = Browser()
            for _ in 0..<5 {
                #expect(try await browser.signIn(client, password: "guess guess guess").status == .unauthorized)
            }
            let waiting = try await browser.signIn(client)
            #expect(waiting.status == .tooManyRequests)
            #expect(String(buffer: waiting.body).contains("Too many failed sign-ins"))
            #expect(browser.cookies["coffer-session"] == nil)
        }
    }

    @Test("an expired session is sent to sign-in and removed")
    func expiry() async throws {
        let store = InMemoryStore()
        try await Self.admin(in: store)
        let admin = try #require(try await store.admin(name: "ada"))
        let token = Secrets.random()
        try await store.createSession(
            AdminSession(
                tokenHash: Secrets.hash(token), adminId: admin.id, adminName: "ada", csrfToken: "c",
                environment: .sandbox, createdAt: Fixture.start, expiresAt: AdminAPITests.now.addingTimeInterval(-1)))
        let setup = try Fixture.Setup(store: store)
        try await setup.app.test(.router) { client in
            let response = try await client.execute(
                uri: "/admin", method: .get, headers: [.cookie: "coffer-session=\(token)"])
            #expect(response.status == .seeOther && response.headers[.location] == "/admin/login")
        }
        #expect(try await store.session(tokenHash: Secrets.hash(token)) == nil)
    }

    @Test(
        "environments: Production needs a confirmation, shows no Sandbox data, and never bulk-deletes grants",
        arguments: ServerEngine.allCases)
    func environments(engine: ServerEngine) async throws {
        let store = try await engine.makeStore()
        try await Self.signedIn(store) { client, user, browser in
            let csrf = try Browser.csrf(try await browser.get(client, "/admin"))
            _ = try await browser.post(
                client, "/admin/grants",
                [
                    ("supportId", user.supportId), ("credits", "5"), ("reason", "test"), ("confirm", "yes"),
                    ("csrf", csrf),
                ])
            // Without the confirmation the switch only leads to the confirmation page.
            let unconfirmed = try await browser.post(
                client, "/admin/environment", [("environment", "Production"), ("csrf", csrf)])
            #expect(unconfirmed.headers[.location] == "/admin/environment?to=Production")
            let confirm = try await browser.get(client, "/admin/environment?to=Production")
            #expect(String(buffer: confirm.body).contains("Switch to Production?"))
            // Each page's title is its template's own words, in the layout's frame.
            #expect(String(buffer: confirm.body).contains("<title>Switch to Production · Coffer Sandbox</title>"))
            _ = try await browser.post(
                client, "/admin/environment", [("environment", "Production"), ("confirm", "yes"), ("csrf", csrf)])
            let users = try await browser.get(client, "/admin/users")
            #expect(String(buffer: users.body).contains(#"id="environment">Production<"#))
            #expect(String(buffer: users.body).contains("<title>Users · Coffer Production</title>"))
            // A redirect's notice names one of the panel's own; the standing notes and any other text show nothing.
            let saved = String(buffer: try await browser.get(client, "/admin/settings?notice=settings").body)
            #expect(saved.contains(#"id="notice">Settings saved.<"#))
            for forged in ["twoFactorOn", "sandboxMarkedView", "%3Cb%3Ehi%3C%2Fb%3E"] {
                let page = String(buffer: try await browser.get(client, "/admin/settings?notice=\(forged)").body)
                #expect(!page.contains(#"id="notice""#))
            }
            #expect(!String(buffer: users.body).contains(user.supportId))
            #expect(!String(buffer: try await browser.get(client, "/admin/grants").body).contains("delete-all"))
            let refused = try await browser.post(
                client, "/admin/grants/delete-all", [("confirm", "yes"), ("csrf", csrf)])
            #expect(refused.status == .forbidden)
            #expect(try await store.grants(environment: .sandbox, recipient: nil, status: nil, limit: 10).count == 1)

            _ = try await browser.post(client, "/admin/environment", [("environment", "Sandbox"), ("csrf", csrf)])
            let confirmDelete = try await browser.get(client, "/admin/grants/delete-all")
            #expect(String(buffer: confirmDelete.body).contains("Delete every Sandbox grant?"))
            let deleted = try await browser.post(
                client, "/admin/grants/delete-all", [("confirm", "yes"), ("csrf", csrf)])
            #expect(deleted.headers[.location] == "/admin/grants?notice=deleted")
            #expect(try await store.grants(environment: .sandbox, recipient: nil, status: nil, limit: 10).isEmpty)
        }
    }

    @Test(
        "Production pages mark App Review's sandbox purchases and leave them out of the dashboard's figures",
        arguments: ServerEngine.allCases)
    func sandboxDataInProduction(engine: ServerEngine) async throws {
        let store = try await engine.makeStore()
        let reviewer = User(
            environment: .production, supportId: try #require(SupportID("_abcdef123456")), tokenHash: "reviewer",
            createdAt: AdminAPITests.now)
        try await store.createUser(reviewer)
        var fact = TransactionFact(
            transactionId: "2000000111", productId: "com.example.credits.400k", purchaseDate: AdminAPITests.now,
            environment: .sandbox)
        _ = try await store.apply(
            LedgerRequest(
                owner: reviewer.id, environment: .production, event: .purchase(fact, credits: 400),
                at: AdminAPITests.now))
        fact.environment = .production
        fact.transactionId = "1000000222"
        _ = try await store.apply(
            LedgerRequest(
                owner: reviewer.id, environment: .production, event: .purchase(fact, credits: 400),
                at: AdminAPITests.now))
        try await Self.signedIn(store) { client, _, browser in
            let csrf = try Browser.csrf(try await browser.get(client, "/admin"))
            _ = try await browser.post(
                client, "/admin/environment", [("environment", "Production"), ("confirm", "yes"), ("csrf", csrf)])
            let dashboard = String(buffer: try await browser.get(client, "/admin").body)
            #expect(dashboard.contains(#"id="purchases-count">1<"#))
            #expect(dashboard.contains(#"id="other-purchases">1<"#))
            #expect(dashboard.contains(#"id="other-credits">400<"#))
            let page = String(buffer: try await browser.get(client, "/admin/users/_abcdef123456").body)
            // One badge in the purchases, one in the timeline: the sandbox purchase only.
            #expect(page.components(separatedBy: #"<span class="tag environment""#).count == 3)
            #expect(page.contains("transaction 2000000111, Sandbox data: App Review or TestFlight"))
            #expect(page.contains("(transaction 1000000222)"))
        }
    }

    @Test(
        "the customer page shows prices and Apple's refund reason; the dashboard shows the money",
        arguments: ServerEngine.allCases)
    func money(engine: ServerEngine) async throws {
        let store = try await engine.makeStore()
        try await Self.signedIn(store) { client, user, browser in
            let supportId = try #require(SupportID(user.supportId))
            let owner = try #require(try await store.user(supportId: supportId, environment: .sandbox)).id
            for (id, price, currency) in [("2000000001", 4_990, "EUR"), ("2000000002", 120_000, "JPY")] {
                let fact = TransactionFact(
                    transactionId: id, productId: "com.example.credits.400k", purchaseDate: AdminAPITests.now,
                    price: Int64(price), currency: currency, storefront: "FRA")
                _ = try await store.apply(
                    LedgerRequest(
                        owner: owner, environment: .sandbox, event: .purchase(fact, credits: 400),
                        at: AdminAPITests.now))
            }
            let refund = TransactionFact(
                transactionId: "2000000001", productId: "com.example.credits.400k", purchaseDate: AdminAPITests.now,
                revocationDate: AdminAPITests.now, revocationReason: 1)
            _ = try await store.apply(
                LedgerRequest(owner: owner, environment: .sandbox, event: .revocation(refund), at: AdminAPITests.now))
            let page = String(buffer: try await browser.get(client, "/admin/users/\(user.supportId)").body)
            #expect(page.contains("4.99 EUR"))
            #expect(page.contains("120 JPY"))
            #expect(page.contains("Apple refunded because of an issue in the app"))
            #expect(page.contains(#"<span class="tag refunded">refunded</span>"#))
            let dashboard = String(buffer: try await browser.get(client, "/admin").body)
            #expect(dashboard.contains("<td>EUR</td><td class=\"num\">1</td><td class=\"num\">4.99 EUR</td>"))
            #expect(dashboard.contains("<td class=\"num\">0.00 EUR</td>"))  // net: refunded in full
            #expect(dashboard.contains(#"id="refund-rate">50.0%"#))
        }
    }

    @Test(
        "deleting a customer at their request: a confirmation first, then once; the page says so and offers nothing more",
        arguments: ServerEngine.allCases)
    func deleteCustomer(engine: ServerEngine) async throws {
        let store = try await engine.makeStore()
        try await Self.signedIn(store) { client, user, browser in
            let page = try await browser.get(client, "/admin/users/\(user.supportId)")
            #expect(String(buffer: page.body).contains(#"id="delete-button""#))
            let csrf = try Browser.csrf(page)
            let confirm = try await browser.post(client, "/admin/users/\(user.supportId)/delete", [("csrf", csrf)])
            #expect(String(buffer: confirm.body).contains("Delete \(user.supportId) at the customer&#39;s request?"))
            let supportId = try #require(SupportID(user.supportId))
            #expect(try await store.user(supportId: supportId, environment: .sandbox)?.deletedAt == nil)
            let done = try await browser.post(
                client, "/admin/users/\(user.supportId)/delete", [("confirm", "yes"), ("csrf", csrf)])
            #expect(
                done.status == .seeOther
                    && done.headers[.location] == "/admin/users/\(user.supportId)?notice=customer-deleted")
            #expect(try await store.user(supportId: supportId, environment: .sandbox)?.deletedAt == AdminAPITests.now)
            let me = try await client.execute(uri: "/v1/me", method: .get, headers: ClientAPITests.bearer(user.token))
            #expect(me.status == .unauthorized)
            let after = String(buffer: try await browser.get(client, "/admin/users/\(user.supportId)").body)
            #expect(after.contains(#"id="deleted""#) && !after.contains(#"id="grant-form""#))
            #expect(!after.contains(#"id="delete-button""#))
            let users = String(buffer: try await browser.get(client, "/admin/users").body)
            #expect(users.contains("deleted</span>"))
            let again = try await browser.post(
                client, "/admin/users/\(user.supportId)/delete", [("confirm", "yes"), ("csrf", csrf)])
            #expect(again.status == .badRequest)
            #expect(
                try await store.auditEvents(environment: .sandbox, subject: user.supportId, limit: 10).map(\.action)
                    == ["customer.delete"])
        }
    }

    @Test(
        "merging an anonymous customer into an Apple account's: a confirmation first, then once, shown on both pages",
        arguments: ServerEngine.allCases)
    func merge(engine: ServerEngine) async throws {
        let store = try await engine.makeStore()
        let account = User(
            environment: .sandbox, supportId: try #require(SupportID("_abcdef123456")), tokenHash: "account",
            createdAt: AdminAPITests.now,
            appleAccount: AppleAccount(appTransactionId: "705000000000009", environment: .sandbox))
        try await store.createUser(account)
        try await Self.signedIn(store) { client, user, browser in
            let page = try await browser.get(client, "/admin/users/\(user.supportId)")
            #expect(String(buffer: page.body).contains("Anonymous install"))
            let csrf = try Browser.csrf(page)
            let confirm = try await browser.post(
                client, "/admin/users/\(user.supportId)/merge",
                [("into", "_abcdef123456"), ("overrideReason", "Ticket #9"), ("csrf", csrf)])
            #expect(String(buffer: confirm.body).contains("Merge \(user.supportId) into _abcdef123456?"))
            #expect(try await store.user(id: account.id)?.mergedInto == nil)
            #expect(
                try await store.user(supportId: try #require(SupportID(user.supportId)), environment: .sandbox)?
                    .mergedInto == nil)
            // Without the customer's code or an override's reason, nothing happens.
            let unconsented = try await browser.post(
                client, "/admin/users/\(user.supportId)/merge",
                [("into", "_abcdef123456"), ("confirm", "yes"), ("csrf", csrf)])
            #expect(unconsented.status == .badRequest)
            #expect(String(buffer: unconsented.body).contains("a merge needs the customer&#39;s word"))
            let done = try await browser.post(
                client, "/admin/users/\(user.supportId)/merge",
                [("into", "_abcdef123456"), ("overrideReason", "Ticket #9"), ("confirm", "yes"), ("csrf", csrf)])
            #expect(done.status == .seeOther && done.headers[.location] == "/admin/users/_abcdef123456?notice=merged")
            let accountPage = String(buffer: try await browser.get(client, "/admin/users/_abcdef123456").body)
            #expect(accountPage.contains("Apple account customer") && accountPage.contains("merge"))
            let mergedPage = String(buffer: try await browser.get(client, "/admin/users/\(user.supportId)").body)
            #expect(mergedPage.contains("Merged into _abcdef123456") && !mergedPage.contains("merge-form"))
            let again = try await browser.post(
                client, "/admin/users/\(user.supportId)/merge",
                [("into", "_abcdef123456"), ("overrideReason", "Ticket #9"), ("confirm", "yes"), ("csrf", csrf)])
            #expect(again.status == .badRequest && String(buffer: again.body).contains("merged already"))
            #expect(try await store.auditEvents(environment: .sandbox, subject: "_abcdef123456", limit: 5).count == 1)
        }
    }

    @Test(
        "grants and balance edits show the balance before and after first; a balance that moved meanwhile is refused",
        arguments: ServerEngine.allCases)
    func confirmations(engine: ServerEngine) async throws {
        let store = try await engine.makeStore()
        try await Self.signedIn(store) { client, user, browser in
            let page = try await browser.get(client, "/admin/users/\(user.supportId)")
            let csrf = try Browser.csrf(page)
            let grant = [
                ("supportId", user.supportId), ("credits", "1,200,000"), ("reason", "Ticket #9"), ("back", "user"),
                ("csrf", csrf),
            ]
            let confirm = String(buffer: try await browser.post(client, "/admin/grants", grant).body)
            #expect(confirm.contains("Grant 1,200,000 credits to \(user.supportId)?"))
            #expect(confirm.contains(#"id="before">0<"#) && confirm.contains(#"id="after"><b>1,200,000</b>"#))
            #expect(confirm.contains(#"name="credits" value="1200000""#))
            #expect(try await store.grants(environment: .sandbox, recipient: nil, status: nil, limit: 10).isEmpty)
            // The confirmation sent twice (a retry after a lost answer) makes one grant.
            let grantId = try #require(confirm.firstMatch(of: /name="grantId" value="([0-9a-f-]+)"/)?.1)
            let confirmed = grant + [("confirm", "yes"), ("grantId", String(grantId))]
            #expect(try await browser.post(client, "/admin/grants", confirmed).status == .seeOther)
            #expect(try await browser.post(client, "/admin/grants", confirmed).status == .seeOther)
            let made = try await store.grants(environment: .sandbox, recipient: nil, status: nil, limit: 10)
            #expect(made.map(\.id.uuidString.localizedLowercase) == [String(grantId)])
            let badGrouping = try await browser.post(
                client, "/admin/grants",
                [("supportId", user.supportId), ("credits", "1,20,000"), ("reason", "x"), ("csrf", csrf)])
            #expect(badGrouping.status == .badRequest)

            // The balance (the device wallet: an admin backup): 0 now; the page shows 0 -> 5,000, and the confirmed
            // edit lands.
            let balance = [("balance", "5 000"), ("reason", "Ticket #10"), ("csrf", csrf)]
            let uri = "/admin/users/\(user.supportId)/balance"
            let check = String(buffer: try await browser.post(client, uri, balance).body)
            #expect(check.contains("Set the balance of \(user.supportId) to 5,000?"))
            #expect(check.contains(#"id="before">0<"#) && check.contains(#"id="after"><b>5,000</b>"#))
            #expect(check.contains(#"name="expected" value="0""#))
            let owner = try #require(await storeUser(store, user))
            #expect(try await store.backup(owner: owner.id, environment: .sandbox) == nil)
            let done = try await browser.post(client, uri, balance + [("expected", "0"), ("confirm", "yes")])
            #expect(done.status == .seeOther)
            #expect(try await store.backup(owner: owner.id, environment: .sandbox)?.value == 5_000)
            // Confirmed against a balance that has moved since (5,000 now, not 0): refused, nothing changed.
            let stale = try await browser.post(
                client, uri,
                [("balance", "7000"), ("reason", "x"), ("expected", "0"), ("confirm", "yes"), ("csrf", csrf)])
            #expect(stale.status == .conflict && String(buffer: stale.body).contains("changed since"))
            #expect(try await store.backup(owner: owner.id, environment: .sandbox)?.value == 5_000)
            let shown = String(buffer: try await browser.get(client, "/admin/users/\(user.supportId)").body)
            #expect(shown.contains(#"id="backup">5,000<"#))
            #expect(shown.contains("set the backed-up balance to 5,000"))
        }
    }

    @Test(
        "a pending grant is cancelled after a confirmation, in Production too, audited; the app's claim then answers grant-cancelled; a claimed grant is refused",
        arguments: ServerEngine.allCases)
    func cancelGrant(engine: ServerEngine) async throws {
        let store = try await engine.makeStore()
        try await Self.signedIn(store) { client, user, browser in
            let csrf = try Browser.csrf(try await browser.get(client, "/admin"))
            _ = try await browser.post(
                client, "/admin/environment", [("environment", "Production"), ("confirm", "yes"), ("csrf", csrf)])
            let customer = User(
                environment: .production, supportId: try #require(SupportID("_abcdef123456")), tokenHash: "customer",
                createdAt: AdminAPITests.now)
            try await store.createUser(customer)
            func grant(_ credits: Int64) async throws -> Grant {
                let grant = Grant(
                    environment: .production, recipient: customer.id, credits: credits, reason: "Ticket #3",
                    createdBy: "ada", createdAt: AdminAPITests.now)
                try await store.createGrant(grant)
                return grant
            }
            let mistaken = try await grant(120_000)
            let claimed = try await grant(5)
            _ = try await store.claimGrant(
                id: claimed.id, recipient: customer.id, environment: .production, crediting: .collect,
                at: AdminAPITests.now)
            let page = String(buffer: try await browser.get(client, "/admin/users/_abcdef123456").body)
            #expect(page.contains(#"action="/admin/grants/\#(mistaken.id.uuidString.lowercased())/cancel""#))
            #expect(!page.contains(#"action="/admin/grants/\#(claimed.id.uuidString.lowercased())/cancel""#))

            let uri = "/admin/grants/\(mistaken.id.uuidString.lowercased())/cancel"
            let confirm = String(buffer: try await browser.post(client, uri, [("back", "user"), ("csrf", csrf)]).body)
            #expect(confirm.contains("Cancel the grant of 120,000 credits to _abcdef123456?"))
            #expect(try await store.grant(id: mistaken.id, environment: .production)?.status == .pending)
            let done = try await browser.post(client, uri, [("back", "user"), ("confirm", "yes"), ("csrf", csrf)])
            #expect(done.headers[.location] == "/admin/users/_abcdef123456?notice=cancelled")
            #expect(try await store.grant(id: mistaken.id, environment: .production)?.status == .cancelled)
            let audit = try await store.auditEvents(environment: .production, subject: "_abcdef123456", limit: 5)
            #expect(audit.map(\.action) == ["grant.cancel"] && audit.first?.actor.hasPrefix("ada from ") == true)
            let after = String(buffer: try await browser.get(client, "/admin/users/_abcdef123456").body)
            #expect(after.contains("cancelled the grant of 120,000 credits before the app claimed it"))

            #expect(try await store.wallet(owner: customer.id, environment: .production).balance == 5)

            let claimedUri = "/admin/grants/\(claimed.id.uuidString.lowercased())/cancel"
            let refused = try await browser.post(client, claimedUri, [("confirm", "yes"), ("csrf", csrf)])
            #expect(refused.status == .badRequest && String(buffer: refused.body).contains("new adjustment"))
            #expect(try await store.grant(id: claimed.id, environment: .production)?.status == .claimed)
            #expect(try await store.auditEvents(environment: .production, subject: nil, limit: 5).count == 1)

            // In this (Sandbox) server's own environment, the app's claim of a cancelled grant: refused (409
            // grant-cancelled), nothing credited; the app's list of pending grants no longer has it.
            _ = try await browser.post(client, "/admin/environment", [("environment", "Sandbox"), ("csrf", csrf)])
            let owner = try #require(await storeUser(store, user))
            let sandboxGrant = Grant(
                environment: .sandbox, recipient: owner.id, credits: 7, reason: "Ticket #4", createdBy: "ada",
                createdAt: AdminAPITests.now)
            try await store.createGrant(sandboxGrant)
            let id = sandboxGrant.id.uuidString.lowercased()
            _ = try await browser.post(client, "/admin/grants/\(id)/cancel", [("confirm", "yes"), ("csrf", csrf)])
            let bearer: HTTPFields = [.authorization: "Bearer \(user.token)"]
            let claim = try await client.execute(uri: "/v1/me/grants/\(id)/claim", method: .post, headers: bearer)
            #expect(claim.status == .conflict && String(buffer: claim.body).contains("grant-cancelled"))
            #expect(try await store.wallet(owner: owner.id, environment: .sandbox).balance == 0)
            let pending = try await client.execute(uri: "/v1/me/grants?status=pending", method: .get, headers: bearer)
            #expect(String(buffer: pending.body) == #"{"grants":[]}"#)
            let cancelled = try await client.execute(
                uri: "/v1/me/grants?status=cancelled", method: .get, headers: bearer)
            #expect(String(buffer: cancelled.body).contains(#""cancelledAt""#))
        }
    }

    @Test("times show in UTC with the admin's own time zone beside them; a zone the server does not know is refused")
    func timeZones() async throws {
        let store = InMemoryStore()
        try await Self.signedIn(store) { client, user, browser in
            let settings = try await browser.get(client, "/admin/settings")
            let csrf = try Browser.csrf(settings)
            #expect(String(buffer: settings.body).contains("<option selected>UTC</option>"))
            let saved = try await browser.post(
                client, "/admin/settings", [("timeZone", "Asia/Tokyo"), ("csrf", csrf)])
            #expect(saved.headers[.location] == "/admin/settings?notice=settings")
            #expect(try await store.admin(name: "ada")?.timeZone == "Asia/Tokyo")
            let page = String(buffer: try await browser.get(client, "/admin/users").body)
            // Created at AdminAPITests.now: the UTC time with Tokyo's (UTC+9) beside it.
            #expect(page.contains(PanelText.time(AdminAPITests.now, in: TimeZone(identifier: "Asia/Tokyo"))))
            #expect(page.contains("Asia/Tokyo"))
            let refused = try await browser.post(
                client, "/admin/settings", [("timeZone", "Mars/Olympus_Mons"), ("csrf", csrf)])
            #expect(refused.status == .badRequest)
            #expect(try await store.admin(name: "ada")?.timeZone == "Asia/Tokyo")
            _ = try await browser.post(client, "/admin/settings", [("timeZone", "UTC"), ("csrf", csrf)])
            #expect(try await store.admin(name: "ada")?.timeZone == nil)
            _ = user
        }
    }
}
