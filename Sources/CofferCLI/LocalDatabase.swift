import ArgumentParser
import CofferCore
import CofferStore
import CofferStorePostgres
import Configuration
import Foundation

/// Opening the local database a command names, found as `coffer serve` finds it.
enum LocalDatabase {
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

    /// The store at `url`, else where `coffer serve` finds it (`COFFER_DATABASE_URL`, the config file), else
    /// sqlite:coffer.sqlite.
    static func open(_ url: String?, config: String? = nil) async throws -> any CofferStore {
        try await open(try await settings(flags: ["database.url": url], config: config))
    }

    /// The store the settings name (migrated).
    static func open(_ settings: SupportSettings) async throws -> any CofferStore {
        do {
            return try await settings.database.open(timeout: settings.databaseTimeout).store
        } catch {
            throw CommandFailure("cannot open the database \(settings.database.shown): \(error)")
        }
    }

    /// Releases a store's connections.
    static func close(_ store: any CofferStore) async {
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
