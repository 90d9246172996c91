import CofferAppStore
import CofferCore
import CofferServer
import CofferService
import CofferStore
import CofferStorePostgres
import CofferStoreSQLite
import Configuration
import Foundation
import Logging

/// One setting of `coffer serve`: its key in the config file, its environment variable and its flag.
struct SettingKey: Sendable {
    /// The dotted key, e.g. `database.url` (`{"database": {"url": ...}}` in the config file).
    var key: String
    /// What it does, with its default.
    var help: String

    /// The environment variable: `COFFER_` and the key in capitals, dots as underscores.
    var environmentVariable: String {
        "COFFER_" + key.uppercased().replacingOccurrences(of: ".", with: "_")
    }

    /// The command-line flag, when there is one: the key with dashes.
    var flag: String { "--" + key.replacingOccurrences(of: ".", with: "-") }

    /// The flag `coffer serve` takes for this key, if it takes one.
    var serveFlag: String? {
        switch key {
        case "apple.roots": "--apple-root"
        case "host", "port", "database.url", "environment", "bundle.id", "app.apple.id", "catalog", "wallet",
            "sandbox.in.production", "log.format", "log.level", "xcode.certificate":
            flag
        default: nil
        }
    }
}

/// Everything `coffer serve` reads, from (highest first) its flags, `COFFER_*` environment variables,
/// and a JSON config file (`--config`). Each value is checked here, with an error naming the key.
struct ServeSettings: Sendable {
    /// Every key, in the order docs/operations.md lists them (`coffer settings` prints that table).
    static let keys: [SettingKey] = [
        .init(key: "host", help: "Address to listen on. Default 127.0.0.1."),
        .init(key: "port", help: "Port to listen on. Default 8080."),
        .init(
            key: "database.url",
            help:
                "`sqlite:PATH` (or a plain path) or `postgres://user:password@host:port/db`. Default sqlite:coffer.sqlite."
        ),
        .init(
            key: "database.timeout",
            help:
                "Seconds a request waits on PostgreSQL (for a connection and its answers), or on SQLite for another "
                + "process's write, before it is answered 503 database-unavailable with Retry-After. Default 5."),
        .init(key: "environment", help: "Sandbox or Production. Default Sandbox."),
        .init(key: "bundle.id", help: "The app's bundle id. Required."),
        .init(key: "app.apple.id", help: "The app's Apple id. Required in Production."),
        .init(key: "catalog", help: "The product catalog (JSON). Default catalog.json."),
        .init(key: "wallet", help: "device (the app owns the balance) or server. Default device."),
        .init(
            key: "sandbox.in.production",
            help:
                "true: a Production server also accepts Sandbox purchases (App Review, TestFlight), verified against "
                + "Apple's roots. false for a separate Sandbox server. Default true."),
        .init(
            key: "app.transaction.max.age",
            help:
                "Seconds a signed AppTransaction stays good for registering a device to its Apple account "
                + "(POST /v1/users). Default 86400."),
        .init(
            key: "apple.roots",
            help:
                "Extra DER roots to trust, comma-separated (the simulator's, for signed data and legacy receipts); Sandbox only. Apple Root CA - G3 and Apple Root CA are always trusted."
        ),
        .init(
            key: "xcode.certificate",
            help:
                "The certificate Xcode's StoreKit testing signs with (PEM or DER, as a `.storekit` purchase's x5c "
                + "carries it): a Sandbox server listening on loopback then accepts transactions, renewal info and app "
                + "transactions signed by it alone that say Xcode. Refused in Production and on other addresses."),
        .init(
            key: "deficit.policy", help: "collect (later credits settle a deficit first) or forgive. Default collect."),
        .init(key: "body.limit", help: "Largest request body in bytes. Default 65536."),
        .init(key: "idle.timeout", help: "Seconds an idle connection stays open. Default 60."),
        .init(key: "request.timeout", help: "Seconds a request may take before it is answered 503. Default 30."),
        .init(
            key: "appstore.key.id",
            help: "In-App Purchase key id, for the App Store Server API (recovery, consumption) and offer signatures."),
        .init(key: "appstore.issuer.id", help: "Issuer id of that key."),
        .init(key: "appstore.private.key", help: "The key's .p8 file."),
        .init(key: "appstore.url", help: "Another App Store Server API host (the simulator's). Default Apple's."),
        .init(
            key: "apns.key.id",
            help: "APNs key id, for background pushes that wake the app when support grants or a refund lands."),
        .init(key: "apns.team.id", help: "The Apple Developer team id of that key."),
        .init(key: "apns.private.key", help: "The APNs key's .p8 file."),
        .init(key: "apns.topic", help: "The app's bundle id as APNs topic. Default bundle.id."),
        .init(key: "apns.url", help: "Another APNs host for both gateways (a stand-in). Default Apple's."),
        .init(
            key: "apns.environment",
            help:
                "sandbox or production: the APNs every push goes to. Default each device's own (as its app registered)."
        ),
        .init(
            key: "recovery.interval", help: "Seconds between notification recovery runs; 0 turns it off. Default 600."),
        .init(key: "recovery.lookback.days", help: "Days of Notification History the first run reads. Default 7."),
        .init(
            key: "reconcile.interval",
            help:
                "Time between reconciliations with Apple's history: seconds, 12h, 1d, hourly, daily or weekly; 0 turns them off. Default daily."
        ),
        .init(
            key: "reconcile.repair",
            help: "true (default) for the scheduled reconciliation to apply what is missing; false only reports it."),
        .init(
            key: "consumption.answer",
            help:
                "true to answer CONSUMPTION_REQUEST with ledger data (only with the customer's consent). Default false."
        ),
        .init(
            key: "consumption.version",
            help: "2 (Apple's current Send Consumption Information) or 1 (its older coded form). Default 2."),
        .init(
            key: "consumption.policy",
            help:
                "How the refund preference is chosen from the share used: grant-unused, decline-above=N, prorate, "
                + "comma-separated, or none. Default grant-unused,decline-above=50."),
        .init(
            key: "consumption.sample.content",
            help: "true when the app offers a free sample or trial of what it sells. Default false."),
        .init(
            key: "consumption.refund.preference",
            help: "Version 1 only: undeclared, grant, decline or none, sent with each answer. Default undeclared."),
        .init(
            key: "panel.remote",
            help:
                "true to answer the admin panel from other machines (put it behind TLS). Default false: loopback only."),
        .init(
            key: "panel.secure.cookies",
            help: "true to mark panel session cookies Secure with the __Host- prefix (behind TLS). Default false."),
        .init(key: "panel.session.hours", help: "Hours a panel session lasts. Default 8."),
        .init(
            key: "panel.host",
            help:
                "The public host name the panel is reached by (support.example.com); required with panel.remote. "
                + "The panel refuses other Host names than this and localhost (DNS rebinding)."),
        .init(
            key: "server.trusted.proxies",
            help:
                "Reverse proxies whose X-Forwarded-For names the real client, comma-separated addresses or CIDR "
                + "ranges (127.0.0.1, 10.0.0.0/8). Default none: the peer is the client."),
        .init(key: "limit.users.burst", help: "New users (POST /v1/users) per client address at once. Default 60."),
        .init(key: "limit.users.rate", help: "New users per client address per second after the burst. Default 1."),
        .init(key: "limit.login.burst", help: "Panel sign-in page requests per client address at once. Default 30."),
        .init(key: "limit.login.rate", help: "Sign-in page requests per address per second after it. Default 0.2."),
        .init(
            key: "limit.notifications.burst",
            help: "Notifications failing verification per client address before it is refused. Default 60."),
        .init(
            key: "limit.notifications.rate",
            help: "Failed notifications forgiven per address per second. Default 1. Apple's are never counted."),
        .init(
            key: "limit.devices",
            help:
                "Device tokens one Apple account's customer keeps; registering another revokes the oldest. Default 10."),
        .init(key: "events.streams.user", help: "Event streams (GET /v1/me/events) one user may hold. Default 4."),
        .init(
            key: "events.streams.address",
            help: "Event streams one client address (IPv6 by /64) may hold, whatever tokens it shows. Default 100."),
        .init(key: "events.streams.total", help: "Event streams open at once on this server. Default 1000."),
        .init(key: "connections.limit", help: "Connections open at once; more wait to be accepted. Default 4096."),
        .init(
            key: "read.timeout",
            help: "Seconds a client has to send a whole request (head and body); slower ones are cut off. Default 30."),
        .init(
            key: "metrics.token",
            help: "A secret: when set, /metrics answers only Authorization: Bearer <token>. Default none (open)."),
        .init(
            key: "cloudkit.api.token",
            help:
                "A secret: the container's API token from CloudKit Console. Set, a CloudKit claim must carry the "
                + "customer's web auth token, checked with CloudKit Web Services (users/caller). Default none."),
        .init(
            key: "cloudkit.claim.proof",
            help:
                "What a CloudKit claim must prove: web-auth-token (default with cloudkit.api.token; needs it) or "
                + "record-name (the old app's trust, weaker: the name is public; the default without a token)."),
        .init(
            key: "cloudkit.container", help: "The CloudKit container the claims come from. Default iCloud.BUNDLE_ID."),
        .init(key: "cloudkit.environment", help: "development or production: the container's. Default production."),
        .init(
            key: "cloudkit.url", help: "CloudKit Web Services' address (the simulator's, to rehearse). Default Apple's."
        ),
        .init(
            key: "webhook.url",
            help:
                "Where Coffer posts its signed events (docs/webhooks.md); more with `coffer webhooks add`. Default none."
        ),
        .init(
            key: "webhook.secret",
            help: "The secret that signs each webhook (16 to 256 characters). Required with webhook.url."),
        .init(
            key: "webhook.previous.secret",
            help: "During a rotation, the secret before: both sign (two v1= values) until it is removed. Default none."),
        .init(
            key: "apple.forward.url",
            help:
                "Where each notification Apple sent and Coffer verified is posted again, its body unchanged (your "
                + "existing backend's URL); repeatable, comma-separated in COFFER_APPLE_FORWARD_URL. Default none."),
        .init(key: "log.level", help: "trace, debug, info, notice, warning, error or critical. Default info."),
        .init(
            key: "log.format",
            help: "text (one line each) or json (one JSON object each, with the request id). Default text."),
    ]

