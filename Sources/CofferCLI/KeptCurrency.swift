import CofferCore
import CofferStore

/// The default currency a database keeps (a cursor written the first time a catalog that lists currencies opens
/// it): the default currency's ledger is the one every balance from before several currencies is in, so a catalog
/// that lists another currency first would show one currency's balances as another's. A catalog that lists none
/// (its one currency, `credits`) keeps whatever the database holds: naming it later (`coins`) is a rename.
enum KeptCurrency {
    /// The cursor's name.
    static let cursor = "catalog.default-currency"

    /// Why `catalog` cannot open a database that keeps `kept` as its default currency, or `nil` when it can.
    static func refusal(_ catalog: Catalog, kept: String) -> String? {
        let chosen = catalog.defaultCurrency.rawValue
        guard catalog.listsCurrencies, kept != chosen else { return nil }
        return "the catalog lists \(chosen) first, but this database keeps its default currency's balances (every "
            + "balance from before several currencies) in \(kept): list \(kept) first in the catalog's currencies"
    }

    /// Checks `catalog` against the default currency `store` keeps, and records it when the database keeps none yet.
    ///
    /// - Throws: ``CommandFailure`` when the catalog lists another currency first, saying which to list first.
    static func check(_ store: any CofferStore, _ catalog: Catalog) async throws {
        guard catalog.listsCurrencies else { return }
        let chosen = catalog.defaultCurrency.rawValue
        var kept: String?
        for environment in AppStoreEnvironment.allCases where kept == nil {
            kept = try await store.cursor(cursor, environment: environment)
        }
        if let kept {
            if let refusal = refusal(catalog, kept: kept) { throw CommandFailure(refusal) }
            return
        }
        for environment in AppStoreEnvironment.allCases {
            try await store.saveCursor(cursor, value: chosen, environment: environment)
        }
    }
}
