import CofferCore
import CofferStore
import CofferTestSupport
import Foundation
import Testing

/// Several currencies (``LedgerRequest/currency``), on every engine (``StoreEngine``): each currency is a ledger of
/// its own, so exactly once, refunds and the deficit hold per currency, and the default currency's ledger is the one
/// a single-currency store keeps.
@Suite("LedgerStore contract: several currencies")
struct CurrencyLedgerContractTests {
    static let gems = Currency(rawValue: "gems")!
    static let stars = Currency(rawValue: "stars")!

    static func request(_ event: LedgerEvent, for user: User, in currency: Currency? = nil) -> LedgerRequest {
        LedgerRequest(owner: user.id, environment: user.environment, event: event, at: Make.start, currency: currency)
    }

    /// A purchase of coins (the default) and gems, one request per currency in one batch.
    static func purchase(_ id: String, for user: User, coins: Int64, gems: Int64) -> [LedgerRequest] {
        [
            request(.purchase(Make.fact(id), credits: coins), for: user),
            request(.purchase(Make.fact(id), credits: gems), for: user, in: Self.gems),
        ]
    }

    @Test("a purchase delivers each currency once, each in its own ledger", arguments: StoreEngine.allCases)
    func purchaseOnce(engine: StoreEngine) async throws {
        let store = try await engine.makeStore()
        let alice = Make.user("_aaaaaaaaaaa1")
        try await store.createUser(alice)
        let first = try await store.apply(Self.purchase("t1", for: alice, coins: 1_000, gems: 10))
        #expect(try first.map { try $0.get().outcome } == [.applied, .applied])
        #expect(try first.map { try $0.get().wallet } == [Wallet(balance: 1_000), Wallet(balance: 10)])
        #expect(try first[1].get().entry?.currency == Self.gems)
        #expect(try first[0].get().entry?.currency == nil)

        // The same purchase again, in either order, delivers nothing more.
        let again = try await store.apply(Self.purchase("t1", for: alice, coins: 1_000, gems: 10).reversed())
        #expect(try again.map { try $0.get().outcome } == [.duplicate, .duplicate])

        #expect(try await store.wallet(owner: alice.id, environment: .sandbox) == Wallet(balance: 1_000))
        #expect(
            try await store.currencyWallets(owner: alice.id, environment: .sandbox) == [Self.gems: Wallet(balance: 10)])
        let gemEntries = try await store.entries(owner: alice.id, environment: .sandbox, currency: Self.gems)
        #expect(gemEntries.map(\.key) == [IdempotencyKey(.purchase, "t1")])
        #expect(gemEntries.map(\.amount) == [10] && gemEntries.allSatisfy { $0.currency == Self.gems })
        // The default currency's reads are what a single-currency store answers.
        let entries = try await store.entries(owner: alice.id, environment: .sandbox)
        #expect(entries.map(\.amount) == [1_000] && entries.allSatisfy { $0.currency == nil })
        #expect(try await store.entries(owner: alice.id, environment: .sandbox, currency: nil) == entries)
        #expect(try await store.receipt(transactionId: "t1", environment: .sandbox)?.deliveredCredits == 1_000)
        let gemReceipt = try await store.receipt(transactionId: "t1", environment: .sandbox, currency: Self.gems)
        #expect(gemReceipt?.deliveredCredits == 10 && gemReceipt?.owner == alice.id)
        #expect(try await store.receipt(transactionId: "t1", environment: .sandbox, currency: Self.stars) == nil)
        #expect(try await store.receipts(owner: alice.id, environment: .sandbox).count == 1)
    }

    @Test(
        "a refund takes back each currency; what was spent is that currency's deficit, collected by its credits",
        arguments: StoreEngine.allCases)
    func refundPerCurrency(engine: StoreEngine) async throws {
        let store = try await engine.makeStore()
        let alice = Make.user("_aaaaaaaaaaa1")
        try await store.createUser(alice)
        _ = try await store.apply(Self.purchase("t1", for: alice, coins: 1_000, gems: 10))
        // Seven gems spent; overspending is refused and moves nothing; the coins are untouched.
        _ = try await store.apply(Self.request(.spend(key: "s1", amount: 7), for: alice, in: Self.gems))
        let over = try await store.apply([Self.request(.spend(key: "s2", amount: 4), for: alice, in: Self.gems)])
        #expect(over.first.map { if case .failure(.insufficientBalance(3, 4)) = $0 { true } else { false } } == true)
        #expect(try await store.wallet(owner: alice.id, environment: .sandbox) == Wallet(balance: 1_000))

        let refunded = Make.fact("t1", revoked: true)
        let results = try await store.apply([
            Self.request(.revocation(refunded), for: alice),
            Self.request(.revocation(refunded), for: alice, in: Self.gems),
        ])
        #expect(try results.map { try $0.get().wallet } == [Wallet(), Wallet(balance: 0, deficit: 7)])
        let gemReceipt = try await store.receipt(transactionId: "t1", environment: .sandbox, currency: Self.gems)
        #expect(gemReceipt?.takenFromBalance == 3 && gemReceipt?.addedToDeficit == 7 && gemReceipt?.isRevoked == true)

        // Later gems settle the gems' deficit first; later coins do not touch it.
        _ = try await store.apply(
            Self.request(.grant(id: "g1", credits: 5, reason: "sorry"), for: alice, in: Self.gems))
        _ = try await store.apply(Self.request(.grant(id: "g1", credits: 50, reason: "sorry"), for: alice))
        #expect(try await store.wallet(owner: alice.id, environment: .sandbox) == Wallet(balance: 50))
        #expect(
            try await store.currencyWallets(owner: alice.id, environment: .sandbox)
                == [Self.gems: Wallet(balance: 0, deficit: 2)])
        #expect(try await Make.discrepancies(store, alice) == [])
    }

    @Test(
        "keys, users and environments: each currency's keys are its own; no one else's wallet is written",
        arguments: StoreEngine.allCases)
    func isolation(engine: StoreEngine) async throws {
        let store = try await engine.makeStore()
        let (alice, bob) = (Make.user("_aaaaaaaaaaa1"), Make.user("_bbbbbbbbbbb2"))
        let carol = Make.user("_ccccccccccc3", in: .production)
        for user in [alice, bob, carol] { try await store.createUser(user) }
        let results = try await store.apply([
            Self.request(.grant(id: "g", credits: 30, reason: "welcome"), for: alice, in: Self.gems),
            Self.request(.grant(id: "g", credits: 40, reason: "welcome"), for: alice, in: Self.stars),
            Self.request(.grant(id: "g", credits: 50, reason: "welcome"), for: alice),
            Self.request(.grant(id: "g", credits: 60, reason: "welcome"), for: bob, in: Self.gems),
            Self.request(.grant(id: "g", credits: 30, reason: "welcome"), for: alice, in: Self.gems),
        ])
        #expect(try results.map { try $0.get().outcome } == [.applied, .applied, .applied, .applied, .duplicate])
        #expect(
            try await store.currencyWallets(owner: alice.id, environment: .sandbox)
                == [Self.gems: Wallet(balance: 30), Self.stars: Wallet(balance: 40)])
        #expect(
            try await store.currencyWallets(owner: bob.id, environment: .sandbox) == [Self.gems: Wallet(balance: 60)])
        #expect(try await store.currencyWallets(owner: carol.id, environment: .production) == [:])
        // Another environment's user is unknown in this one, in every currency; nothing is written for it.
        let stranger = LedgerRequest(
            owner: carol.id, environment: .sandbox, event: .grant(id: "h", credits: 1, reason: "r"), at: Make.start,
            currency: Self.gems)
        let refused = try await store.apply([stranger])
        #expect(refused.first.map { if case .failure(.unknownUser) = $0 { true } else { false } } == true)
        #expect(try await store.currencyWallets(owner: carol.id, environment: .sandbox) == [:])
        #expect(try await store.currencyWallets(owner: carol.id, environment: .production) == [:])
        #expect(try await store.entries(owner: alice.id, environment: .production, currency: Self.gems) == [])
    }

    @Test(
        "concurrent purchases of one transaction deliver each currency once, two customers' batches crossing",
        arguments: StoreEngine.allCases)
    func concurrent(engine: StoreEngine) async throws {
        let store = try await engine.makeStore()
        let (alice, bob) = (Make.user("_aaaaaaaaaaa1"), Make.user("_bbbbbbbbbbb2"))
        try await store.createUser(alice)
        try await store.createUser(bob)
        let outcomes = try await withThrowingTaskGroup(of: [LedgerOutcome].self) { group in
            for index in 0..<30 {
                // Each batch names both customers, in either order: the engines lock them in one order.
                let first = index.isMultiple(of: 2) ? alice : bob
                let second = index.isMultiple(of: 2) ? bob : alice
                let batch =
                    Self.purchase("t-\(first.supportId)", for: first, coins: 100, gems: 3)
                    + Self.purchase("t-\(second.supportId)", for: second, coins: 100, gems: 3).reversed()
                group.addTask { try await store.apply(batch).map { try $0.get().outcome } }
            }
            return try await group.reduce(into: [LedgerOutcome]()) { $0 += $1 }
        }
        #expect(outcomes.filter { $0 == .applied }.count == 4)
        #expect(outcomes.filter { $0 == .duplicate }.count == 116)
        for user in [alice, bob] {
            #expect(try await store.wallet(owner: user.id, environment: .sandbox) == Wallet(balance: 100))
            #expect(
                try await store.currencyWallets(owner: user.id, environment: .sandbox) == [
                    Self.gems: Wallet(balance: 3)
                ])
            #expect(try await store.entries(owner: user.id, environment: .sandbox, currency: Self.gems).count == 1)
        }
    }

    @Test(
        "a merge moves every currency's wallet and receipts; a deletion closes every currency's wallet",
        arguments: StoreEngine.allCases)
    func mergeAndDelete(engine: StoreEngine) async throws {
        let store = try await engine.makeStore()
        let (anonymous, account) = (Make.user("_aaaaaaaaaaa1"), Make.user("_bbbbbbbbbbb2"))
        try await store.createUser(anonymous)
        try await store.createUser(account)
        _ = try await store.apply(Self.purchase("t1", for: anonymous, coins: 100, gems: 10))
        _ = try await store.apply(
            Self.request(.grant(id: "g", credits: 4, reason: "welcome"), for: account, in: Self.gems))
        let result = try await store.mergeUser(
            UserMerge(from: anonymous.id, into: account.id, environment: .sandbox, movesBackup: false, at: Make.start))
        #expect(result.moved == Wallet(balance: 100) && result.wallet == Wallet(balance: 100))
        #expect(
            try await store.currencyWallets(owner: account.id, environment: .sandbox) == [
                Self.gems: Wallet(balance: 14)
            ])
        #expect(
            try await store.currencyWallets(owner: anonymous.id, environment: .sandbox) == [Self.gems: Wallet()])
        let gemReceipt = try await store.receipt(transactionId: "t1", environment: .sandbox, currency: Self.gems)
        #expect(gemReceipt?.owner == account.id)
        let moved = try await store.entries(owner: account.id, environment: .sandbox, currency: Self.gems)
        #expect(moved.map(\.key.kind) == [.grant, .merge] && moved.last?.amount == 10)
        // The purchase again, now the account's, delivers nothing more in either currency.
        let again = try await store.apply(Self.purchase("t1", for: account, coins: 100, gems: 10))
        #expect(try again.map { try $0.get().outcome } == [.duplicate, .duplicate])

        let deleted = try await store.deleteUser(
            UserDeletion(user: account.id, environment: .sandbox, actor: "ada", at: Make.start.addingTimeInterval(60)))
        #expect(deleted.closed == Wallet(balance: 100))
        #expect(try await store.currencyWallets(owner: account.id, environment: .sandbox) == [Self.gems: Wallet()])
        let closed = try await store.entries(owner: account.id, environment: .sandbox, currency: Self.gems)
        #expect(closed.last?.amount == -14 && closed.last?.currency == Self.gems)
        #expect(closed.first?.reason == UserDeletion.removedReason)
        // What delivered credits in any currency stays the deleted customer's: never credited twice.
        #expect(try await store.receipt(transactionId: "t1", environment: .sandbox, currency: Self.gems) != nil)
    }

    @Test(
        "device wallet: a merge moves each currency's backed-up balance (what the app holds), not the server ledger's",
        arguments: StoreEngine.allCases)
    func deviceWalletMerge(engine: StoreEngine) async throws {
        let store = try await engine.makeStore()
        let (anonymous, account) = (Make.user("_aaaaaaaaaaa1"), Make.user("_bbbbbbbbbbb2"))
        try await store.createUser(anonymous)
        try await store.createUser(account)
        // The server saw 10 gems bought; the app spent 8 of them and earned 5 stars in play, and backed that up.
        _ = try await store.apply(Self.purchase("t1", for: anonymous, coins: 100, gems: 10))
        let stars = Self.stars
        _ = try await store.saveBackup(
            owner: anonymous.id, environment: .sandbox, value: 30, precondition: .absent, writer: .device("phone"),
            at: Make.start, currencies: [Self.gems: Wallet(balance: 2), stars: Wallet(balance: 5)])
        // Kept as written; a write that names none keeps them, an empty wallet is none.
        _ = try await store.saveBackup(
            owner: anonymous.id, environment: .sandbox, value: 30, precondition: .version(1), writer: .device("phone"),
            at: Make.start)
        _ = try await store.saveBackup(
            owner: anonymous.id, environment: .sandbox, value: 30, precondition: .version(2), writer: .device("phone"),
            at: Make.start,
            currencies: [
                Self.gems: Wallet(balance: 2), stars: Wallet(balance: 5), Currency(rawValue: "rubies")!: Wallet(),
            ])
        #expect(
            try await store.backup(owner: anonymous.id, environment: .sandbox)?.currencies == [
                Self.gems: Wallet(balance: 2), stars: Wallet(balance: 5),
            ])
        let result = try await store.mergeUser(
            UserMerge(from: anonymous.id, into: account.id, environment: .sandbox, movesBackup: true, at: Make.start))
        #expect(result.moved == Wallet(balance: 30))
        #expect(
            try await store.currencyWallets(owner: account.id, environment: .sandbox) == [
                Self.gems: Wallet(balance: 2), stars: Wallet(balance: 5),
            ])
        let gems = try await store.entries(owner: account.id, environment: .sandbox, currency: Self.gems)
        #expect(gems.map(\.key.kind) == [.merge] && gems.last?.amount == 2)
        // Each currency a write names is set, 0 clearing it; one it leaves out keeps what was held.
        _ = try await store.saveBackup(
            owner: account.id, environment: .sandbox, value: 1, precondition: .absent, writer: .device("tablet"),
            at: Make.start, currencies: [Self.gems: Wallet(balance: 4), stars: Wallet(balance: 1)])
        _ = try await store.saveBackup(
            owner: account.id, environment: .sandbox, value: 1, precondition: .version(1), writer: .device("tablet"),
            at: Make.start, currencies: [Self.gems: Wallet()])
        #expect(
            try await store.backup(owner: account.id, environment: .sandbox)?.currencies == [stars: Wallet(balance: 1)])
    }

    @Test(
        "another currency's entries reach the webhooks' outbox, each saying its currency",
        arguments: StoreEngine.allCases)
    func outbox(engine: StoreEngine) async throws {
        let store = try await engine.makeStore()
        try await store.saveWebhookEndpoint(WebhookStoreContractTests.endpoint("wh_a"))
        let alice = Make.user("_aaaaaaaaaaa1")
        try await store.createUser(alice)
        _ = try await store.apply(Self.purchase("t1", for: alice, coins: 100, gems: 10))
        let records = try await WebhookStoreContractTests.route(store)
        #expect(records.map(\.currency) == [nil, Self.gems])
        #expect(records.map(\.amount) == [100, 10] && records.map(\.balance) == [100, 10])
        #expect(records.allSatisfy { $0.originalTransactionId == "orig-t1" && $0.entryKey == "purchase:t1" })
    }
}
