import CofferCore
import Foundation
import Testing

/// A subscription's allowance (issue 39 §3), in the pure core: the catalog's `allowance`, which periods earn it, the
/// requests that credit it beside the period's purchase, the ledger's rules for it and the lot it makes.
@Suite("Subscription allowances")
struct AllowanceTests {
    static let start = Date(timeIntervalSince1970: 1_767_225_600)
    static let owner = UUID()

    static func catalog(_ text: String) throws(CatalogError) -> Catalog { try Catalog(json: Data(text.utf8)) }

    static let coinsAndGems = """
        {"currencies": [{"id": "coins", "name": "Coins"}, {"id": "gems", "name": "Gems"}],
         "products": [
           {"id": "com.example.pro", "kind": "autoRenewable", "group": "pro", "allowance": {"coins": 500, "gems": 5}},
           {"id": "com.example.gems", "kind": "consumable", "credits": {"gems": 25}}]}
        """

    static func period(
        _ id: String = "t1", product: String = "com.example.pro", days: Double = 30, trial: Bool = false,
        family: Bool = false, price: Int64? = 9_990, upgraded: Bool = false, refunded: Bool = false
    ) -> TransactionFact {
        TransactionFact(
            transactionId: id, productId: product, purchaseDate: start,
            expiresDate: start.addingTimeInterval(days * 86_400),
            revocationDate: refunded ? start : nil, isFamilyShared: family, isTrial: trial, isUpgraded: upgraded,
            price: price)
    }

    static func purchase(_ fact: TransactionFact, at: Date = start) -> LedgerRequest {
        LedgerRequest(owner: owner, environment: .sandbox, event: .purchase(fact, credits: 0), at: at)
    }

    /// The request crediting `fact`'s period 500 credits, ending with it.
    static func allowance(_ fact: TransactionFact) -> LedgerRequest {
        LedgerRequest(
            owner: owner, environment: .sandbox, event: .allowance(fact, credits: 500), at: start,
            expiresAt: fact.expiresDate)
    }

    @Test("allowance: a number of the default currency or an object by currency; read back as served")
    func catalogAllowance() throws {
        let catalog = try Self.catalog(Self.coinsAndGems)
        let (coins, gems) = (Currency(rawValue: "coins")!, Currency(rawValue: "gems")!)
        #expect(catalog.product(id: "com.example.pro")?.allowance == [coins: 500, gems: 5])
        #expect(try Catalog(json: catalog.json()) == catalog)
        let one = try Self.catalog(
            #"{"products": [{"id": "p", "kind": "autoRenewable", "group": "g", "allowance": 300}]}"#)
        #expect(one.product(id: "p")?.allowance == [.credits: 300])
    }

    @Test(
        "refused: an allowance of a product that is not an auto-renewable subscription, an unlisted currency, a bad amount",
        arguments: [
            #"{"products": [{"id": "p", "kind": "consumable", "allowance": 5}]}"#,
            #"{"products": [{"id": "p", "kind": "autoRenewable", "group": "g", "allowance": {"stars": 5}}]}"#,
            #"{"products": [{"id": "p", "kind": "autoRenewable", "group": "g", "allowance": -1}]}"#,
            #"{"products": [{"id": "p", "kind": "autoRenewable", "group": "g", "allowance": 9007199254740993}]}"#,
            #"{"products": [{"id": "p", "kind": "autoRenewable", "group": "g", "allowance": "lots"}]}"#,
        ])
    func refused(text: String) {
        #expect(throws: CatalogError.self) { try Self.catalog(text) }
    }

    @Test("a paid period still running earns it; a trial, a free or family-shared, refunded or upgraded period not")
    func whichPeriods() throws {
        let catalog = try Self.catalog(Self.coinsAndGems)
        #expect(catalog.allowance(for: Self.purchase(Self.period())).count == 2)
        #expect(catalog.allowance(for: Self.purchase(Self.period(price: nil))).count == 2)
        for fact in [
            Self.period(trial: true), Self.period(family: true), Self.period(price: 0), Self.period(upgraded: true),
            Self.period(refunded: true), Self.period(product: "com.example.gems"),
        ] {
            #expect(catalog.allowance(for: Self.purchase(fact)).isEmpty)
        }
        // A period already over when Coffer hears of it, and a purchase delivered before Coffer, earn none.
        #expect(
            catalog.allowance(for: Self.purchase(Self.period(), at: Self.start.addingTimeInterval(31 * 86_400))).isEmpty
        )
        var before = Self.purchase(Self.period())
        before.event = .deliveredBeforeCoffer(Self.period(), credits: 0)
        #expect(catalog.allowance(for: before).isEmpty)
    }

