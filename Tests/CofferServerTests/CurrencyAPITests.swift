import CofferAPI
import CofferAdmin
import CofferCore
import CofferServer
import CofferStore
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

/// A catalog of several currencies through the server (issue 39): a purchase delivers each currency it gives once,
/// `GET /v1/me` answers every balance and deficit, a spend names its currency, and a refund takes back each
/// currency (what was spent becoming that currency's deficit) until a reversal restores it.
@Suite("Several currencies through the API")
struct CurrencyAPITests {
    static let (coins, gems) = (Currency(rawValue: "coins")!, Currency(rawValue: "gems")!)

    static func catalog() throws -> Catalog {
        try Catalog(
            products: [
                CatalogProduct(
                    id: "com.example.credits", kind: .consumable, credits: 100, otherCredits: [gems: 5]),
                CatalogProduct(id: "com.example.gems", kind: .consumable, credits: 0, otherCredits: [gems: 50]),
            ],
            currencies: [CurrencyDefinition(id: coins, name: "Coins"), CurrencyDefinition(id: gems, name: "Gems")])
    }

    static func spend(
        _ amount: Int64, _ currency: String, key: String, as user: CreateUserResponse,
        with client: some TestClientProtocol
    ) async throws -> TestResponse {
        var headers = ClientAPITests.bearer(user.token)
        headers[HTTPField.Name("Idempotency-Key")!] = key
        return try await client.execute(
            uri: "/v1/me/spend", method: .post, headers: headers,
            body: try ClientAPITests.body(SpendRequest(amount: amount, currency: currency)))
    }

    @Test(
        "a purchase delivers coins and gems once; spends name their currency; a refund and its reversal move each",
        arguments: ServerEngine.allCases)
    func purchaseSpendRefund(engine: ServerEngine) async throws {
        let setup = try NotificationTests.Setup(
            store: try await engine.makeStore(),
            configuration: NotificationTests.Setup.defaultConfiguration(wallet: .server), catalog: try Self.catalog())
        try await setup.app.test(.router) { client in
            let user = try await NotificationTests.createUser(client)
            let bought = try await setup.apple.purchase(
                account: "alice", productId: "com.example.credits", quantity: 2, appAccountToken: user.appAccountToken)
            let id = try #require(bought.transactionIds.first)
            #expect(try await setup.deliver(after: 0, with: client) == ["applied"])
            let posted = try await NotificationTests.present(
                try await setup.apple.signedTransaction(id: id), as: user, with: client)
            #expect(posted.outcome == .duplicate && posted.balance == 200)
            var me = try await NotificationTests.me(user, client)
            #expect(me.balance == 200 && me.balances == ["coins": 200, "gems": 10])
            #expect(me.deficits == ["coins": 0, "gems": 0])

            // Gems only by a product that gives no coins: the answer's credits are the default currency's.
            let gemPack = try await setup.apple.purchase(
                account: "alice", productId: "com.example.gems", appAccountToken: user.appAccountToken)
            let gemAnswer = try await NotificationTests.present(
                try await setup.apple.signedTransaction(id: try #require(gemPack.transactionIds.first)), as: user,
                with: client)
            #expect(gemAnswer.outcome == .delivered && gemAnswer.credits == 0 && gemAnswer.balance == 200)
            // Apple's notification of it afterwards (a new notification, answered applied) delivers nothing more.
            #expect(try await setup.deliver(after: 1, with: client) == ["applied"])
            #expect(try await NotificationTests.me(user, client).balances == ["coins": 200, "gems": 60])

            // Spending gems: once per key, overspending refused with nothing moved, coins untouched.
            let spent = try await Self.spend(52, "gems", key: "k1", as: user, with: client)
            #expect(try ClientAPITests.decode(BalanceResponse.self, spent).balance == 8)
            let again = try await Self.spend(52, "gems", key: "k1", as: user, with: client)
            #expect(try ClientAPITests.decode(BalanceResponse.self, again).balance == 8)
            let over = try await Self.spend(9, "gems", key: "k2", as: user, with: client)
            #expect(over.status == .conflict)
            let unknown = try await Self.spend(1, "stars", key: "k3", as: user, with: client)
            #expect(unknown.status == .badRequest)
            me = try await NotificationTests.me(user, client)
            #expect(me.balances == ["coins": 200, "gems": 8])

            // The refund takes back 200 coins and 10 gems: 8 gems there, 2 spent become the gems' deficit.
            try await setup.apple.refund(transactionId: id)
            #expect(try await setup.deliver(after: 2, with: client) == ["applied"])
            me = try await NotificationTests.me(user, client)
            #expect(me.balances == ["coins": 0, "gems": 0] && me.deficits == ["coins": 0, "gems": 2])
            #expect(me.balance == 0 && me.deficit == 0)

            // Apple reverses the refund: each currency gets back what its refund took.
            try await setup.apple.reverseRefund(transactionId: id)
            #expect(try await setup.deliver(after: 3, with: client) == ["applied"])
            me = try await NotificationTests.me(user, client)
            #expect(me.balances == ["coins": 200, "gems": 8] && me.deficits == ["coins": 0, "gems": 0])

            let owner = try #require(
                try await setup.store.user(appAccountToken: user.appAccountToken, environment: .sandbox))
            let gemEntries = try await setup.store.entries(owner: owner.id, environment: .sandbox, currency: Self.gems)
            #expect(
                gemEntries.map(\.key.rawValue) == [
                    "purchase:\(id)", "purchase:\(try #require(gemPack.transactionIds.first))", "spend:k1",
                    "revocation:\(id)", "reversal:\(id)",
                ])
            let coinEntries = try await setup.store.entries(owner: owner.id, environment: .sandbox)
            #expect(coinEntries.map(\.amount) == [200, 0, -200, 200])

            // Support sees every currency: the figures, and each currency's entries in the timeline, named.
            let support = AdminService(
                store: setup.store, catalog: setup.catalog, walletMode: .server, now: { setup.clock.now() })
            let detail = try await support.user(environment: .sandbox, supportId: owner.supportId.rawValue)
            #expect(detail.balances == ["coins": 200, "gems": 8] && detail.deficits == ["coins": 0, "gems": 0])
            let gemItems = detail.timeline.filter { $0.currency == "gems" }
            #expect(gemItems.count == 5 && gemItems.allSatisfy { $0.summary.hasPrefix("Gems: ") })
            #expect(
                detail.timeline.filter { $0.currency == nil && $0.reference?.hasPrefix("purchase:") == true }.count == 2
            )

