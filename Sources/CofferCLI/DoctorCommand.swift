import ArgumentParser
import AsyncHTTPClient
import CofferAppStore
import CofferCore
import CofferStore
import CofferStorePostgres
import CofferStoreSQLite
import Foundation

/// `coffer doctor`: checks what `coffer serve` would run with, and says what is missing for Production.
struct DoctorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "doctor",
        abstract: "Check the settings, catalog, database and keys coffer serve would use; list what Production needs.",
        discussion: """
            Takes the same flags, COFFER_* variables and --config file as coffer serve, and changes nothing (no \
            migration runs). Each check prints ok, warn or FAIL; the exit status is 1 when any check fails.
            """)

    @OptionGroup var flags: ServeFlags

    /// One finding.
    enum Level: String {
        case ok = "ok  "
        case warn = "warn"
        case fail = "FAIL"
    }

    /// What the checks found, in order.
    final class Report {
        var lines: [(Level, String)] = []
        func add(_ level: Level, _ text: String) {
            lines.append((level, text))
            print("\(level.rawValue)  \(text)")
        }
        var failures: Int { lines.filter { $0.0 == .fail }.count }
        var warnings: Int { lines.filter { $0.0 == .warn }.count }
    }

    func run() async throws {
        print("Coffer \(CofferVersion.current) doctor: what coffer serve would run with")
        let report = Report()
        let settings: ServeSettings
        do {
            settings = try await flags.settings()
        } catch {
            report.add(.fail, "settings: \(error)")
            throw ExitCode(1)
        }
        let server = settings.server
        report.add(
            .ok,
            "settings: \(server.bundleId), \(server.environment.rawValue), \(server.wallet.rawValue) wallet, "
                + "listening on \(server.host):\(server.port)")
        let catalog = checkCatalog(settings, report)
        await checkDatabase(settings, catalog: catalog, report)
        checkFiles(settings, report)
        checkKeys(settings, report)
        let missing = productionGaps(settings)
        if missing.isEmpty {
            print("Production: nothing missing.")
        } else {
            print("For Production, still to do:")
            for gap in missing { print("  - \(gap)") }
        }
        print("\(report.failures) problems, \(report.warnings) warnings.")
        if report.failures > 0 { throw ExitCode(1) }
    }

    /// The catalog serve would read, checked; `nil` when it cannot be read.
    func checkCatalog(_ settings: ServeSettings, _ report: Report) -> Catalog? {
        do {
            let catalog = try Catalog(json: Data(contentsOf: URL(fileURLWithPath: settings.catalogFile)))
            if let refusal = Composition.walletRefusal(catalog, wallet: settings.server.wallet) {
                report.add(.fail, "catalog: \(settings.catalogFile): \(refusal)")
                return catalog
            }
            report.add(
                .ok,
                "catalog: \(settings.catalogFile), \(catalog.products.count) products, "
                    + "\(catalog.loyalty.count) loyalty rules")
            return catalog
        } catch {
            report.add(.fail, "catalog: \(settings.catalogFile): \(error)")
            return nil
        }
    }

    func checkDatabase(_ settings: ServeSettings, catalog: Catalog?, _ report: Report) async {
        switch settings.database {
        case .sqlite(let path):
            let folder = URL(fileURLWithPath: path).deletingLastPathComponent().path
            if let mode = Self.mode(folder), mode & 0o077 != 0 {
                report.add(
                    .warn,
                    "database folder \(folder) can be read by others (mode \(String(mode, radix: 8))): keep "
                        + "Coffer's data folder 0700")
            }
            guard FileManager.default.fileExists(atPath: path) else {
                report.add(.ok, "database: SQLite \(path) does not exist yet: coffer serve creates it (owner-only)")
                return
            }
            if let mode = Self.mode(path), mode & 0o077 != 0 {
                report.add(.warn, "database \(path) can be read by others (mode \(String(mode, radix: 8))): chmod 600")
            }
            do {
                let summary = try SQLiteBackup.inspect(path)
                report.add(
                    level(applied: summary.migrations, known: SQLiteBackup.migrations),
                    "database: SQLite \(path), \(summary.users) users, \(summary.entries) ledger entries; "
                        + schema(applied: summary.migrations, known: SQLiteBackup.migrations))
                if let kept = summary.cursors[KeptCurrency.cursor], let catalog,
                    let refusal = KeptCurrency.refusal(catalog, kept: kept)
                {
                    report.add(.fail, "catalog: \(settings.catalogFile): \(refusal)")
                }
            } catch {
                report.add(.fail, "database: SQLite \(path): \(error)")
            }
        case .postgres(let url):
            let host = URLComponents(string: url).map { "\($0.host ?? "?"):\($0.port ?? 5432)\($0.path)" } ?? "?"
            do {
                let applied = try await PostgresStore.inspect(url: url, timeout: .seconds(settings.databaseTimeout))
                report.add(
                    level(applied: applied, known: PostgresStore.migrations),
                    "database: PostgreSQL \(host) answers; " + schema(applied: applied, known: PostgresStore.migrations)
                )
            } catch {
                report.add(.fail, "database: PostgreSQL \(host): \(error)")
            }
            if !url.contains("sslmode=verify-full"),
                !["127.0.0.1", "localhost", "::1"].contains(
                    URLComponents(string: url)?.host ?? "")
            {
                report.add(
                    .warn, "database.url: across a network use sslmode=verify-full (the server's certificate checked)")
            }
        }
    }

    func level(applied: [String], known: [String]) -> Level {
        applied.contains { !known.contains($0) } ? .fail : .ok
    }

    func schema(applied: [String], known: [String]) -> String {
        if applied.contains(where: { !known.contains($0) }) {
            return "its schema is newer than this build's (\(applied.last ?? "")): run the Coffer that made it"
        }
        let pending = known.count - applied.count
        return pending == 0
            ? "schema up to date (\(known.count) migrations)"
            : "\(pending) migrations to apply at the next start (automatic)"
    }

    /// Key files and trust roots: readable, and private keys readable by their owner alone.
    func checkFiles(_ settings: ServeSettings, _ report: Report) {
        var keys: [(setting: String, path: String)] = []
        if let key = settings.appStoreKey { keys.append(("appstore.private.key", key.privateKeyFile)) }
        if let key = settings.apnsKey { keys.append(("apns.private.key", key.privateKeyFile)) }
        for (setting, path) in keys {
            guard FileManager.default.isReadableFile(atPath: path) else {
                report.add(.fail, "\(setting): \(path) cannot be read")
                continue
            }
            if let mode = Self.mode(path), mode & 0o077 != 0 {
                report.add(
                    .warn, "\(setting): \(path) can be read by others (mode \(String(mode, radix: 8))): chmod 600 it")
            }
        }
        for root in settings.appleRoots {
            guard let data = FileManager.default.contents(atPath: root), !data.isEmpty else {
                report.add(.fail, "apple.roots: \(root) cannot be read")
                continue
            }
            report.add(.ok, "apple.roots: \(root) trusted beside Apple Root CA - G3 (Sandbox only)")
        }
        let password = ServeCommand.firstPasswordFile(settings.database)
        if FileManager.default.fileExists(atPath: password) {
            report.add(.warn, "\(password) holds the first admin's password: sign in, change it, delete the file")
        }
    }

    /// The App Store Server API key makes a signed token; the APNs key parses.
    func checkKeys(_ settings: ServeSettings, _ report: Report) {
        if let key = settings.appStoreKey,
            let pem = try? String(contentsOfFile: key.privateKeyFile, encoding: .utf8)
        {
            do {
                let client = AppStoreServerAPIClient(
                    httpClient: HTTPClient.shared,
                    credentials: try .init(
                        keyId: key.keyId, issuerId: key.issuerId, bundleId: settings.server.bundleId,
                        privateKeyPEM: pem),
                    environment: settings.server.environment == .production ? .production : .sandbox,
                    baseURL: key.baseURL)
                _ = try client.makeToken()
                report.add(
                    .ok, "App Store Server API key \(key.keyId): a signed token made (ES256, issuer \(key.issuerId))")
            } catch {
                report.add(.fail, "App Store Server API key \(key.keyId): \(error)")
            }
        } else if settings.appStoreKey == nil {
            report.add(
                settings.server.environment == .production ? .warn : .ok,
                "no App Store Server API key: notification recovery and consumption answers are off")
        }
        if let key = settings.apnsKey, let pem = try? String(contentsOfFile: key.privateKeyFile, encoding: .utf8) {
            do {
                _ = try APNsClient.Credentials(keyId: key.keyId, teamId: key.teamId, privateKeyPEM: pem)
                report.add(.ok, "APNs key \(key.keyId): a P-256 key, team \(key.teamId)")
            } catch {
                report.add(.fail, "APNs key \(key.keyId): \(error)")
            }
        }
    }

    /// What a Production deployment still lacks.
    func productionGaps(_ settings: ServeSettings) -> [String] {
        let server = settings.server
        var gaps: [String] = []
        if server.environment != .production {
            gaps.append("environment is Sandbox: set environment=Production and app.apple.id (App Store Connect)")
        }
        if settings.appStoreKey == nil {
            gaps.append(
                "an In-App Purchase key for the App Store Server API (appstore.key.id, appstore.issuer.id, "
                    + "appstore.private.key): recovery of missed notifications and consumption answers")
        }
        if settings.apnsKey == nil {
            gaps.append("optional: an APNs key (apns.*) so apps hear of grants and refunds at once")
        }
        let loopback = ["127.0.0.1", "::1", "localhost"].contains(server.host)
        if !loopback, server.trustedProxies.ranges.isEmpty {
            gaps.append(
                "listening on \(server.host) with no server.trusted.proxies: put Coffer behind a TLS reverse proxy "
                    + "and name it, so rate limits see the client's address")
        }
        if loopback, server.trustedProxies.ranges.isEmpty {
            gaps.append(
                "listening on \(server.host) with no server.trusted.proxies: if a reverse proxy on this machine "
                    + "forwards to Coffer, list it (server.trusted.proxies=127.0.0.1,::1); until then every request "
                    + "it forwards is from an unknown address, refused the panel and sharing one rate limit")
        }
        if server.metricsToken == nil, !loopback || !server.trustedProxies.ranges.isEmpty {
            gaps.append(
                "metrics.token: without it /metrics answers anyone who can reach the server"
                    + (loopback ? " through the reverse proxy" : ""))
        }
        if case .sqlite = settings.database {
            gaps.append("backups: schedule coffer backup (SQLite) and keep the copies off this machine")
        }
        return gaps
    }

    /// A file's permission bits, if it exists.
    static func mode(_ path: String) -> Int? {
        (try? FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? NSNumber)?.intValue
    }
}
