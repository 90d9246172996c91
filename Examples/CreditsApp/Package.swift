// swift-tools-version: 6.1
import PackageDescription

// A small app built on Coffer's SDK: credits, a subscription with loyalty, the Purchase History section.
// On a Mac or an iPhone it is a SwiftUI app (StoreKit 2 through AppleStoreKit); on Linux the same code runs
// headless against the App Store simulator and a Coffer server (scripts/example-app runs it in CI).
let package = Package(
    name: "CreditsApp",
    platforms: [.macOS(.v15), .iOS(.v18)],
    dependencies: [
        // An app adds Coffer with its Server trait off: only GRDB comes along.
        .package(name: "Coffer", path: "../..", traits: [])
    ],
    targets: [
        .executableTarget(
            name: "CreditsApp",
            dependencies: [
                .product(name: "CofferClient", package: "Coffer"),
                .product(name: "CofferStoreKit2", package: "Coffer"),
                .product(name: "CofferUI", package: "Coffer"),
            ],
            resources: [.copy("catalog.json")]
        )
    ]
)
