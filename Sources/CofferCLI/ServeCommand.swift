import ArgumentParser
import AsyncHTTPClient
import CofferAdmin
import CofferAppStore
import CofferCore
import CofferServer
import CofferService
import CofferStore
import CofferStorePostgres
import CofferStoreSQLite
import Configuration
import Foundation
import Hummingbird
import Logging
import SystemPackage

/// `coffer serve`: the Coffer server.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run the Coffer server: users, verified purchases delivered once, balances and entitlements.",
        discussion: """
            Every setting comes from (highest first) a flag, a COFFER_* environment variable, or the JSON \
            config file (--config, else COFFER_CONFIG, else coffer.json in the working folder when there is one; \
            the start line names it); coffer settings and docs/operations.md list them all. Defaults: a SQLite database coffer.sqlite in the \
            working folder, 127.0.0.1:8080, Sandbox. Apple Root CA - G3 is always trusted; --apple-root adds a \
            root (the App Store simulator's), accepted in Sandbox only. Stops gracefully on SIGINT and SIGTERM.
            """
    )

    @OptionGroup var flags: ServeFlags

    func run() async throws {
        let settings = try await flags.settings()
        let server = settings.server
        guard let appStoreEnvironment = SignedDataEnvironment(name: server.environment.rawValue) else {
            throw ValidationError("unknown environment \(server.environment.rawValue)")
        }
        let apple: AppleParts
        do {
            apple = try AppleParts(settings, environment: appStoreEnvironment)
        } catch {
            FileHandle.standardError.write(Data("Error: \(error)\n".utf8))
            throw ExitCode(2)
        }
        let (products, roots, xcode, verifier, apnsPEM) =
            (apple.catalog, apple.roots, apple.xcode, apple.verifier, apple.apnsPEM)
        let level = Logger.Level(rawValue: settings.logLevel) ?? .info
        let logger = settings.logFormat.logger(label: "coffer", level: level)
        let composition: Composition
        do {
            composition = try await Composition.open(
                database: settings.database, timeout: settings.databaseTimeout, catalog: products,
                runner: .serviceGroup, logger: settings.logFormat.logger(label: "coffer.postgres", level: level))
        } catch let refusal as CommandFailure {
            FileHandle.standardError.write(Data("Error: catalog: \(refusal)\n".utf8))
            throw ExitCode(2)
        } catch {
            FileHandle.standardError.write(Data("Error: database.url: \(error)\n".utf8))
            throw ExitCode(2)
        }
        let store = composition.store
        let http = HTTPClient(eventLoopGroupProvider: .singleton)
        // Webhooks go to the developer's own backend: its redirects are not followed, and a connection waits 5 s.
        var hookConfiguration = HTTPClient.Configuration(redirectConfiguration: .disallow)
        hookConfiguration.timeout = .init(connect: .seconds(5), read: .seconds(10))
        // A round posts up to 32 at once: as many connections, so none waits for one past its deadline.
        hookConfiguration.connectionPool = .init(
            idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: 32)
        let hooks = HTTPClient(eventLoopGroupProvider: .singleton, configuration: hookConfiguration)
        let appStoreAPI = try apple.appStoreAPI(http)
        var push: APNsClient?
        if let key = settings.apnsKey, let apnsPEM {
            do {
                push = APNsClient(
                    httpClient: http,
                    credentials: try .init(keyId: key.keyId, teamId: key.teamId, privateKeyPEM: apnsPEM),
                    topic: key.topic, baseURL: key.baseURL, gateway: key.gateway)
            } catch {
                FileHandle.standardError.write(Data("Error: apns.private.key: \(error)\n".utf8))
                throw ExitCode(2)
            }
        }
        var cloudKitIdentity: CloudKitUserIdentity?
        if let cloudKit = settings.cloudKit {
            do {
                cloudKitIdentity = try CloudKitUserIdentity(
                    httpClient: http, container: cloudKit.container, environment: cloudKit.environment,
                    apiToken: cloudKit.apiToken, baseURL: cloudKit.baseURL)
            } catch {
                FileHandle.standardError.write(Data("Error: cloudkit.container: \(error)\n".utf8))
                throw ExitCode(2)
            }
        }
        // Written straight away (print buffers when stdout is a pipe), so supervisors and tests see it; in the
        // JSON log format, as log lines like every other.
        let say: @Sendable (String) -> Void = { text in
            if settings.logFormat == .json {
                for line in text.split(separator: "\n") { logger.notice("\(line)") }
            } else {
                FileHandle.standardOutput.write(Data((text + "\n").utf8))
            }
        }
        let (config, apiKeyed, pushing) = (flags.config, appStoreAPI != nil, push != nil)
        let app = try buildApplication(
            configuration: server,
            dependencies: try ServerDependencies(
                store: store, verifier: verifier, catalog: composition.catalog, appStoreAPI: appStoreAPI,
                receiptReader: AppReceiptReader(trustedRoots: [AppleRoots.rootCA()] + roots.dropFirst()),
                logger: logger, push: push,
                // Instances sharing a PostgreSQL database hear each other's events (LISTEN/NOTIFY).
                broadcast: store as? any EventBroadcast, cloudKitIdentity: cloudKitIdentity,
                services: composition.services, webhookSender: HTTPWebhookSender(client: hooks)),
            // Once PostgreSQL's pool runs in the service group, and before the server listens.
            beforeServing: {
                try await Self.prepare(
                    store: store, settings: settings, catalog: composition.catalog,
                    banner: Self.banner(
                        server, location: composition.location, config: config, apiKeyed: apiKeyed,
                        pushing: pushing, xcode: xcode),
                    say: say)
            })
        do {
            try await app.runService()
        } catch {
            try await hooks.shutdown()
            try await http.shutdown()
            throw error
        }
        try await hooks.shutdown()
        try await http.shutdown()
    }

    /// What `coffer serve` does once the database's pool runs and before the server listens: refuses a catalog that
    /// lists another default currency than the database keeps (``KeptCurrency``), records the wallet and environment
    /// the database's server keeps (so support's commands on it find them), creates the first admin,
    /// and says where the server and its panel are.
    static func prepare(
        store: any CofferStore, settings: ServeSettings, catalog: Catalog, banner: String,
        say: @Sendable (String) -> Void
    ) async throws {
        do {
            try await KeptCurrency.check(store, catalog)
        } catch let refusal as CommandFailure {
            FileHandle.standardError.write(Data("Error: catalog: \(refusal)\n".utf8))
            throw ExitCode(2)
        }
        let server = settings.server
        try await store.saveCursor(
            ServedWallet.cursor, value: server.wallet.rawValue, environment: server.environment)
        let firstLogin: String?
        do {
            firstLogin = try await AdminAccounts.createFirstAdmin(
                store: store, hasher: PasswordHasher(), now: Date())
        } catch {
            FileHandle.standardError.write(Data("Error: cannot create the first admin: \(error)\n".utf8))
            throw ExitCode(2)
        }
        say(banner)
        let panelHost = server.host == "0.0.0.0" || server.host == "::" ? "127.0.0.1" : server.host
        var panel = "Admin panel: http://\(panelHost):\(server.port)/admin"
        panel += server.panel.allowRemote ? " (open to other machines)" : " (this machine only)"
        if let firstLogin {
            let change = "change it with `coffer admin reset-password --name \(AdminAccounts.firstAdminName)`"
            if isatty(STDOUT_FILENO) == 1 {
                panel +=
                    "\nFirst run: sign in as \(AdminAccounts.firstAdminName) with password \(firstLogin)"
                    + "\n(shown once; \(change))"
            } else {
                // Standard output goes to a log: the password goes to an owner-only file instead.
                let file = Self.firstPasswordFile(settings.database)
                do {
                    try OwnerOnlyFile.write(Data((firstLogin + "\n").utf8), to: file, exclusive: false)
                } catch {
                    FileHandle.standardError.write(
                        Data("Error: cannot write the first admin password: \(error)\n".utf8))
                    throw ExitCode(2)
                }
                panel +=
                    "\nFirst run: sign in as \(AdminAccounts.firstAdminName) with the password in \(file)"
                    + " (owner-only; delete the file once you have signed in, or \(change))"
            }
        }
        say(panel)
    }

    /// The start line: what is served, where, from which settings, and what is off.
    static func banner(
        _ server: ServerConfiguration, location: String, config: String?, apiKeyed: Bool, pushing: Bool,
        xcode: XcodeCertificate?
    ) -> String {
        "Coffer serving \(server.bundleId) (\(server.environment.rawValue), \(server.wallet.rawValue) wallet) "
            + "on http://\(server.host):\(server.port), \(location)"
            + ((config ?? ServedWallet.defaultConfig()).map { ", settings from \($0)" } ?? "")
            + (apiKeyed ? "" : "; no App Store Server API key: recovery and consumption answers are off")
            + (pushing ? "" : "; no APNs key: apps hear of grants and refunds when they open")
            + (xcode.map {
                "; accepting Xcode's StoreKit testing data signed by certificate \($0.fingerprint.prefix(16))…"
            }
                ?? "")
    }

    /// Where the first-run admin password is written when standard output is not a terminal: beside the
    /// SQLite database, or in the working folder for PostgreSQL.
    static func firstPasswordFile(_ database: ServeSettings.Database) -> String {
        let name = "coffer-first-admin-password"
        switch database {
        case .sqlite(let path):
            return URL(fileURLWithPath: path).deletingLastPathComponent().appendingPathComponent(name).path
        case .postgres:
            return FileManager.default.currentDirectoryPath + "/" + name
        }
    }
}

