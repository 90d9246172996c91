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

/// A subscription's allowance through the server (issue 39 §3): each paid period credits the catalog's allowance in
/// every currency it names, ending with the period (`expiring` in `GET /v1/me`), spent first; at the period's end
/// what is left leaves the balance by `expiry:allowance:<transaction id>`; a refund of the period takes back what
/// is left of it, never more (no deficit for what was spent).
@Suite("Subscription allowances through the API")
struct AllowanceAPITests {
    static let coins = Currency(rawValue: "coins")!
    static let gems = Currency(rawValue: "gems")!

    static func catalog() throws -> Catalog {
        try Catalog(
            products: [
                CatalogProduct(id: "com.example.gems", kind: .consumable, credits: 0, otherCredits: [gems: 50]),
                CatalogProduct(
                    id: "com.example.pro.monthly", kind: .autoRenewable, entitlements: ["premium"], group: "pro",
                    durationDays: 30, allowance: [coins: 500, gems: 5]),
            ],
            currencies: [CurrencyDefinition(id: coins, name: "Coins"), CurrencyDefinition(id: gems, name: "Gems")])
    }

    @Test(
        "each paid period credits its allowance, spent first, ended with the period; a refund takes back what is left",
        arguments: ServerEngine.allCases)
    func allowanceEachPeriod(engine: ServerEngine) async throws {
        let setup = try NotificationTests.Setup(
            store: try await engine.makeStore(),
            configuration: NotificationTests.Setup.defaultConfiguration(wallet: .server), catalog: try Self.catalog())
        try await setup.app.test(.router) { client in
            let user = try await NotificationTests.createUser(client)
            let owner = try #require(
                try await setup.store.user(appAccountToken: user.appAccountToken, environment: .sandbox))
            let feed = NotificationTests.Feed(setup, client)
            let subscribed = try await setup.apple.purchase(
                account: "dana", productId: "com.example.pro.monthly", appAccountToken: user.appAccountToken)
            let first = try #require(subscribed.transactionIds.first)
            #expect(try await feed.catchUp() == ["applied"])
            let firstEnd = setup.clock.now().addingTimeInterval(30 * 86_400).formatted(.iso8601)
            var me = try await NotificationTests.me(user, client)
            #expect(me.entitlements == ["premium"])
            #expect(me.balance == 500 && me.balances == ["coins": 500, "gems": 5])
            #expect(
                Set(me.expiring ?? []) == [
                    ExpiringCredits(currency: "coins", amount: 500, expiresAt: firstEnd),
                    ExpiringCredits(currency: "gems", amount: 5, expiresAt: firstEnd),
                ])
            // The app presenting the period again credits nothing more.
            let presented = try await NotificationTests.present(
                try await setup.apple.signedTransaction(id: first), as: user, with: client)
            #expect(presented.outcome == .duplicate)
            #expect(try await NotificationTests.me(user, client).balances == ["coins": 500, "gems": 5])

            // Gems bought never end; a spend takes the allowance's first.
            let pack = try await setup.apple.purchase(
                account: "dana", productId: "com.example.gems", appAccountToken: user.appAccountToken)
            #expect(try await feed.catchUp() == ["applied"])
            let packId = try #require(pack.transactionIds.first)
            let spent = try await CurrencyAPITests.spend(7, "gems", key: "potion", as: user, with: client)
            #expect(try ClientAPITests.decode(BalanceResponse.self, spent).balance == 48)
            #expect(try await CurrencyAPITests.spend(200, "coins", key: "sword", as: user, with: client).status == .ok)
            me = try await NotificationTests.me(user, client)
            #expect(me.expiring?.map(\.currency) == ["coins"] && me.expiring?.first?.amount == 300)

