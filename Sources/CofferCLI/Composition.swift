import ArgumentParser
import CofferAdmin
import CofferCore
import CofferService
import CofferStore
import CofferStorePostgres
import Configuration
import Foundation
import Logging
import ServiceLifecycle

/// The one composition root of the `coffer` binary. `coffer serve` and every command that works on the server's
/// database build from it: the settings read as serve reads them, the catalog, the database opened (migrated)
/// and closed, the environment and wallet the database's server keeps, and support's use cases built as the
/// server's (so a change made here reaches the app's event stream through the store's relay).
struct Composition: Sendable {
    /// The server's database.
    let store: any CofferStore
    /// Where it is, for people.
    let location: String
    /// The products the server sells (empty for a command whose default catalog file is absent).
    let catalog: Catalog

    /// The settings `flags` (keys as in docs/operations.md; `nil` for a flag not given), the `COFFER_*` variables
    /// and the config file give, as `coffer serve` reads them.
    static func settings(flags: [String: String?], config: String?) async throws -> SupportSettings {
        var values: [AbsoluteConfigKey: ConfigValue] = [:]
        for case (let key, let value?) in flags {
            values[AbsoluteConfigKey(ConfigKey(key))] = ConfigValue(.string(value), isSecret: false)
        }
        do {
            return try SupportSettings(reader: try await ServeFlags.reader(flags: values, config: config))
        } catch let error as SettingsError {
            throw ValidationError(error.description)
        }
    }

    /// The catalog in `file`; a missing file is an empty catalog unless it is `required` (serve's, or one a
    /// command named). A catalog of several currencies or with an allowance is refused for the device `wallet`
    /// (``walletRefusal(_:wallet:)``).
    static func catalog(file: String, required: Bool, wallet: WalletMode) throws -> Catalog {
        guard required || FileManager.default.fileExists(atPath: file) else { return try Catalog(products: []) }
        guard FileManager.default.fileExists(atPath: file) else { throw CommandFailure("no catalog at \(file)") }
        let catalog: Catalog
        do {
            catalog = try Catalog(json: Data(contentsOf: URL(fileURLWithPath: file)))
        } catch {
            throw CommandFailure("cannot read the catalog \(file): \(error)")
        }
        if let refusal = walletRefusal(catalog, wallet: wallet) {
            throw CommandFailure("the catalog \(file): \(refusal)")
        }
        return catalog
    }

    /// Why this version cannot sell `catalog` in `wallet`: in the device wallet, a subscription's allowance (the
    /// server wallet keeps credits that end; the SDK's device ledger keeps every currency's credits, none that end).
    static func walletRefusal(_ catalog: Catalog, wallet: WalletMode) -> String? {
        guard wallet == .device, let product = catalog.products.first(where: { !$0.allowance.isEmpty }) else {
            return nil
        }
        return "\(product.id) gives an allowance; in the device wallet this version keeps no credits that end "
            + "(the app's device ledger): set wallet = server to give allowances, or leave allowance out"
    }

    /// Opens `database` (migrating it) beside `catalog`, refusing a catalog that lists another default currency than
    /// the one the database keeps (``KeptCurrency``; for a PostgreSQL pool the service group runs, `coffer serve`
    /// checks once it runs).
    ///
    /// - Parameters:
    ///   - timeout: Seconds an operation waits on PostgreSQL, or on SQLite for another process's write.
    ///   - runner: Who runs PostgreSQL's pool: the store itself, or `coffer serve`'s service group.
    ///   - logger: Where PostgreSQL's client logs.
    static func open(
        database: ServeSettings.Database, timeout: Int, catalog: Catalog, runner: PostgresStore.Runner = .itself,
        logger: Logger = Logger(label: "coffer.postgres")
    ) async throws -> Composition {
        let (store, location) = try await database.open(timeout: timeout, runner: runner, logger: logger)
        let composition = Composition(store: store, location: location, catalog: catalog)
        // A pool the service group runs answers once the group starts: `coffer serve` checks in its preparation.
        guard runner == .itself || !(store is PostgresStore) else { return composition }
        do {
            try await KeptCurrency.check(store, catalog)
        } catch {
            await composition.close()
            throw error
        }
        return composition
    }

