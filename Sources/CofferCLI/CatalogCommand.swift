import ArgumentParser
import CofferCore
import Foundation

/// `coffer catalog ...`: work with the product catalog file.
struct CatalogCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "catalog",
        abstract: "Check the product catalog.",
        subcommands: [Check.self]
    )

    /// `coffer catalog check FILE`: load a catalog and print what it sells, or the first error.
    struct Check: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Load a catalog file, report the first error or list its products.")

        @Argument(help: "The catalog JSON file.")
        var file: String

        @Flag(help: "Print the catalog as JSON.")
        var json = false

        func run() async throws {
            let catalog: Catalog
            do {
                catalog = try Catalog(json: try Data(contentsOf: URL(fileURLWithPath: file)))
            } catch let error as CatalogError {
                throw CommandFailure("\(file): \(error)")
            } catch {
                throw CommandFailure("\(file): cannot read: \(error.localizedDescription)")
            }
            if json {
                print(
                    try JSONText.encode(
                        CatalogSummary(
                            products: catalog.products, loyalty: catalog.loyalty, currencies: catalog.currencies)))
                return
            }
            print("\(file): OK, \(catalog.products.count) products, \(catalog.loyalty.count) loyalty rules")
            if catalog.listsCurrencies {
                print("currency: \(catalog.defaultCurrency) (\(catalog.currencies[0].name))")
            }
            var table = TextTable(["product", "kind", "credits", "group", "entitlements"])
            for product in catalog.products {
                table.add([
                    product.id, product.kind.rawValue, String(product.credits), product.group ?? "",
                    product.entitlements.joined(separator: ", "),
                ])
            }
            print(table.render())
            for rule in catalog.loyalty {
                print(
                    "loyalty: \(rule.periods) paid periods of \(rule.group) unlock "
                        + rule.entitlements.joined(separator: ", "))
            }
        }
    }
}

private struct CatalogSummary: Encodable {
    var products: [CatalogProduct]
    var loyalty: [LoyaltyRule]
    var currencies: [CurrencyDefinition]
}
