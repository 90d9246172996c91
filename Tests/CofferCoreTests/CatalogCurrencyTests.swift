import CofferCore
import Foundation
import Testing

/// A catalog's currencies (issue 39 §1): `credits` a number of the default currency or an object by currency, the
/// `currencies` list with display names, and the shape served to apps that older SDKs still read.
@Suite("Catalog currencies")
struct CatalogCurrencyTests {
    static let coinsAndGems = """
        {"currencies": [{"id": "coins", "name": "Coins"}, {"id": "gems", "name": "Gems"}],
         "products": [
           {"id": "com.example.chest", "kind": "consumable", "credits": {"coins": 1000, "gems": 10}},
           {"id": "com.example.coins", "kind": "consumable", "credits": 500},
           {"id": "com.example.gems", "kind": "consumable", "credits": {"gems": 25}},
           {"id": "com.example.noads", "kind": "nonConsumable", "entitlements": ["adFree"]}]}
        """

    static func catalog(_ text: String) throws(CatalogError) -> Catalog { try Catalog(json: Data(text.utf8)) }

    static func coin(_ id: String) throws -> Currency { try #require(Currency(rawValue: id)) }

    @Test("credits by currency: the first listed is the default, a number is of it, an object names each")
    func byCurrency() throws {
        let catalog = try Self.catalog(Self.coinsAndGems)
        let (coins, gems) = (try Self.coin("coins"), try Self.coin("gems"))
        #expect(catalog.defaultCurrency == coins)
        #expect(catalog.currencies.map(\.name) == ["Coins", "Gems"])
        #expect(
            try catalog.creditsByCurrency(productId: "com.example.chest", quantity: 3, familyShared: false)
                == [coins: 3_000, gems: 30])
        #expect(
            try catalog.creditsByCurrency(productId: "com.example.coins", quantity: 1, familyShared: false)
                == [coins: 500])
        #expect(
            try catalog.creditsByCurrency(productId: "com.example.gems", quantity: 2, familyShared: false)
                == [gems: 50])
        #expect(try catalog.creditsByCurrency(productId: "com.example.noads", quantity: 1, familyShared: false) == [:])
        #expect(try catalog.creditsByCurrency(productId: "com.example.chest", quantity: 1, familyShared: true) == [:])
        // Until the ledger keeps several currencies, a product that gives more than the default one is not delivered
        // at all (never in part); one that gives the default currency alone is as before.
        #expect(try catalog.credits(productId: "com.example.coins", quantity: 2, familyShared: false) == 1_000)
        for several in ["com.example.chest", "com.example.gems"] {
            #expect {
                _ = try catalog.credits(productId: several, quantity: 1, familyShared: false)
            } throws: { error in
                (error as? LedgerError)?.description.contains("credits in several currencies") == true
            }
        }
    }

    @Test("served: credits stays a number an older app reads, the other currencies beside it, read back the same")
    func served() throws {
        let catalog = try Self.catalog(Self.coinsAndGems)
        let served = catalog.json()
        #expect(try Catalog(json: served) == catalog)
        let document = try #require(try JSONSerialization.jsonObject(with: served) as? [String: Any])
        let products = try #require(document["products"] as? [[String: Any]])
        #expect(products[0]["credits"] as? Int == 1_000)
        #expect(products[0]["otherCredits"] as? [String: Int] == ["gems": 10])
        #expect(products[2]["credits"] as? Int == 0)
        #expect(products[1]["otherCredits"] == nil)
        let currencies = try #require(document["currencies"] as? [[String: String]])
        #expect(currencies == [["id": "coins", "name": "Coins"], ["id": "gems", "name": "Gems"]])
    }

    @Test("a catalog of one currency is as before: Credits, numbers, no currencies served")
    func oneCurrency() throws {
        let catalog = try Self.catalog(#"{"products": [{"id": "p", "kind": "consumable", "credits": 400}]}"#)
        #expect(catalog.defaultCurrency == .credits && !catalog.listsCurrencies)
        #expect(catalog.currencies == [CurrencyDefinition(id: .credits, name: "Credits")])
        #expect(try catalog.creditsByCurrency(productId: "p", quantity: 2, familyShared: false) == [.credits: 800])
        let document = try #require(try JSONSerialization.jsonObject(with: catalog.json()) as? [String: Any])
        #expect(document["currencies"] == nil)
        // An object naming the one currency is the same catalog.
        let named = try Self.catalog(#"{"products": [{"id": "p", "kind": "consumable", "credits": {"credits": 400}}]}"#)
        #expect(named == catalog)
    }

    @Test(
        "refused, naming what is wrong",
        arguments: [
            (#"{"currencies": [], "products": []}"#, "currencies: list at least one"),
            (#"{"currencies": [{"id": "Gems"}], "products": []}"#, "is not a currency id"),
            (#"{"currencies": [{"id": "gems"}, {"id": "gems"}], "products": []}"#, "gems is listed twice"),
            (#"{"currencies": [{"id": "gems", "name": " "}], "products": []}"#, "a name has 1 to 40 characters"),
            (
                #"{"products": [{"id": "p", "kind": "consumable", "credits": {"gems": 5}}]}"#,
                "product p: credits in \"gems\", which the catalog's currencies list does not name"
            ),
            (
                #"{"currencies": [{"id": "coins"}], "products": [{"id": "p", "kind": "consumable", "#
                    + #""credits": {"coins": -1}}]}"#,
                "product p: credits must not be negative (got -1)"
            ),
            (
                #"{"currencies": [{"id": "coins"}, {"id": "gems"}], "products": [{"id": "p", "kind": "consumable", "#
                    + #""credits": {"gems": -2}}]}"#,
                "currencies: product p: credits in gems must not be negative (got -2)"
            ),
            (
                #"{"currencies": [{"id": "coins"}], "products": [{"id": "p", "kind": "consumable", "credits": 1, "#
                    + #""otherCredits": {"coins": 3}}]}"#,
                "coins is the default currency: give its credits as credits"
            ),
            (
                #"{"currencies": [{"id": "coins"}], "products": [{"id": "p", "kind": "consumable", "#
                    + #""credits": {"Gems": 3}}]}"#,
                "product p: \"Gems\" is not a currency id"
            ),
            (
                #"{"currencies": [{"id": "coins"}, {"id": "gems"}], "products": [{"id": "p", "kind": "consumable", "#
                    + #""credits": {"gems": 1}, "otherCredits": {"gems": 1}}]}"#,
                "not both"
            ),
            (
                #"{"products": [{"id": "p", "kind": "consumable", "credits": 1.5}]}"#,
                "products[0].credits: expected a whole"
            ),
        ])
    func refused(text: String, message: String) {
        #expect {
            _ = try Self.catalog(text)
        } throws: { error in
            (error as? CatalogError)?.description.contains(message) == true
        }
    }

    @Test("a currency id: 1 to 32 lowercase letters, digits or _, starting with a letter")
    func currencyIds() {
        for good in ["coins", "gems", "c", "gold_2", String(repeating: "a", count: 32)] {
            #expect(Currency(rawValue: good)?.rawValue == good)
        }
        for bad in ["", "Coins", "2gems", "_gems", "gems!", "gé", String(repeating: "a", count: 33)] {
            #expect(Currency(rawValue: bad) == nil)
        }
    }

    @Test(
        "the mailbox's reversal of a chest refunded before delivery delivers it in every currency, each its own amount")
    func mirroredReversal() throws {
        let catalog = try Self.catalog(Self.coinsAndGems)
        let fact = TransactionFact(transactionId: "t1", productId: "com.example.chest", purchaseDate: Date())
        var receipt = Receipt(owner: UUID(), transaction: fact)
        receipt.revokedAt = fact.purchaseDate
        let events = Delivery.mirrored(
            kind: .reversal, key: "reversal:t1", amount: 0, reason: "why", at: fact.purchaseDate, receipt: receipt,
            balance: 0, catalog: catalog)
        #expect(events == [.reversal(fact, at: fact.purchaseDate), .purchase(fact, credits: 1_000)])
        let purchase = LedgerRequest(owner: receipt.owner, environment: .sandbox, event: events[1], at: Date())
        let requests = try catalog.inEveryCurrency(purchase, allowances: false)
        #expect(requests.map(\.currency) == [nil, try Self.coin("gems")])
        #expect(requests.last?.event == .purchase(fact, credits: 10))
    }
}
