import CofferClient
import Foundation

/// What the app sells, by the catalog it shares with its Coffer server.
enum Store {
    static let credits = "com.example.credits.400k"
    static let monthly = "com.example.pro.monthly"
    static let noAds = "com.example.noads"

    /// The catalog bundled with the app (the server's `--catalog` file; the SDK takes the server's when it
    /// answers). In an Xcode app target `catalog.json` is in the app's bundle; built by SwiftPM (this folder's
    /// `Package.swift`, Linux) it is the package's resource.
    static func catalog() throws -> Catalog {
        #if SWIFT_PACKAGE
            let bundle = Bundle.module
        #else
            let bundle = Bundle.main
        #endif
        guard let url = bundle.url(forResource: "catalog", withExtension: "json") else {
            throw CocoaError(.fileNoSuchFile)
        }
        return try Catalog(json: Data(contentsOf: url))
    }

    /// The SDK's files: Application Support on a device, a folder of the working directory elsewhere.
    static func folder() -> URL {
        #if os(iOS) || os(macOS)
            FileManager.default.urls(for: .applicationSupportDirectory, in: .userDomainMask)[0]
                .appendingPathComponent("Coffer")
        #else
            URL(fileURLWithPath: ProcessInfo.processInfo.environment["COFFER_APP_FOLDER"] ?? "credits-app")
        #endif
    }
}
