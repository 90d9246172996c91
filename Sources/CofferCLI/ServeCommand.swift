import ArgumentParser
import CofferAppStore
import CofferCore
import CofferServer
import CofferStoreSQLite
import Foundation
import Hummingbird

/// `coffer serve`: the Coffer server.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run the Coffer server: users, verified purchases delivered once, balances and entitlements.",
        discussion: """
            Defaults: a SQLite database coffer.sqlite in the working folder, 127.0.0.1:8080, Sandbox. \
            Apple Root CA - G3 is always trusted; --apple-root adds a root (the App Store simulator's), accepted \
            in Sandbox only. Stops gracefully on SIGINT and SIGTERM.
            """
    )

    @Option(help: "The address to listen on.")
    var host = "127.0.0.1"

    @Option(help: "The port to listen on.")
    var port = 8080

    @Option(help: "The SQLite database file.")
    var database = "coffer.sqlite"

    @Option(help: "The environment served: Sandbox or Production.")
    var environment = "Sandbox"

    @Option(help: "The app's bundle id.")
    var bundleId: String

    @Option(help: "The app's Apple id (required in Production).")
    var appAppleId: Int64?

    @Option(help: "The catalog of products (JSON).")
    var catalog = "catalog.json"

    @Option(help: "Who owns the balance: device (the app) or server.")
    var wallet = "device"

    @Option(name: .customLong("apple-root"), help: "A DER root to trust as well, Sandbox only (repeatable).")
    var appleRoots: [String] = []

    func run() async throws {
        guard let environment = CofferCore.Environment(rawValue: environment),
            let appStoreEnvironment = AppStoreEnvironment(name: self.environment), !appStoreEnvironment.isLocal
        else { throw ValidationError("unknown environment \(self.environment): use Sandbox or Production") }
        let products: Catalog
        var roots: [Data]
        do {
            products = try Catalog(json: Data(contentsOf: URL(fileURLWithPath: catalog)))
            roots = try appleRoots.map { try Data(contentsOf: URL(fileURLWithPath: $0)) }
            roots.insert(try AppleRoots.rootCAG3(), at: 0)
        } catch {
            FileHandle.standardError.write(Data("Error: \(error)\n".utf8))
            throw ExitCode(2)
        }
        guard let walletMode = WalletMode(rawValue: wallet) else {
            throw ValidationError("unknown wallet \(wallet): use device or server")
        }
        if environment == .production, !appleRoots.isEmpty {
            throw ValidationError("--apple-root is accepted in Sandbox only")
        }
        let verifier = try SignedDataVerifier(
            rootCertificates: roots, bundleId: bundleId, appAppleId: appAppleId, environment: appStoreEnvironment)
        let store = try SQLiteStore(path: database)
        var configuration = ServerConfiguration(bundleId: bundleId)
        configuration.host = host
        configuration.port = port
        configuration.environment = environment
        configuration.appAppleId = appAppleId
        configuration.wallet = walletMode
        let app = buildApplication(
            configuration: configuration,
            dependencies: ServerDependencies(store: store, verifier: verifier, catalog: products))
        print("Coffer serving \(bundleId) (\(environment.rawValue)) on http://\(host):\(port), database \(database)")
        try await app.runService()
    }
}