    /// Opens what `settings` name: the database, and the catalog unless `withCatalog` is off (a command that
    /// sells nothing).
    static func open(_ settings: SupportSettings, withCatalog: Bool = true) async throws -> Composition {
        // Without a wallet named, the one the database's server keeps decides what its catalog may hold: checked
        // once the database is open.
        let catalog =
            withCatalog
            ? try Self.catalog(
                file: settings.catalogFile, required: settings.catalogNamed,
                wallet: settings.walletNamed ? settings.wallet : .server)
            : try Catalog(products: [])
        let composition: Composition
        do {
            composition = try await open(
                database: settings.database, timeout: settings.databaseTimeout, catalog: catalog)
        } catch let refusal as CommandFailure {
            throw refusal
        } catch {
            throw CommandFailure("cannot open the database \(settings.database.shown): \(error)")
        }
        if withCatalog, !settings.walletNamed, let (_, wallet) = try? await composition.served(settings),
            let refusal = walletRefusal(catalog, wallet: wallet)
        {
            await composition.close()
            throw CommandFailure("the catalog \(settings.catalogFile): \(refusal)")
        }
        return composition
    }

    /// Runs `body` on what `settings` name, closing the database after whatever happens.
    static func with<T>(
        _ settings: SupportSettings, withCatalog: Bool = true, _ body: (Composition) async throws -> T
    ) async throws -> T {
        let composition = try await open(settings, withCatalog: withCatalog)
        do {
            let result = try await body(composition)
            await composition.close()
            return result
        } catch {
            await composition.close()
            throw error
        }
    }

    /// The environment and wallet to act on: those `settings` name, else what the database's server keeps
    /// (``ServedWallet/resolve(_:_:)``).
    func served(_ settings: SupportSettings) async throws -> (environment: AppStoreEnvironment, wallet: WalletMode) {
        try await ServedWallet.resolve(store, settings)
    }

    /// Support's use cases on this database, as the server's.
    func support(wallet: WalletMode) -> AdminService {
        .onServerDatabase(store: store, catalog: catalog, walletMode: wallet)
    }

    /// What `coffer serve`'s service group runs before the server and stops after it: PostgreSQL's pool, opened with
    /// ``PostgresStore/Runner/serviceGroup``, and the folding of its dashboard rollups.
    var services: [any Service] {
        guard let pool = store as? PostgresStore, pool.runner == .serviceGroup else { return [] }
        return [pool, RollupFolder(store: pool, clock: SystemTimerClock(), logger: Logger(label: "coffer.rollups"))]
    }

    /// Releases the database's connections.
    func close() async {
        (store as? PostgresStore)?.close()
    }
}

/// What a database says of the server that keeps it: the wallet `coffer serve` keeps in each environment it served
/// (a cursor written at start), so support's commands on it find that wallet and environment, and refuse another.
enum ServedWallet {
    /// The cursor's name.
    static let cursor = "serve.wallet"

    /// The config file read when none is named: `COFFER_CONFIG`, else `coffer.json` in the working folder when there
    /// is one.
    static func defaultConfig() -> String? {
        if let named = ProcessInfo.processInfo.environment["COFFER_CONFIG"], !named.isEmpty { return named }
        return FileManager.default.fileExists(atPath: "coffer.json") ? "coffer.json" : nil
    }

    /// The environment and wallet to act on: those the settings name, else what the database's server keeps (the
    /// only environment it served, the wallet it keeps there), else the defaults (Sandbox, device).
    ///
    /// - Throws: ``CommandFailure`` for a named environment or wallet the database's server does not keep, saying
    ///   what it holds and which flag to give.
    static func resolve(_ store: any CofferStore, _ settings: SupportSettings) async throws
        -> (environment: AppStoreEnvironment, wallet: WalletMode)
    {
        var environment = settings.environment
        var kept = try await store.cursor(cursor, environment: environment)
        let other: AppStoreEnvironment = environment == .production ? .sandbox : .production
        let there = try await store.cursor(cursor, environment: other)
        if kept != nil, there != nil, !settings.environmentNamed {
            throw CommandFailure(
                "this database holds a Sandbox server's customers and a Production server's: give --environment "
                    + "Sandbox or --environment Production (or --config with the server's config file)")
        }
        if kept == nil, let there {
            guard !settings.environmentNamed else {
                throw CommandFailure(
                    "this database is a \(other.rawValue) server's (the \(there) wallet): it holds no "
                        + "\(environment.rawValue) customers. Give --environment \(other.rawValue), or --config with "
                        + "the server's config file")
            }
            (environment, kept) = (other, there)
        }
        guard let kept, let keptWallet = WalletMode(rawValue: kept) else { return (environment, settings.wallet) }
        guard !settings.walletNamed || keptWallet == settings.wallet else {
            throw CommandFailure(
                "the \(environment.rawValue) server on this database keeps the \(kept) wallet, not the "
                    + "\(settings.wallet.rawValue) one (its balances are "
                    + (keptWallet == .server ? "on the server's ledger" : "the apps' backups")
                    + "). Give --wallet \(kept), or --config with the server's config file")
        }
        return (environment, keptWallet)
    }
}
