import CofferCore
import CofferTestSupport
import Foundation
import Testing

@Suite("Catalog")
struct CatalogTests {
    @Test("the documented shape loads with every field")
    func loadsDocumentedShape() throws {
        let catalog = try Fixture.catalog()
        #expect(
            catalog.products.map(\.id) == [
                "com.example.credits.400k", "com.example.noads", "com.example.pro.monthly", "com.example.pro.lifetime",
            ])
        let credits = try #require(catalog.product(id: "com.example.credits.400k"))
        #expect(credits.kind == .consumable)
        #expect(credits.credits == 400_000)
        let monthly = try #require(catalog.product(id: "com.example.pro.monthly"))
        #expect(monthly.kind == .autoRenewable)
        #expect(monthly.group == "pro")
        #expect(monthly.entitlements == ["premium"])
        #expect(catalog.loyalty == [LoyaltyRule(group: "pro", periods: 12, entitlements: ["premium", "lifetime"])])
    }

    @Test("the catalog the server serves reads back to the same catalog, in the file's shape")
    func servedShape() throws {
        let catalog = try Fixture.catalog()
        let served = catalog.json()
        #expect(try Catalog(json: served) == catalog)
        let document = try #require(try JSONSerialization.jsonObject(with: served) as? [String: Any])
        #expect(Set(document.keys) == ["products", "loyalty"])
        let first = try #require((document["products"] as? [[String: Any]])?.first)
        #expect(first["id"] as? String == "com.example.credits.400k" && first["kind"] as? String == "consumable")
        #expect(first["credits"] as? Int == 400_000)
    }

    @Test("a product's optional name is what support sees; without one, its id")
    func displayName() throws {
        let json =
            #"{"products": [{"id": "a", "kind": "consumable", "credits": 5, "name": "Five credits"}, "#
            + #"{"id": "b", "kind": "consumable", "credits": 6}]}"#
        let catalog = try Catalog(json: Data(json.utf8))
        #expect(catalog.product(id: "a")?.name == "Five credits")
        #expect(catalog.product(id: "a")?.displayName == "Five credits")
        #expect(catalog.product(id: "b")?.name == nil)
        #expect(catalog.product(id: "b")?.displayName == "b")
        #expect(try Fixture.catalog().product(id: "com.example.credits.400k")?.displayName == "400,000 credits")
    }

    @Test("loyalty periods default to 12")
    func loyaltyDefault() throws {
        let json = """
            {"products": [{"id": "m", "kind": "autoRenewable", "group": "g", "entitlements": ["premium"]}],
             "loyalty": [{"group": "g", "entitlements": ["lifetime"]}]}
            """
        let catalog = try Catalog(json: Data(json.utf8))
        #expect(catalog.loyalty.first?.periods == 12)
    }

    @Test(
        "bad catalogs are refused with an error naming the fault",
        arguments: [
            (#"{"products": [{"id": "a", "kind": "gizmo"}]}"#, CatalogError.unknownKind(productId: "a", kind: "gizmo")),
            (
                #"{"products": [{"id": "a", "kind": "consumable"}, {"id": "a", "kind": "consumable"}]}"#,
                .duplicateProductId("a")
            ),
            (
                #"{"products": [{"id": "a", "kind": "consumable", "credits": -5}]}"#,
                .negativeCredits(productId: "a", credits: -5)
            ),
            (#"{"products": [{"id": "", "kind": "consumable"}]}"#, .emptyProductId),
            (
                #"{"products": [{"id": "a", "kind": "consumable", "entitlements": ["x"]}]}"#,
                .consumableWithEntitlements(productId: "a")
            ),
            (#"{"products": [{"id": "a", "kind": "autoRenewable"}]}"#, .subscriptionWithoutGroup(productId: "a")),
            (
                #"{"products": [{"id": "a", "kind": "nonRenewing", "durationDays": 0}]}"#,
                .invalidDuration(productId: "a", days: 0)
            ),
            (
                #"{"products": [{"id": "a", "kind": "consumable"}], "loyalty": [{"group": "pro", "entitlements": []}]}"#,
                .loyaltyUnknownGroup("pro")
            ),
            (
                #"{"products": [{"id": "a", "kind": "autoRenewable", "group": "g"}], "loyalty": [{"group": "g", "periods": 0, "entitlements": []}]}"#,
                .loyaltyInvalidPeriods(group: "g", periods: 0)
            ),
            (
                #"{"products": [{"id": "a", "kind": "autoRenewable", "group": "g"}], "loyalty": [{"group": "g", "entitlements": []}, {"group": "g", "entitlements": []}]}"#,
                .duplicateLoyaltyGroup("g")
            ),
            (#"{"products": [{"id": "a", "kind": "consumable", "name": " "}]}"#, .invalidName(productId: "a")),
            (
                #"{"products": [{"id": "a", "kind": "consumable", "name": ""#
                    + String(repeating: "x", count: 101) + #""}]}"#,
                .invalidName(productId: "a")
            ),
        ])
    func refusesBadCatalogs(json: String, expected: CatalogError) {
        #expect(throws: expected) { try Catalog(json: Data(json.utf8)) }
    }

    @Test("malformed JSON, repeated keys, wrong types and missing fields are refused clearly")
    func refusesMalformed() {
        let cases: [(String, String)] = [
            (#"{"products": [}"#, "malformed JSON"),
            (
                #"{"products": [{"id": "a", "kind": "consumable", "credits": 1, "credits": 2}]}"#,
                "duplicate key \"credits\""
            ),
            (#"{"products": [{"id": "a", "kind": "consumable", "credits": "many"}]}"#, "products[0].credits: expected"),
            (#"{"products": [{"kind": "consumable"}]}"#, "missing field \"id\""),
            (#"{"items": []}"#, "missing field \"products\""),
        ]
        for (json, fragment) in cases {
            do {
                _ = try Catalog(json: Data(json.utf8))
                Issue.record("accepted \(json)")
            } catch {
                #expect(error.description.contains(fragment), "\(error.description) should mention \(fragment)")
            }
        }
    }

    @Test("a purchase delivers credits × quantity, nothing when family-shared, and unknown products are refused")
    func creditsPerPurchase() throws {
        let catalog = try Fixture.catalog()
        #expect(
            try catalog.credits(productId: "com.example.credits.400k", quantity: 3, familyShared: false) == 1_200_000)
        #expect(try catalog.credits(productId: "com.example.credits.400k", quantity: 3, familyShared: true) == 0)
        #expect(try catalog.credits(productId: "com.example.noads", quantity: 1, familyShared: false) == 0)
        #expect(throws: LedgerError.unknownProduct("com.example.nope")) {
            try catalog.credits(productId: "com.example.nope", quantity: 1, familyShared: false)
        }
        #expect(throws: LedgerError.invalidAmount(0)) {
            try catalog.credits(productId: "com.example.credits.400k", quantity: 0, familyShared: false)
        }
    }

    @Test("the example catalog shipped in Examples/ is the one the tests load")
    func exampleMatchesFixture() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let example = try Catalog(json: Data(contentsOf: root.appendingPathComponent("Examples/catalog.json")))
        #expect(example == (try Fixture.catalog()))
    }
}
