import CofferCore
import CofferStore
import CofferTestSupport
import Foundation
import PropertyBased
import Testing

/// Issue 39's proof that several currencies change nothing for a catalog of one, and that each currency is a ledger
/// of its own: random purchases, refunds, reversals, grants, adjustments and spends, applied as the server applies
/// them (``Catalog/inEveryCurrency(_:)``).
@Suite("Several currencies: the properties")
struct CurrencyPropertyTests {
    static let product = "com.example.credits.400k"
    static let gems = Currency(rawValue: "gems")!

    /// The catalog of the events' product: credits 100 a unit, with `currencies` listed and `gems` a unit of gems.
    static func catalog(_ currencies: [String], gems: Int64 = 0) throws -> Catalog {
        try Catalog(
            products: [
                CatalogProduct(
                    id: product, kind: .consumable, credits: 100,
                    otherCredits: gems == 0 ? [:] : [Self.gems: gems])
            ],
            currencies: currencies.map { CurrencyDefinition(id: Currency(rawValue: $0)!, name: $0.capitalized) })
    }

    /// Applies `requests` as the server does: each in every currency its product gives, one request at a time.
    static func apply(_ requests: [LedgerRequest], catalog: Catalog, to store: InMemoryStore) async throws
        -> [Result<LedgerResult, LedgerError>]
    {
        var results: [Result<LedgerResult, LedgerError>] = []
        for request in requests {
            let each = try catalog.inEveryCurrency(request)
            results += Catalog.folded(await store.apply(each), counts: [each.count])
        }
        return results
    }

    static func store(_ user: User) async throws -> InMemoryStore {
        let store = InMemoryStore()
        try await store.createUser(user)
        return store
    }

    @Test("a catalog that names its one currency applies exactly what a catalog that names none does")
    func oneCurrency() async throws {
        let none = try Self.catalog([])
        let one = try Self.catalog(["coins"])
        await propertyCheck(count: 200, input: Gen.int(in: 0...Int(Int32.max)).array(of: 1...40)) { codes in
            do {
                let user = Make.user("_aaaaaaaaaaa1")
                let requests = codes.map {
                    LedgerRequest(owner: user.id, environment: .sandbox, event: RandomEvent($0).event, at: Make.start)
                }
                for request in requests {
                    #expect(try one.inEveryCurrency(request) == [request])
                    #expect(try none.inEveryCurrency(request) == [request])
                }
                let (before, after) = (try await Self.store(user), try await Self.store(user))
                #expect(
                    try await Self.apply(requests, catalog: none, to: before)
                        == (try await Self.apply(requests, catalog: one, to: after)))
                #expect(
                    await before.entries(owner: user.id, environment: .sandbox)
                        == (await after.entries(owner: user.id, environment: .sandbox)))
                #expect(await after.currencyWallets(owner: user.id, environment: .sandbox) == [:])
            } catch {
                Issue.record("\(error)")
            }
        }
    }

    @Test(
        "with coins and gems, the coins' ledger is the one-currency ledger and the gems' an independent ledger of gems")
    func independent() async throws {
        let single = try Self.catalog([])
        let several = try Self.catalog(["coins", "gems"], gems: 3)
        await propertyCheck(count: 200, input: Gen.int(in: 0...Int(Int32.max)).array(of: 1...40)) { codes in
            do {
                let user = Make.user("_aaaaaaaaaaa1")
                // Purchases, refunds and reversals go to both currencies; a third of the grants, adjustments and
                // spends name gems.
                let requests = codes.map { code in
                    let event = RandomEvent(code).event
                    let gems = event.transaction == nil && (code >> 13) % 3 == 0
                    return LedgerRequest(
                        owner: user.id, environment: .sandbox, event: event, at: Make.start,
                        currency: gems ? Self.gems : nil)
                }
                let both = try await Self.store(user)
                let results = try await Self.apply(requests, catalog: several, to: both)

                // The coins: what the default currency's requests do alone, with the one-currency catalog.
                let coinRequests = requests.filter { $0.currency == nil }
                let coins = try await Self.store(user)
                let coinResults = try await Self.apply(coinRequests, catalog: single, to: coins)
                // A request in both currencies answers the default's result unless gems refused it.
                let answered = zip(requests, results).filter { $0.0.currency == nil }.map(\.1)
                for (alone, together) in zip(coinResults, answered) {
                    if case .success(let result) = together { #expect(alone == .success(result)) }
                }
                #expect(
                    await both.entries(owner: user.id, environment: .sandbox)
                        == (await coins.entries(owner: user.id, environment: .sandbox)))
                #expect(
                    await both.wallet(owner: user.id, environment: .sandbox)
                        == (await coins.wallet(owner: user.id, environment: .sandbox)))

                // The gems: the same story told in gems (3 a unit) to a ledger of one currency.
                let gemRequests = requests.compactMap { request -> LedgerRequest? in
                    var projected = request
                    projected.currency = nil
                    switch request.event {
                    case .purchase(let fact, _):
                        projected.event = .purchase(fact, credits: fact.isFamilyShared ? 0 : 3 * Int64(fact.quantity))
                    case .revocation, .reversal: break
                    default: guard request.currency == Self.gems else { return nil }
                    }
                    return projected
                }
                let gemsAlone = try await Self.store(user)
                _ = try await Self.apply(gemRequests, catalog: single, to: gemsAlone)
                let gemEntries = await both.entries(owner: user.id, environment: .sandbox, currency: Self.gems)
                #expect(gemEntries.allSatisfy { $0.currency == Self.gems })
                #expect(
                    gemEntries.map { entry in
                        var plain = entry
                        plain.currency = nil
                        return plain
                    } == (await gemsAlone.entries(owner: user.id, environment: .sandbox)))
                #expect(
                    (await both.currencyWallets(owner: user.id, environment: .sandbox))[Self.gems] ?? .empty
                        == (await gemsAlone.wallet(owner: user.id, environment: .sandbox)))
                #expect(
                    LedgerAudit.discrepancies(
                        entries: gemEntries,
                        wallet: (await both.currencyWallets(owner: user.id, environment: .sandbox))[Self.gems] ?? .empty
                    )
                        == [])
            } catch {
                Issue.record("\(error)")
            }
        }
    }
}