    /// Where the data lives.
    enum Database: Equatable, Sendable {
        case sqlite(path: String)
        case postgres(url: String)

        /// The database a `database.url` names: `sqlite:PATH`, a plain path, or `postgres://...`.
        init(url: String) throws(SettingsError) {
            if url.hasPrefix("postgres://") || url.hasPrefix("postgresql://") {
                self = .postgres(url: url)
                return
            }
            let path = url.hasPrefix("sqlite:") ? String(url.dropFirst("sqlite:".count)) : url
            guard !path.isEmpty, !path.contains("://") else {
                var shown = URLComponents(string: url)
                if shown?.password != nil { shown?.password = "(hidden)" }
                throw SettingsError(
                    key: "database.url", value: shown?.string ?? "(hidden)",
                    expected: "sqlite:PATH, a file path, or postgres://...")
            }
            self = .sqlite(path: path)
        }

        /// Where it is, for people: the SQLite path, or PostgreSQL's host, port and database (never a password).
        var shown: String {
            switch self {
            case .sqlite(let path): "SQLite \(path)"
            case .postgres(let url):
                "PostgreSQL "
                    + (URLComponents(string: url).map { "\($0.host ?? "?"):\($0.port ?? 5432)\($0.path)" } ?? "?")
            }
        }

        /// Opens the store (migrating it), with a description of where it is for people.
        ///
        /// - Parameters:
        ///   - timeout: Seconds an operation waits on PostgreSQL, or on SQLite for another process's write.
        ///   - runner: Who runs PostgreSQL's pool: the store itself, or `coffer serve`'s service group.
        ///   - logger: Where PostgreSQL's client logs.
        func open(
            timeout: Int = 5, runner: PostgresStore.Runner = .itself, logger: Logger = Logger(label: "coffer.postgres")
        ) async throws -> (store: any CofferStore, location: String) {
            switch self {
            case .sqlite(let path):
                return (try SQLiteStore(path: path, busyTimeout: TimeInterval(timeout)), "SQLite \(path)")
            case .postgres(let url):
                let store = try await PostgresStore(
                    url: url, operationTimeout: .seconds(timeout), runner: runner, logger: logger)
                return (store, shown)
            }
        }
    }

