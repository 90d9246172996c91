import CofferAppStore
import CofferCore
import Foundation
import Testing

/// The catalog `GET /v1/catalog` serves, in each shape a catalog can have, against the OpenAPI document's `Catalog`
/// schema: none of its currencies named, one named, several (the shape a later version serves).
@Suite("The served catalog's schema")
struct CatalogSchemaTests {
    static func catalog(_ text: String) throws -> Catalog { try Catalog(json: Data(text.utf8)) }

    @Test(
        "every shape of the served catalog is one the document's Catalog schema accepts",
        arguments: [
            #"{"products": [{"id": "p", "kind": "consumable", "credits": 400}]}"#,
            #"{"currencies": [{"id": "coins", "name": "Coins"}], "products": [{"id": "p", "kind": "consumable", "#
                + #""credits": {"coins": 400}}]}"#,
            #"{"currencies": [{"id": "coins"}, {"id": "gems"}], "products": [{"id": "p", "kind": "consumable", "#
                + #""credits": {"coins": 400, "gems": 4}}, {"id": "n", "kind": "nonConsumable", "#
                + #""entitlements": ["adFree"]}]}"#,
        ])
    func servedShapes(text: String) throws {
        let api = try DocumentedAPI()
        let served = try JSONSchemaValidator.parse(try Self.catalog(text).json())
        let failures = try api.validator.validate(
            served, against: .object(["$ref": .string("#/components/schemas/Catalog")]))
        #expect(failures.isEmpty, "\(failures)")
    }
}