    @Test("the requests: the purchase in every currency, each followed by its allowance ending with the period")
    func requests() throws {
        let catalog = try Self.catalog(Self.coinsAndGems)
        let fact = Self.period()
        let requests = try catalog.inEveryCurrency(Self.purchase(fact))
        #expect(requests.map(\.event.key.rawValue) == ["purchase:t1", "allowance:t1", "purchase:t1", "allowance:t1"])
        #expect(requests.map(\.currency?.rawValue) == [nil, nil, "gems", "gems"])
        #expect(requests.map(\.expiresAt) == [nil, fact.expiresDate, nil, fact.expiresDate])
        // A refund reaches the gems' ledger too, where the period's allowance lives.
        let refund = LedgerRequest(owner: Self.owner, environment: .sandbox, event: .revocation(fact), at: Self.start)
        #expect(try catalog.inEveryCurrency(refund).map(\.currency?.rawValue) == [nil, "gems"])
        // A trial's purchase comes back with its gems' purchase only.
        #expect(try catalog.inEveryCurrency(Self.purchase(Self.period(trial: true))).count == 2)
    }

    @Test("the ledger credits it once, only beside its period's purchase delivered to the same customer and standing")
    func ledgerRules() throws {
        let fact = Self.period()
        let allowance = Self.allowance(fact)
        let empty = LedgerWriter.State(wallet: Wallet(), receipt: nil, existing: nil)
        // With its purchase first in the batch: credited.
        let (results, _) = LedgerWriter.decide(batch: [Self.purchase(fact), allowance], states: [empty, empty])
        let credited = try results[1].get()
        #expect(credited.outcome == .applied && credited.wallet.balance == 500)
        #expect(credited.entry?.transactionId == "t1" && credited.entry?.key.rawValue == "allowance:t1")
        // Alone, with no delivered receipt: nothing.
        #expect(try LedgerWriter.decide(batch: [allowance], states: [empty]).results[0].get().outcome == .revoked)
        // A refunded period: nothing.
        var refunded = Receipt(owner: Self.owner, transaction: fact)
        refunded.deliveredCredits = 0
        refunded.revokedAt = Self.start
        let state = LedgerWriter.State(wallet: Wallet(), receipt: refunded, existing: nil)
        #expect(try LedgerWriter.decide(batch: [allowance], states: [state]).results[0].get().outcome == .revoked)
        // Another customer's period: refused.
        var theirs = Receipt(owner: UUID(), transaction: fact)
        theirs.deliveredCredits = 0
        let stranger = LedgerWriter.State(wallet: Wallet(), receipt: theirs, existing: nil)
        #expect(throws: LedgerError.self) {
            try LedgerWriter.decide(batch: [allowance], states: [stranger]).results[0].get()
        }
        // Its period delivered before this write (presented again after a merge moved the receipt to this
        // customer): nothing.
        var earlier = Receipt(owner: Self.owner, transaction: fact)
        earlier.deliveredCredits = 0
        earlier.deliveredAt = Self.start.addingTimeInterval(-60)
        let moved = LedgerWriter.State(wallet: Wallet(), receipt: earlier, existing: nil)
        #expect(try LedgerWriter.decide(batch: [allowance], states: [moved]).results[0].get().outcome == .revoked)
        // Again: a duplicate, nothing more.
        let again = LedgerWriter.State(wallet: credited.wallet, receipt: nil, existing: credited.entry)
        let duplicate = try LedgerWriter.decide(batch: [allowance], states: [again]).results[0].get()
        #expect(duplicate.outcome == .duplicate && duplicate.wallet.balance == 500)
    }

    @Test("its lot: spent first like a grant's; a refund of the period makes it end at the refund")
    func lot() throws {
        let fact = Self.period()
        let allowance = Self.allowance(fact)
        let refund = LedgerRequest(
            owner: Self.owner, environment: .sandbox, event: .revocation(fact),
            at: Self.start.addingTimeInterval(86_400))
        let states = [LedgerWriter.State(wallet: Wallet(balance: 100), receipt: nil, existing: nil)]
        var purchase = Self.purchase(fact)
        purchase.at = Self.start
        let (results, _) = LedgerWriter.decide(
            batch: [purchase, allowance, refund], states: states + states + states)
        let entries = try results.map { try #require(try $0.get().entry) }
        let lots = CreditLots.update([], applied: Array(zip([purchase, allowance, refund], entries)))
        #expect(lots.map(\.id) == ["allowance:t1"] && lots.map(\.remaining) == [500])
        #expect(lots.first?.expiresAt == refund.at)
        #expect(CreditLots.due(lots, at: refund.at).map(\.remaining) == [500])
        #expect(CreditLots.due(CreditLots.update([], applied: [(allowance, entries[1])]), at: refund.at).isEmpty)
        // Made once: the same entry again makes no second lot of its id.
        #expect(CreditLots.update([], applied: [(allowance, entries[1]), (allowance, entries[1])]).count == 1)
    }

    @Test("a later period of the subscription ends the allowance of one that began before it, when it begins")
    func upgrade() throws {
        var monthly = Self.period("t1", days: 30)
        monthly.originalTransactionId = "t1"
        // Ten days in, an upgrade Apple makes at once: a new transaction of the same subscription.
        var upgraded = TransactionFact(
            transactionId: "t2", originalTransactionId: "t1", productId: "com.example.pro",
            purchaseDate: Self.start.addingTimeInterval(10 * 86_400),
            expiresDate: Self.start.addingTimeInterval(375 * 86_400), price: 99_990)
        func lots(_ facts: [TransactionFact]) throws -> [CreditLot] {
            var wallet = Wallet()
            var lots: [CreditLot] = []
            for fact in facts {
                let purchase = Self.purchase(fact, at: fact.purchaseDate)
                var allowance = Self.allowance(fact)
                allowance.at = fact.purchaseDate
                let state = LedgerWriter.State(wallet: wallet, receipt: nil, existing: nil)
                let (results, _) = LedgerWriter.decide(batch: [purchase, allowance], states: [state, state])
                let credited = try results[1].get()
                wallet = credited.wallet
                lots = CreditLots.update(lots, applied: [(allowance, try #require(credited.entry))])
            }
            return lots
        }
        let after = try lots([monthly, upgraded])
        #expect(after.map(\.id) == ["allowance:t1", "allowance:t2"])
        #expect(after.first?.expiresAt == upgraded.purchaseDate)
        #expect(CreditLots.due(after, at: upgraded.purchaseDate).map(\.id) == ["allowance:t1"])
        // Heard of out of order, the earlier period ends nothing of the later one.
        let reversed = try lots([upgraded, monthly])
        #expect(reversed.first { $0.id == "allowance:t2" }?.expiresAt == upgraded.expiresDate)
        // Another subscription's periods are untouched.
        upgraded.originalTransactionId = "t9"
        #expect(try lots([monthly, upgraded]).first?.expiresAt == monthly.expiresDate)
    }
}