/// The flags of `coffer serve` (and `coffer doctor`, which checks what serve would run with): each one a
/// setting above the `COFFER_*` variables and the `--config` file.
struct ServeFlags: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "A JSON config file (keys as in docs/operations.md, e.g. {\"database\": {\"url\": \"...\"}}); default "
                + "COFFER_CONFIG, else coffer.json when there is one."))
    var config: String?

    @Option(help: "The address to listen on (default 127.0.0.1).")
    var host: String?

    @Option(help: "The port to listen on (default 8080).")
    var port: Int?

    @Option(help: "sqlite:PATH (default sqlite:coffer.sqlite) or postgres://user:password@host:port/db.")
    var databaseURL: String?

    @Option(help: "The environment served: Sandbox (default) or Production.")
    var environment: String?

    @Option(help: "The app's bundle id.")
    var bundleId: String?

    @Option(help: "The app's Apple id (required in Production).")
    var appAppleId: Int64?

    @Option(help: "The catalog of products (JSON, default catalog.json).")
    var catalog: String?

    @Option(help: "Who owns the balance: device (default, the app) or server.")
    var wallet: String?

    @Option(name: .customLong("apple-root"), help: "A DER root to trust as well, Sandbox only (repeatable).")
    var appleRoots: [String] = []

    @Option(
        help: ArgumentHelp(
            "Xcode's StoreKit testing certificate (PEM or DER): accept a .storekit file's purchases (Sandbox, loopback).",
            valueName: "file"))
    var xcodeCertificate: String?

    @Option(help: "In Production, also accept Sandbox purchases (App Review, TestFlight): true (default) or false.")
    var sandboxInProduction: Bool?

    @Option(help: "Log lines as text (default) or json (one object each, with the request id).")
    var logFormat: String?

    @Option(help: "The least severe log level written: trace, debug, info (default), notice, warning, error, critical.")
    var logLevel: String?

    /// The flags given, as configuration values above every other source.
    var flagValues: [AbsoluteConfigKey: ConfigValue] {
        var values: [AbsoluteConfigKey: ConfigValue] = [:]
        func set(_ key: String, _ value: String?) {
            if let value { values[AbsoluteConfigKey(ConfigKey(key))] = ConfigValue(.string(value), isSecret: false) }
        }
        set("host", host)
        set("port", port.map(String.init))
        set("database.url", databaseURL)
        set("environment", environment)
        set("bundle.id", bundleId)
        set("app.apple.id", appAppleId.map(String.init))
        set("catalog", catalog)
        set("wallet", wallet)
        set("apple.roots", appleRoots.isEmpty ? nil : appleRoots.joined(separator: ","))
        set("sandbox.in.production", sandboxInProduction.map(String.init))
        set("log.format", logFormat)
        set("log.level", logLevel)
        set("xcode.certificate", xcodeCertificate)
        return values
    }

    /// The settings these flags, the environment and the config file give.
    ///
    /// - Throws: `ValidationError` naming the key of a value that does not parse, or the unreadable config file.
    func settings() async throws -> ServeSettings {
        do {
            return try ServeSettings(reader: try await Self.reader(flags: flagValues, config: config))
        } catch let error as SettingsError {
            throw ValidationError(error.description)
        }
    }

    /// Where every command that reads `coffer serve`'s settings reads them: `flags` first, then `COFFER_*`
    /// variables, then the JSON file `config`.
    ///
    /// - Throws: `ValidationError` for a config file that cannot be read.
    static func reader(flags: [AbsoluteConfigKey: ConfigValue], config: String?) async throws -> ConfigReader {
        var providers: [any ConfigProvider] = [
            InMemoryProvider(name: "flags", values: flags), EnvironmentVariablesProvider().prefixKeys(with: "coffer"),
        ]
        if let config = config ?? ServedWallet.defaultConfig() {
            do {
                providers.append(try await FileProvider<JSONSnapshot>(filePath: FilePath(config)))
            } catch {
                throw ValidationError("cannot read the config file \(config): \(error)")
            }
        }
        return ConfigReader(providers: providers)
    }
}