            // The period renews: the new one's allowance; the old one's end takes what was left of it, once.
            _ = try await setup.apple.advanceClock(by: 31 * 86_400)
            #expect(try await feed.catchUp().allSatisfy { $0 == "applied" })
            me = try await NotificationTests.me(user, client)
            #expect(me.balances == ["coins": 500, "gems": 53])
            #expect(me.expiring?.map(\.amount).sorted() == [5, 500])
            let coinEntries = try await setup.store.entries(owner: owner.id, environment: .sandbox)
            let renewal = try #require(
                coinEntries.compactMap { $0.key.kind == .purchase ? $0.transactionId : nil }.last)
            #expect(renewal != first)
            #expect(
                coinEntries.map(\.key.rawValue) == [
                    "purchase:\(first)", "allowance:\(first)", "purchase:\(packId)", "spend:sword",
                    "purchase:\(renewal)",
                    "allowance:\(renewal)", "expiry:allowance:\(first)",
                ])
            #expect(coinEntries.map(\.amount) == [0, 500, 0, -200, 0, 500, -300])

            // Apple refunds the renewed period: what is left of its allowance is taken back; spent gems are not owed.
            _ = try await CurrencyAPITests.spend(2, "gems", key: "shield", as: user, with: client)
            try await setup.apple.refund(transactionId: renewal)
            #expect(try await feed.catchUp().contains("applied"))
            me = try await NotificationTests.me(user, client)
            #expect(me.balances == ["coins": 0, "gems": 48] && me.deficits == ["coins": 0, "gems": 0])
            #expect(me.expiring == [])
            let gemEntries = try await setup.store.entries(owner: owner.id, environment: .sandbox, currency: Self.gems)
            #expect(gemEntries.filter { $0.key.rawValue == "expiry:allowance:\(renewal)" }.map(\.amount) == [-3])
            #expect(gemEntries.filter { $0.key.kind == .purchase }.map(\.amount) == [0, 50, 0])

            // Presenting the refunded period again gives no allowance; support sees each allowance in the timeline.
            _ = try await NotificationTests.present(
                try await setup.apple.signedTransaction(id: renewal), as: user, with: client)
            #expect(try await NotificationTests.me(user, client).balances == ["coins": 0, "gems": 48])
            let support = AdminService(
                store: setup.store, catalog: setup.catalog, walletMode: .server, now: { setup.clock.now() })
            let detail = try await support.user(environment: .sandbox, supportId: owner.supportId.rawValue)
            #expect(detail.timeline.filter { $0.kind == .allowance }.count == 4)
            // Ended: the first period's coins, the refunded period's coins and gems (the first's gems were spent).
            #expect(detail.timeline.filter { $0.kind == .expiry }.count == 3)
        }
    }

    @Test(
        "an upgrade Apple makes at once ends what is left of the old period's allowance; the new period gives its own",
        arguments: ServerEngine.allCases)
    func upgrade(engine: ServerEngine) async throws {
        let catalog = try Catalog(
            products: [
                CatalogProduct(
                    id: "com.example.pro.premium", kind: .autoRenewable, entitlements: ["premium"], group: "pro",
                    durationDays: 30, allowance: [Self.coins: 2_000]),
                CatalogProduct(
                    id: "com.example.pro.monthly", kind: .autoRenewable, entitlements: ["premium"], group: "pro",
                    durationDays: 30, allowance: [Self.coins: 500]),
            ],
            currencies: [CurrencyDefinition(id: Self.coins, name: "Coins")])
        let setup = try NotificationTests.Setup(
            store: try await engine.makeStore(),
            configuration: NotificationTests.Setup.defaultConfiguration(wallet: .server), catalog: catalog)
        try await setup.app.test(.router) { client in
            let user = try await NotificationTests.createUser(client)
            let feed = NotificationTests.Feed(setup, client)
            let basic = try await setup.apple.purchase(
                account: "dana", productId: "com.example.pro.monthly", appAccountToken: user.appAccountToken)
            #expect(try await feed.catchUp() == ["applied"])
            _ = try await CurrencyAPITests.spend(100, "coins", key: "hat", as: user, with: client)
            _ = try await setup.apple.advanceClock(by: 10 * 86_400)
            let premium = try await setup.apple.purchase(
                account: "dana", productId: "com.example.pro.premium", appAccountToken: user.appAccountToken)
            #expect(try await feed.catchUp().allSatisfy { $0 == "applied" })
            // The old period's 400 left end at the upgrade; the new period's 2,000 run to its end.
            let me = try await NotificationTests.me(user, client)
            #expect(me.balance == 2_000 && me.expiring?.map(\.amount) == [2_000])
            let owner = try #require(
                try await setup.store.user(appAccountToken: user.appAccountToken, environment: .sandbox))
            let ended = try await setup.store.entries(owner: owner.id, environment: .sandbox).filter {
                $0.key.kind == .expiry
            }
            let old = try #require(basic.transactionIds.first)
            #expect(ended.map(\.key.rawValue) == ["expiry:allowance:\(old)"] && ended.map(\.amount) == [-400])
            #expect(premium.transactionIds.count == 1)
        }
    }
}
