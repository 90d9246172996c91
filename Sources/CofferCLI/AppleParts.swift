import AsyncHTTPClient
import CofferAppStore
import CofferCore
import Foundation

/// What `coffer serve` reads to trust and call Apple, read once for every command that acts as the server does
/// (`coffer serve`, `coffer reconcile`): the catalog, the roots and the verifier, the In-App Purchase key.
struct AppleParts {
    /// The catalog the server sells.
    let catalog: Catalog
    /// Apple Root CA - G3 first, then the roots the settings add.
    let roots: [Data]
    /// Xcode's StoreKit testing certificate, when the settings name one.
    let xcode: XcodeCertificate?
    /// The verifier of Apple's signed data for the environment served.
    let verifier: SignedDataVerifier
    /// The APNs key, when the settings name one.
    let apnsPEM: String?
    private let appStoreKeyPEM: String?
    private let settings: ServeSettings
    private let environment: SignedDataEnvironment

    /// Reads the files `settings` name.
    ///
    /// - Throws: When a file cannot be read or parsed, saying which.
    init(_ settings: ServeSettings, environment: SignedDataEnvironment) throws {
        let server = settings.server
        catalog = try Composition.catalog(file: settings.catalogFile, required: true, wallet: settings.server.wallet)
        var roots = try settings.appleRoots.map { try Data(contentsOf: URL(fileURLWithPath: $0)) }
        roots.insert(try AppleRoots.rootCAG3(), at: 0)
        self.roots = roots
        xcode = try settings.xcodeCertificate.map { path throws(VerificationError) in try XcodeCertificate(path: path) }
        apnsPEM = try settings.apnsKey.map {
            try String(contentsOf: URL(fileURLWithPath: $0.privateKeyFile), encoding: .utf8)
        }
        appStoreKeyPEM = try settings.appStoreKey.map {
            try String(contentsOf: URL(fileURLWithPath: $0.privateKeyFile), encoding: .utf8)
        }
        verifier = try SignedDataVerifier(
            rootCertificates: roots, bundleId: server.bundleId, appAppleId: server.appAppleId,
            environment: environment, acceptsSandbox: server.sandboxInProduction, xcodeCertificate: xcode)
        self.settings = settings
        self.environment = environment
    }

    /// The App Store Server API client on `http`, `nil` when the settings name no In-App Purchase key.
    func appStoreAPI(_ http: HTTPClient) throws -> AppStoreServerAPIClient? {
        guard let key = settings.appStoreKey, let appStoreKeyPEM else { return nil }
        return AppStoreServerAPIClient(
            httpClient: http,
            credentials: try .init(
                keyId: key.keyId, issuerId: key.issuerId, bundleId: settings.server.bundleId,
                privateKeyPEM: appStoreKeyPEM),
            environment: environment, baseURL: key.baseURL)
    }
}