            // Support's grant names its currency; the app claims it into that currency's wallet.
            let grant = try await support.createGrant(
                environment: .sandbox, supportId: owner.supportId.rawValue, credits: 50, reason: "Ticket #7",
                actor: "ada", currency: "gems")
            #expect(grant.currency == "gems")
            let listed = try ClientAPITests.decode(
                GrantsResponse.self,
                try await client.execute(uri: "/v1/me/grants", method: .get, headers: ClientAPITests.bearer(user.token))
            )
            #expect(listed.grants.map(\.currency) == ["gems"])
            let claimed = try await client.execute(
                uri: "/v1/me/grants/\(grant.id.uuidString.lowercased())/claim", method: .post,
                headers: ClientAPITests.bearer(user.token))
            #expect(claimed.status == .ok)
            #expect(try await NotificationTests.me(user, client).balances == ["coins": 200, "gems": 58])
            // The default currency by its id is the default's grant; a currency the catalog lacks is refused.
            let coins = try await support.createGrant(
                environment: .sandbox, supportId: owner.supportId.rawValue, credits: 5, reason: "Ticket #8",
                actor: "ada", currency: "coins")
            #expect(coins.currency == nil)
            _ = try await client.execute(
                uri: "/v1/me/grants/\(coins.id.uuidString.lowercased())/claim", method: .post,
                headers: ClientAPITests.bearer(user.token))
            await #expect(throws: AdminError.self) {
                _ = try await support.createGrant(
                    environment: .sandbox, supportId: owner.supportId.rawValue, credits: 5, reason: "Ticket #9",
                    actor: "ada", currency: "stars")
            }
            // A grant limit counts the default currency: a limited admin's grant of gems needs an owner.
            await #expect(
                throws: AdminError.forbidden("your grant limit counts coins credits: grants of gems need an owner")
            ) {
                _ = try await support.createGrant(
                    environment: .sandbox, supportId: owner.supportId.rawValue, credits: 5, reason: "Ticket #12",
                    actor: "bob", ceiling: 1_000, holder: "bob", currency: "gems")
            }
            // Support sets one currency's balance: an adjustment in its ledger, the other currencies untouched.
            let set = try await support.setBalance(
                environment: .sandbox, supportId: owner.supportId.rawValue, balance: 100, expected: 58,
                reason: "Ticket #11", actor: "ada", currency: "gems")
            #expect(set.before == 58 && set.after == 100 && set.currency == "gems")
            #expect(try await NotificationTests.me(user, client).balances == ["coins": 205, "gems": 100])
            // In the device wallet a grant names its currency too (the app's ledger keeps each); one that ends is the
            // server wallet's.
            let device = AdminService(
                store: setup.store, catalog: setup.catalog, walletMode: .device, now: { setup.clock.now() })
            let deviceGrant = try await device.createGrant(
                environment: .sandbox, supportId: owner.supportId.rawValue, credits: 5, reason: "Ticket #10",
                actor: "ada", currency: "gems")
            #expect(deviceGrant.currency == "gems")
            await #expect(throws: AdminError.self) {
                _ = try await device.createGrant(
                    environment: .sandbox, supportId: owner.supportId.rawValue, credits: 5, reason: "Ticket #9",
                    actor: "ada", currency: "gems", expiresInDays: 3)
            }
        }
    }

    @Test(
        "a refund takes back every currency the purchase delivered, though the catalog no longer gives it",
        arguments: ServerEngine.allCases)
    func refundAfterCatalogChange(engine: ServerEngine) async throws {
        // Today's catalog: the pack gives coins only; when it was bought it gave gems too.
        let today = try Catalog(
            products: [CatalogProduct(id: "com.example.credits", kind: .consumable, credits: 100)],
            currencies: [CurrencyDefinition(id: Self.coins, name: "Coins")])
        let setup = try NotificationTests.Setup(
            store: try await engine.makeStore(),
            configuration: NotificationTests.Setup.defaultConfiguration(wallet: .server), catalog: today)
        try await setup.app.test(.router) { client in
            let user = try await NotificationTests.createUser(client)
            let bought = try await setup.apple.purchase(
                account: "alice", productId: "com.example.credits", appAccountToken: user.appAccountToken)
            let id = try #require(bought.transactionIds.first)
            #expect(try await setup.deliver(after: 0, with: client) == ["applied"])
            let owner = try #require(
                try await setup.store.user(appAccountToken: user.appAccountToken, environment: .sandbox))
            let fact = try #require(try await setup.store.receipt(transactionId: id, environment: .sandbox)).transaction
            _ = try await setup.store.apply(
                LedgerRequest(
                    owner: owner.id, environment: .sandbox, event: .purchase(fact, credits: 7), at: setup.clock.now(),
                    currency: Self.gems))
            #expect(try await setup.store.receiptCurrencies(transactionId: id, environment: .sandbox) == [Self.gems])

            try await setup.apple.refund(transactionId: id)
            #expect(try await setup.deliver(after: 1, with: client) == ["applied"])
            #expect(try await setup.store.wallet(owner: owner.id, environment: .sandbox) == Wallet())
            #expect(
                try await setup.store.currencyWallets(owner: owner.id, environment: .sandbox)
                    == [Self.gems: Wallet()])
        }
    }

    @Test("the panel shows every currency and grants in the one support picks", arguments: ServerEngine.allCases)
    func panel(engine: ServerEngine) async throws {
        let (store, setup) = try await Self.panelSetup(engine, wallet: .server)
        try await setup.app.test(.router) { client in
            let user = try await NotificationTests.createUser(client)
            var browser = PanelTests.Browser()
            _ = try await browser.signIn(client)
            let page = String(buffer: try await browser.get(client, "/admin/users/\(user.supportId)").body)
            #expect(page.contains(#"<select name="currency" id="grant-currency">"#))
            #expect(page.contains(#"<option value="gems">Gems</option>"#))
            #expect(page.contains(#"id="currency-gems""#))
            let csrf = try PanelTests.Browser.csrf(try await browser.get(client, "/admin/grants"))
            let grant = [
                ("supportId", user.supportId), ("credits", "40"), ("reason", "Ticket #42"), ("currency", "gems"),
                ("back", "user"), ("csrf", csrf),
            ]
            let confirm = try await browser.post(client, "/admin/grants", grant)
            #expect(confirm.status == .ok && String(buffer: confirm.body).contains("Grant 40 Gems to"))
            let created = try await browser.post(client, "/admin/grants", grant + [("confirm", "yes")])
            #expect(created.status == .seeOther)
            let grants = try await store.grants(environment: .sandbox, recipient: nil, status: nil, limit: 10)
            #expect(grants.map(\.currency) == [Self.gems] && grants.map(\.credits) == [40])
            // A currency the catalog does not list comes back with a reason, nothing made.
            let unknown = try await browser.post(
                client, "/admin/grants",
                [
                    ("supportId", user.supportId), ("credits", "1"), ("reason", "x"), ("currency", "stars"),
                    ("csrf", csrf),
                ])
            #expect(String(buffer: unknown.body).contains("unknown currency"))
            #expect(try await store.grants(environment: .sandbox, recipient: nil, status: nil, limit: 10).count == 1)
            // The balance form names a currency too.
            let edit = [("balance", "7"), ("reason", "Ticket #43"), ("currency", "gems"), ("csrf", csrf)]
            let path = "/admin/users/\(user.supportId)/balance"
            let asked = try await browser.post(client, path, edit)
            #expect(String(buffer: asked.body).contains("7 Gems"))
            let done = try await browser.post(client, path, edit + [("confirm", "yes"), ("expected", "0")])
            #expect(done.status == .seeOther)
            let supportId = try #require(SupportID(user.supportId))
            let customer = try #require(try await store.user(supportId: supportId, environment: .sandbox))
            #expect(
                try await store.currencyWallets(owner: customer.id, environment: .sandbox)
                    == [Self.gems: Wallet(balance: 7)])
            #expect(try await store.wallet(owner: customer.id, environment: .sandbox) == Wallet())

            // Gems owed after a refund: the dashboard says so beside the coins' deficit.
            let fact = TransactionFact(transactionId: "9001", productId: "com.example.gems", purchaseDate: Date())
            var refunded = fact
            refunded.revocationDate = fact.purchaseDate
            for event in [LedgerEvent.purchase(fact, credits: 10), .spend(key: "s", amount: 15), .revocation(refunded)]
            {
                _ = try await store.apply(
                    LedgerRequest(
                        owner: customer.id, environment: .sandbox, event: event, at: fact.purchaseDate,
                        currency: Self.gems))
            }
            let dashboard = String(buffer: try await browser.get(client, "/admin").body)
            #expect(dashboard.contains("<span>coins owed by 0 users</span>"), "\(dashboard)")
            #expect(
                dashboard.contains(#"<div class="figure" id="deficit-gems"><b>8</b><span>gems owed by 1 users</span>"#))
        }
    }

    @Test(
        "device wallet: the panel edits one currency of the backup, which it shows; the mailbox lists gems only when asked",
        arguments: ServerEngine.allCases)
    func deviceWalletPanel(engine: ServerEngine) async throws {
        let (store, setup) = try await Self.panelSetup(engine, wallet: .device)
        try await setup.app.test(.router) { client in
            let user = try await NotificationTests.createUser(client)
            var browser = PanelTests.Browser()
            _ = try await browser.signIn(client)
            let page = String(buffer: try await browser.get(client, "/admin/users/\(user.supportId)").body)
            #expect(page.contains(#"<select name="currency" id="balance-currency">"#))
            let csrf = try PanelTests.Browser.csrf(try await browser.get(client, "/admin/grants"))
            let path = "/admin/users/\(user.supportId)/balance"
            let edit = [("balance", "7"), ("reason", "Ticket #43"), ("currency", "gems"), ("csrf", csrf)]
            // Before the app's first backup its balances are the device's: a currency's edit is refused.
            let early = try await browser.post(client, path, edit + [("confirm", "yes"), ("expected", "0")])
            #expect(String(buffer: early.body).contains("has not backed up yet"))
            let supportId = try #require(SupportID(user.supportId))
            let customer = try #require(try await store.user(supportId: supportId, environment: .sandbox))
            #expect(try await store.backup(owner: customer.id, environment: .sandbox) == nil)
            // The app backs up 20 coins and 5 gems (the server's ledger saw no gems): the edit starts from the 5.
            _ = try await store.saveBackup(
                owner: customer.id, environment: .sandbox, value: 20, precondition: .absent, writer: .device("phone"),
                at: Date(), currencies: [Self.gems: Wallet(balance: 5)])
            let confirming = String(buffer: try await browser.post(client, path, edit).body)
            #expect(confirming.contains(#"name="expected" value="5""#), "\(confirming)")
            let done = try await browser.post(client, path, edit + [("confirm", "yes"), ("expected", "5")])
            #expect(done.status == .seeOther)
            let backup = try #require(try await store.backup(owner: customer.id, environment: .sandbox))
            #expect(backup.value == 20 && backup.currencies == [Self.gems: Wallet(balance: 7)])
            let after = String(buffer: try await browser.get(client, "/admin/users/\(user.supportId)").body)
            #expect(after.contains(#"<span id="backup-currencies">7 Gems</span>"#), "\(after)")
            // The timeline's backup history names the other currencies each backup held.
            #expect(after.contains("set the backed-up balance to 20, with 7 Gems"), "\(after)")
            #expect(after.contains("Backup of 20, with 5 Gems from phone"), "\(after)")

            // Refunded gems: the mailbox lists the gems' entry to an app that asks for currencies, keyed by currency.
            let fact = TransactionFact(transactionId: "9002", productId: "com.example.gems", purchaseDate: Date())
            var refunded = fact
            refunded.revocationDate = fact.purchaseDate
            for event in [LedgerEvent.purchase(fact, credits: 10), .revocation(refunded)] {
                _ = try await store.apply(
                    LedgerRequest(
                        owner: customer.id, environment: .sandbox, event: event, at: fact.purchaseDate,
                        currency: Self.gems))
            }
            let bearer = ClientAPITests.bearer(user.token)
            let plain = try ClientAPITests.decode(
                AdjustmentsResponse.self,
                try await client.execute(uri: "/v1/me/adjustments", method: .get, headers: bearer))
            #expect(plain.adjustments.isEmpty)
            let asked = try ClientAPITests.decode(
                AdjustmentsResponse.self,
                try await client.execute(uri: "/v1/me/adjustments?currencies=1", method: .get, headers: bearer))
            #expect(asked.adjustments.map(\.key) == ["gems:revocation:9002"])
            #expect(asked.adjustments.map(\.currency) == ["gems"] && asked.adjustments.map(\.amount) == [-10])
            let bad = try await client.execute(uri: "/v1/me/adjustments?currencies=yes", method: .get, headers: bearer)
            #expect(bad.status == .badRequest)
            // A grant of gems likewise: the app applies it itself, so only one that reads currencies is handed it.
            let catalog = try Catalog(
                products: [],
                currencies: [
                    CurrencyDefinition(id: Self.coins, name: "Coins"), CurrencyDefinition(id: Self.gems, name: "Gems"),
                ])
            let support = AdminService(store: store, catalog: catalog, walletMode: .device, now: { Date() })
            _ = try await support.createGrant(
                environment: .sandbox, supportId: user.supportId, credits: 3, reason: "Ticket #44", actor: "ada",
                currency: "gems")
            for (uri, count) in [("/v1/me/grants?status=pending", 0), ("/v1/me/grants?status=pending&currencies=1", 1)]
            {
                let listed = try ClientAPITests.decode(
                    GrantsResponse.self, try await client.execute(uri: uri, method: .get, headers: bearer))
                #expect(listed.grants.count == count && listed.grants.allSatisfy { $0.currency == "gems" }, "\(uri)")
            }
        }
    }

    /// A store with an admin to sign in as, and a server of coins and gems over it.
    static func panelSetup(_ engine: ServerEngine, wallet: WalletMode) async throws -> (
        any CofferStore, ClientAPITests.Setup
    ) {
        let store = try await engine.makeStore()
        try await PanelTests.admin(in: store)
        let setup = try ClientAPITests.Setup(
            store: store, wallet: wallet,
            currencies: [
                CurrencyDefinition(id: Self.coins, name: "Coins"), CurrencyDefinition(id: Self.gems, name: "Gems"),
            ]
        )
        return (store, setup)
    }
}
