// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "CreditsApp",
    platforms: [.macOS(.v15), .iOS(.v18)],
    dependencies: [
        // The Server trait off: only the SDK and GRDB come along.
        .package(url: "https://github.com/your-org/coffer.git", branch: "main", traits: [])
    ],
    targets: [
        .executableTarget(
            name: "CreditsApp",
            dependencies: [
                .product(name: "CofferClient", package: "coffer"),
                .product(name: "CofferStoreKit2", package: "coffer"),
                .product(name: "CofferUI", package: "coffer"),
            ],
            resources: [.copy("catalog.json")]
        )
    ]
)