    /// The App Store Server API key, when configured.
    struct AppStoreKey: Sendable {
        var keyId: String
        var issuerId: String
        var privateKeyFile: String
        var baseURL: String?
    }

    var server: ServerConfiguration
    var database: Database
    var catalogFile: String
    var appleRoots: [String]
    /// Xcode's StoreKit testing certificate file (`xcode.certificate`): Sandbox on loopback only.
    var xcodeCertificate: String?
    var appStoreKey: AppStoreKey?
    var apnsKey: APNsKey?
    /// CloudKit Web Services for the claims' proof, when an API token is configured.
    var cloudKit: CloudKitSettings?
    var logLevel: String

    /// Where the CloudKit claims' web auth tokens are checked.
    struct CloudKitSettings: Sendable {
        var apiToken: String
        var container: String
        var environment: String
        var baseURL: String
    }
    /// How log lines are written (`log.format`).
    var logFormat: LogFormat
    /// Seconds an operation waits on PostgreSQL (`database.timeout`).
    var databaseTimeout: Int

    /// The APNs key, when configured.
    struct APNsKey: Sendable {
        var keyId: String
        var teamId: String
        var privateKeyFile: String
        var topic: String
        var baseURL: String?
        var gateway: APNsGateway?
    }

    /// Reads and checks every setting.
    ///
    /// - Throws: ``SettingsError`` naming the key and the value.
    init(reader: ConfigReader) throws(SettingsError) {
        let values = SettingValues(reader: reader)
        func text(_ key: String) -> String? { values.text(key) }
        func number(_ key: String, default value: Int, in range: ClosedRange<Int>) throws(SettingsError) -> Int {
            try values.number(key, default: value, in: range)
        }
        func choice<T: RawRepresentable>(_ key: String, default value: T, _ type: T.Type, names: String)
            throws(SettingsError) -> T where T.RawValue == String
        {
            try values.choice(key, default: value, type, names: names)
        }

        guard let bundleId = text("bundle.id"), !bundleId.isEmpty else {
            throw SettingsError(key: "bundle.id", value: nil, expected: "the app's bundle id")
        }
        var server = ServerConfiguration(bundleId: bundleId)
        server.host = text("host") ?? server.host
        server.port = try number("port", default: server.port, in: 0...65_535)
        server.environment = try choice(
            "environment", default: .sandbox, CofferCore.AppStoreEnvironment.self, names: "Sandbox or Production")
        if let raw = text("app.apple.id") {
            guard let id = Int64(raw), id > 0 else {
                throw SettingsError(key: "app.apple.id", value: raw, expected: "a positive number")
            }
            server.appAppleId = id
        }
        if server.environment == .production, server.appAppleId == nil {
            throw SettingsError(
                key: "app.apple.id", value: nil, expected: "the app's Apple id (required in Production)")
        }
        server.wallet = try choice("wallet", default: .device, WalletMode.self, names: "device or server")
        server.deficitPolicy = try choice(
            "deficit.policy", default: .collect, DeficitPolicy.self, names: "collect or forgive")
        server.maximumBodySize = try number("body.limit", default: server.maximumBodySize, in: 1_024...16_777_216)
        server.idleTimeout = try number("idle.timeout", default: server.idleTimeout, in: 1...3_600)
        server.requestTimeout = try number("request.timeout", default: server.requestTimeout, in: 1...3_600)
        server.ledgerBatch = try number("ledger.batch", default: server.ledgerBatch, in: 1...10_000)
        server.recoveryInterval = try number("recovery.interval", default: server.recoveryInterval, in: 0...86_400)
        server.recoveryLookbackDays = try number(
            "recovery.lookback.days", default: server.recoveryLookbackDays, in: 1...180)
        func flag(_ key: String, default value: Bool) throws(SettingsError) -> Bool {
            guard let raw = text(key) else { return value }
            guard let parsed = Bool(raw.lowercased()) else {
                throw SettingsError(key: key, value: raw, expected: "true or false")
            }
            return parsed
        }
        if let raw = text("reconcile.interval") {
            guard let seconds = Self.interval(raw), seconds == 0 || (60...2_678_400).contains(seconds) else {
                throw SettingsError(
                    key: "reconcile.interval", value: raw,
                    expected: "seconds from 60 to 2678400 (31 days), a duration like 12h or 1d, hourly, daily, weekly, "
                        + "or 0 for off")
            }
            server.reconcileInterval = seconds
        }
        server.reconcileRepair = try flag("reconcile.repair", default: true)
        server.consumption.answer = try flag("consumption.answer", default: false)
        server.consumption.version = try number("consumption.version", default: 2, in: 1...2)
        server.consumption.sampleContentProvided = try flag("consumption.sample.content", default: false)
        if let raw = text("consumption.policy") {
            guard let policy = ConsumptionPolicy(raw) else {
                throw SettingsError(
                    key: "consumption.policy", value: raw,
                    expected: "rules separated by commas: grant-unused, decline-above=N (0-100), prorate; or none")
            }
            server.consumption.policy = policy
        }
        server.sandboxInProduction = try flag("sandbox.in.production", default: true)
        server.appTransactionMaxAge = try number(
            "app.transaction.max.age", default: server.appTransactionMaxAge, in: 60...31_536_000)
        server.panel.allowRemote = try flag("panel.remote", default: false)
        server.panel.secureCookies = try flag("panel.secure.cookies", default: false)
        server.panel.sessionHours = try number("panel.session.hours", default: 8, in: 1...720)
        server.panel.publicHost = text("panel.host").flatMap { $0.isEmpty ? nil : $0.lowercased() }
        if server.panel.allowRemote {
            guard server.panel.secureCookies else {
                throw SettingsError(
                    key: "panel.secure.cookies", value: "false",
                    expected: "true with panel.remote: a panel open to other machines is served behind TLS, and its "
                        + "session cookies must be Secure")
            }
            guard server.panel.publicHost != nil else {
                throw SettingsError(
                    key: "panel.host", value: nil,
                    expected: "the host name the panel is reached by, with panel.remote (other Host names are refused)")
            }
        }
        if let raw = text("server.trusted.proxies") {
            guard let proxies = TrustedProxies(list: raw) else {
                throw SettingsError(
                    key: "server.trusted.proxies", value: raw,
                    expected: "comma-separated IP addresses or CIDR ranges (127.0.0.1, 10.0.0.0/8, ::1)")
            }
            server.trustedProxies = proxies
        }
        func rate(_ key: String, default value: RateLimit) throws(SettingsError) -> RateLimit {
            let burst = try number("\(key).burst", default: value.burst, in: 1...1_000_000)
            guard let raw = text("\(key).rate") else { return RateLimit(burst: burst, perSecond: value.perSecond) }
            guard raw.utf8.count <= 20, let perSecond = Double(raw), perSecond.isFinite,
                (0.001...1_000_000).contains(perSecond)
            else {
                throw SettingsError(
                    key: "\(key).rate", value: raw, expected: "requests per second, from 0.001 to 1000000")
            }
            return RateLimit(burst: burst, perSecond: perSecond)
        }
        server.userCreationLimit = try rate("limit.users", default: server.userCreationLimit)
        server.panel.signInLimit = try rate("limit.login", default: server.panel.signInLimit)
        server.notificationFailureLimit = try rate("limit.notifications", default: server.notificationFailureLimit)
        server.eventStreamsPerUser = try number(
            "events.streams.user", default: server.eventStreamsPerUser, in: 1...1_000)
        server.devicesPerAccount = try number("limit.devices", default: server.devicesPerAccount, in: 1...1_000)
        server.eventStreamsPerAddress = try number(
            "events.streams.address", default: server.eventStreamsPerAddress, in: 1...1_000_000)
        server.eventStreamsTotal = try number(
            "events.streams.total", default: server.eventStreamsTotal, in: 1...1_000_000)
        server.maximumConnections = try number(
            "connections.limit", default: server.maximumConnections, in: 1...1_000_000)
        server.readTimeout = try number("read.timeout", default: server.readTimeout, in: 1...3_600)
        if let token = text("metrics.token"), !token.isEmpty {
            guard token.utf8.count >= 16 else {
                throw SettingsError(
                    key: "metrics.token", value: "(hidden)", expected: "a secret of at least 16 characters")
            }
            server.metricsToken = token
        }
        server.consumption.refundPreference = try choice(
            "consumption.refund.preference", default: .undeclared, ConsumptionConfiguration.RefundPreference.self,
            names: "undeclared, grant, decline or none")

        if let token = text("cloudkit.api.token"), !token.isEmpty {
            guard token.utf8.count <= 256, token.allSatisfy({ $0.isASCII && !$0.isWhitespace }) else {
                throw SettingsError(
                    key: "cloudkit.api.token", value: "(hidden)", expected: "the API token CloudKit Console shows")
            }
            let container = text("cloudkit.container") ?? "iCloud." + bundleId
            let environment = text("cloudkit.environment") ?? "production"
            guard ["development", "production"].contains(environment) else {
                throw SettingsError(
                    key: "cloudkit.environment", value: environment, expected: "development or production")
            }
            cloudKit = CloudKitSettings(
                apiToken: token, container: container, environment: environment,
                baseURL: text("cloudkit.url") ?? CloudKitClient.appleURL)
        } else {
            cloudKit = nil
        }
        server.webhook = try Self.webhook(values)
        server.appleForwardURLs = try Self.appleForwardURLs(values)
        server.cloudKitClaimProof = try choice(
            "cloudkit.claim.proof", default: cloudKit == nil ? .recordName : .webAuthToken, CloudKitClaimProof.self,
            names: "web-auth-token or record-name")
        if server.cloudKitClaimProof == .webAuthToken, cloudKit == nil {
            throw SettingsError(
                key: "cloudkit.claim.proof", value: "web-auth-token",
                expected: "record-name, or cloudkit.api.token set (web-auth-token checks with it)")
        }

        database = try Database(url: text("database.url") ?? "sqlite:coffer.sqlite")
        databaseTimeout = try number("database.timeout", default: 5, in: 1...300)
        // One group commit in flight per instance, for either engine: a PostgreSQL batch is two statements whatever
        // its size, and more batches at once only split the requests into smaller ones and wait on each
        // other's wallet locks (measured: 3,190 deliveries/s with one, 2,950 with two, 2,210 with four).
        server.ledgerWriters = try number("ledger.writers", default: 1, in: 1...64)
        self.server = server
        catalogFile = text("catalog") ?? "catalog.json"
        appleRoots = (text("apple.roots") ?? "").split(separator: ",").map {
            $0.trimmingCharacters(in: .whitespaces)
        }.filter { !$0.isEmpty }
        if server.environment == .production, !appleRoots.isEmpty {
            throw SettingsError(
                key: "apple.roots", value: appleRoots.joined(separator: ","),
                expected: "no extra roots in Production (Apple Root CA - G3 only)")
        }
        xcodeCertificate = text("xcode.certificate")
        if let xcodeCertificate {
            guard server.environment == .sandbox else {
                throw SettingsError(
                    key: "xcode.certificate", value: xcodeCertificate,
                    expected: "unset in Production: Xcode's StoreKit testing is for a Sandbox server on this machine")
            }
            guard ["127.0.0.1", "::1", "localhost"].contains(server.host) else {
                throw SettingsError(
                    key: "xcode.certificate", value: xcodeCertificate,
                    expected: "a server listening on loopback (host 127.0.0.1, ::1 or localhost), not \(server.host)")
            }
        }
        let keyParts = [text("appstore.key.id"), text("appstore.issuer.id"), text("appstore.private.key")]
        switch keyParts {
        case [nil, nil, nil]:
            appStoreKey = nil
        case let parts where parts.allSatisfy({ $0 != nil }):
            appStoreKey = AppStoreKey(
                keyId: parts[0]!, issuerId: parts[1]!, privateKeyFile: parts[2]!, baseURL: text("appstore.url"))
        default:
            throw SettingsError(
                key: "appstore.key.id", value: nil,
                expected: "appstore.key.id, appstore.issuer.id and appstore.private.key together")
        }
        let apnsParts = [text("apns.key.id"), text("apns.team.id"), text("apns.private.key")]
        switch apnsParts {
        case [nil, nil, nil]:
            apnsKey = nil
        case let parts where parts.allSatisfy({ $0 != nil }):
            var gateway: APNsGateway?
            if let name = text("apns.environment") {
                guard let named = APNsGateway(rawValue: name) else {
                    throw SettingsError(key: "apns.environment", value: name, expected: "sandbox or production")
                }
                gateway = named
            }
            apnsKey = APNsKey(
                keyId: parts[0]!, teamId: parts[1]!, privateKeyFile: parts[2]!,
                topic: text("apns.topic") ?? server.bundleId, baseURL: text("apns.url"), gateway: gateway)
        default:
            throw SettingsError(
                key: "apns.key.id", value: nil, expected: "apns.key.id, apns.team.id and apns.private.key together")
        }
        logLevel = text("log.level") ?? "info"
        guard ["trace", "debug", "info", "notice", "warning", "error", "critical"].contains(logLevel) else {
            throw SettingsError(
                key: "log.level", value: logLevel, expected: "trace, debug, info, notice, warning, error or critical")
        }
        let format = text("log.format") ?? "text"
        guard let logFormat = LogFormat(rawValue: format) else {
            throw SettingsError(key: "log.format", value: format, expected: "text or json")
        }
        self.logFormat = logFormat
    }
}

/// A setting that is missing or does not parse.
struct SettingsError: Error, CustomStringConvertible {
    var key: String
    var value: String?
    var expected: String

    var description: String {
        let setting = SettingKey(key: key, help: "")
        let source = "\(setting.flag), \(setting.environmentVariable) or \"\(key)\" in the config file"
        if let value { return "\(key) is \"\(value)\"; expected \(expected) (set by \(source))" }
        return "\(key) is missing: expected \(expected) (set it with \(source))"
    }
}

extension ServeSettings {
    /// A time between runs in seconds: a number of seconds, a number with `s`, `m`, `h` or `d`, or `hourly`, `daily`,
    /// `weekly`; `nil` for anything else.
    static func interval(_ text: String) -> Int? {
        let raw = text.trimmingCharacters(in: .whitespaces).lowercased()
        if let word = ["hourly": 3_600, "daily": 86_400, "weekly": 604_800][raw] { return word }
        if let seconds = Int(raw) { return seconds }
        let units: [Character: Int] = ["s": 1, "m": 60, "h": 3_600, "d": 86_400]
        guard let unit = raw.last.flatMap({ units[$0] }), let count = Int(raw.dropLast()), (0...100_000).contains(count)
        else { return nil }
        return count * unit
    }
}
