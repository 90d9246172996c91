// swift-tools-version: 6.1
import PackageDescription

/// Settings every Coffer target shares: Swift 6 language mode (strict concurrency) and `any` spelled out.
let strictSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny")
]

/// The server's packages (Hummingbird, NIO, PostgreSQL, Prometheus, swift-crypto, ...) are used only when the
/// `Server` trait is on. It is on by default, so `swift build`, `swift test` and `swift run coffer` build
/// everything here; an app that adds the package for the SDK turns it off (`traits: []` on its `.package`
/// line, or unticks "Server" in Xcode's package traits column) and SwiftPM then fetches GRDB alone.
/// `scripts/sdk-closure` proves it.
let server = TargetDependencyCondition.when(traits: ["Server"])

let package = Package(
    name: "Coffer",
    // Synchronization's Mutex (the SDK's simulator StoreKit, the server's caches and limiters) and
    // swift-configuration need macOS 15 and iOS 18: declared so, an app that adds the package builds.
    platforms: [.macOS(.v15), .iOS(.v18)],
    products: [
        .library(name: "CofferCore", targets: ["CofferCore"]),
        .library(name: "CofferStore", targets: ["CofferStore"]),
        .library(name: "CofferLedgerSQLite", targets: ["CofferLedgerSQLite"]),
        .library(name: "CofferStoreSQLite", targets: ["CofferStoreSQLite"]),
        .library(name: "CofferStorePostgres", targets: ["CofferStorePostgres"]),
        .library(name: "CofferAppStore", targets: ["CofferAppStore"]),
        .library(name: "CofferStoreKit", targets: ["CofferStoreKit"]),
        .library(name: "CofferAPI", targets: ["CofferAPI"]),
        .library(name: "CofferAdmin", targets: ["CofferAdmin"]),
        .library(name: "CofferClient", targets: ["CofferClient"]),
        .library(name: "CofferStoreKit2", targets: ["CofferStoreKit2"]),
        .library(name: "CofferUI", targets: ["CofferUI"]),
        .library(name: "CofferService", targets: ["CofferService"]),
        .library(name: "CofferHTTP", targets: ["CofferHTTP"]),
        .library(name: "CofferPanel", targets: ["CofferPanel"]),
        .library(name: "CofferServer", targets: ["CofferServer"]),
        .library(name: "CofferSimulator", targets: ["CofferSimulator"]),
        .library(name: "CofferCLI", targets: ["CofferCLI"]),
        .executable(name: "coffer", targets: ["coffer"]),
    ],
    traits: [
        .trait(
            name: "Server",
            description: "The server, the command line and the simulator's server: every package beside GRDB."
        ),
        .default(enabledTraits: ["Server"]),
    ],
    dependencies: [
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/x-sheep/swift-property-based.git", from: "2.0.1"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-certificates.git", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-asn1.git", from: "1.7.4"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-configuration.git", from: "1.4.0"),
        .package(url: "https://github.com/apple/swift-system.git", from: "1.8.1"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-auth.git", from: "2.5.0"),
        .package(url: "https://github.com/hummingbird-project/swift-mustache.git", from: "2.1.1"),
    ],
    targets: [
        .target(name: "CofferCore", swiftSettings: strictSettings),
        .target(name: "CofferStore", dependencies: ["CofferCore"], swiftSettings: strictSettings),
        // The ledger's tables and write context on SQLite, shared by the server's store and the SDK's device ledger.
        .target(
            name: "CofferLedgerSQLite",
            dependencies: ["CofferCore", .product(name: "GRDB", package: "GRDB.swift")],
            swiftSettings: strictSettings
        ),
        .target(
            name: "CofferStoreSQLite",
            dependencies: ["CofferStore", "CofferLedgerSQLite", .product(name: "GRDB", package: "GRDB.swift")],
            swiftSettings: strictSettings
        ),
        .target(
            name: "CofferStorePostgres",
            dependencies: [
                "CofferStore",
                .product(name: "PostgresNIO", package: "postgres-nio", condition: server),
                .product(name: "NIOSSL", package: "swift-nio-ssl", condition: server),
                .product(name: "Logging", package: "swift-log", condition: server),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: server),
            ],
            swiftSettings: strictSettings
        ),
        .target(
            name: "CofferAppStore",
            dependencies: [
                "CofferCore",
                .product(name: "Crypto", package: "swift-crypto", condition: server),
                .product(name: "_CryptoExtras", package: "swift-crypto", condition: server),
                .product(name: "X509", package: "swift-certificates", condition: server),
                .product(name: "SwiftASN1", package: "swift-asn1", condition: server),
                .product(name: "AsyncHTTPClient", package: "async-http-client", condition: server),
                .product(name: "NIOCore", package: "swift-nio", condition: server),
                .product(name: "NIOFoundationCompat", package: "swift-nio", condition: server),
                .product(name: "NIOHTTP1", package: "swift-nio", condition: server),
            ],
            resources: [.copy("Roots")],
            swiftSettings: strictSettings
        ),
        .target(name: "CofferStoreKit", swiftSettings: strictSettings),
        .target(name: "CofferAPI", dependencies: ["CofferCore"], swiftSettings: strictSettings),
        // StoreKit 2 behind the StoreKitProvider protocol; on Linux compiled against StoreKitInterface, for its tests.
        .target(
            name: "CofferStoreKit2",
            dependencies: [
                "CofferStoreKit", .target(name: "StoreKitInterface", condition: .when(platforms: [.linux])),
            ],
            swiftSettings: strictSettings
        ),
        // SwiftUI views over CofferModel (Apple platforms; empty elsewhere).
        .target(name: "CofferUI", dependencies: ["CofferClient"], swiftSettings: strictSettings),
        // A mirror of the StoreKit 2 declarations CofferStoreKit2 uses, for Linux: the adapter compiles and is
        // tested against it here; Apple-platform builds import StoreKit instead.
        .target(name: "StoreKitInterface", swiftSettings: strictSettings),
        .target(
            name: "CofferClient",
            dependencies: [
                "CofferAPI", "CofferCore", "CofferLedgerSQLite", "CofferStoreKit",
                .product(name: "GRDB", package: "GRDB.swift"),
                // The SDK's log: os.Logger on Apple platforms; swift-log elsewhere with the Server trait (tests,
                // `coffer simulate`), so an app that turns the trait off still fetches GRDB alone.
                .product(
                    name: "Logging", package: "swift-log",
                    condition: .when(platforms: [.linux, .android, .windows, .openbsd, .wasi], traits: ["Server"])),
            ],
            swiftSettings: strictSettings
        ),
        .target(
            name: "CofferAdmin",
            dependencies: [
                "CofferAPI",
                "CofferCore",
                "CofferStore",
                .product(name: "Crypto", package: "swift-crypto", condition: server),
                .product(name: "HummingbirdBcrypt", package: "hummingbird-auth", condition: server),
            ],
            swiftSettings: strictSettings
        ),
        // The application layer, with no HTTP in it: purchases, Apple's notifications and their recovery, the
        // ledger batcher and event hub, settings, security primitives, typed errors.
        .target(
            name: "CofferService",
            dependencies: [
                "CofferAPI", "CofferAdmin", "CofferAppStore", "CofferCore", "CofferStore",
                .product(name: "AsyncHTTPClient", package: "async-http-client", condition: server),
                .product(name: "Crypto", package: "swift-crypto", condition: server),
                .product(name: "Logging", package: "swift-log", condition: server),
                .product(name: "Prometheus", package: "swift-prometheus", condition: server),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: server),
            ],
            swiftSettings: strictSettings
        ),
        // The HTTP edge's shared pieces: the request context, the one error answer, the client's address and the
        // rate-limit middleware, for the server's routes and the panel's pages alike.
        .target(
            name: "CofferHTTP",
            dependencies: [
                "CofferAPI", "CofferAdmin", "CofferCore", "CofferService", "CofferStore",
                .product(name: "Hummingbird", package: "hummingbird", condition: server),
                .product(name: "HTTPTypes", package: "swift-http-types", condition: server),
                .product(name: "NIOCore", package: "swift-nio", condition: server),
                .product(name: "NIOFoundationCompat", package: "swift-nio", condition: server),
            ],
            swiftSettings: strictSettings
        ),
        // The admin panel at /admin: its pages over CofferAdmin's use cases, the renderer and the templates.
        .target(
            name: "CofferPanel",
            dependencies: [
                "CofferAPI", "CofferAdmin", "CofferCore", "CofferHTTP", "CofferService", "CofferStore",
                .product(name: "Hummingbird", package: "hummingbird", condition: server),
                .product(name: "HTTPTypes", package: "swift-http-types", condition: server),
                .product(name: "Mustache", package: "swift-mustache", condition: server),
                .product(name: "NIOCore", package: "swift-nio", condition: server),
            ],
            resources: [.copy("Panel")],
            swiftSettings: strictSettings
        ),
        .target(
            name: "CofferServer",
            dependencies: [
                "CofferAPI", "CofferAdmin", "CofferAppStore", "CofferCore", "CofferHTTP", "CofferPanel",
                "CofferService", "CofferStore",
                .product(name: "Crypto", package: "swift-crypto", condition: server),
                .product(name: "Hummingbird", package: "hummingbird", condition: server),
                .product(name: "HummingbirdCore", package: "hummingbird", condition: server),
                .product(name: "HTTPTypes", package: "swift-http-types", condition: server),
                .product(name: "Logging", package: "swift-log", condition: server),
                .product(name: "NIOCore", package: "swift-nio", condition: server),
                .product(name: "NIOFoundationCompat", package: "swift-nio", condition: server),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras", condition: server),
                .product(name: "Prometheus", package: "swift-prometheus", condition: server),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: server),
            ],
            resources: [.copy("openapi.json")],
            swiftSettings: strictSettings
        ),
        .target(
            name: "CofferSimulator",
            dependencies: [
                "CofferCore", "CofferAppStore", "CofferStoreKit",
                .product(name: "Hummingbird", package: "hummingbird", condition: server),
                .product(name: "HTTPTypes", package: "swift-http-types", condition: server),
                .product(name: "NIOCore", package: "swift-nio", condition: server),
                .product(name: "NIOFoundationCompat", package: "swift-nio", condition: server),
                .product(name: "AsyncHTTPClient", package: "async-http-client", condition: server),
                .product(name: "Crypto", package: "swift-crypto", condition: server),
                .product(name: "_CryptoExtras", package: "swift-crypto", condition: server),
                .product(name: "X509", package: "swift-certificates", condition: server),
                .product(name: "SwiftASN1", package: "swift-asn1", condition: server),
            ],
            swiftSettings: strictSettings
        ),
        .target(
            name: "CofferCLI",
            dependencies: [
                "CofferAPI", "CofferCore", "CofferStore", "CofferStoreSQLite", "CofferStorePostgres", "CofferAppStore",
                "CofferSimulator", "CofferServer", "CofferService", "CofferAdmin", "CofferClient",
                .product(name: "Crypto", package: "swift-crypto", condition: server),
                .product(name: "Hummingbird", package: "hummingbird", condition: server),
                .product(name: "NIOCore", package: "swift-nio", condition: server),
                .product(name: "NIOHTTP1", package: "swift-nio", condition: server),
                .product(name: "NIOFoundationCompat", package: "swift-nio", condition: server),
                .product(name: "ArgumentParser", package: "swift-argument-parser", condition: server),
                .product(name: "AsyncHTTPClient", package: "async-http-client", condition: server),
                .product(name: "Configuration", package: "swift-configuration", condition: server),
                .product(name: "Logging", package: "swift-log", condition: server),
                .product(name: "SystemPackage", package: "swift-system", condition: server),
            ],
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "coffer",
            dependencies: [
                "CofferCLI", .product(name: "ArgumentParser", package: "swift-argument-parser", condition: server),
            ],
            swiftSettings: strictSettings
        ),
        .target(
            name: "CofferTestSupport",
            dependencies: [
                "CofferCore", "CofferSimulator", "CofferStore", "CofferStoreSQLite",
                .product(name: "Crypto", package: "swift-crypto", condition: server),
                .product(name: "X509", package: "swift-certificates", condition: server),
                .product(name: "PostgresNIO", package: "postgres-nio", condition: server),
                .product(name: "NIOPosix", package: "swift-nio", condition: server),
                .product(name: "Logging", package: "swift-log", condition: server),
            ],
            path: "Tests/CofferTestSupport",
            resources: [.copy("Fixtures"), .copy("Apple")],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "CofferCoreTests",
            dependencies: [
                "CofferCore", "CofferTestSupport",
                .product(name: "PropertyBased", package: "swift-property-based", condition: server),
            ],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "CofferAPITests",
            dependencies: [
                "CofferAPI", "CofferTestSupport",
                .product(name: "PropertyBased", package: "swift-property-based", condition: server),
            ],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "CofferServiceTests",
            dependencies: [
                "CofferAPI", "CofferAppStore", "CofferCore", "CofferService", "CofferSimulator", "CofferStore",
                "CofferTestSupport", .product(name: "Logging", package: "swift-log", condition: server),
            ],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "CofferAdminTests",
            dependencies: ["CofferAPI", "CofferAdmin", "CofferCore", "CofferStore", "CofferTestSupport"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "CofferStoreTests",
            dependencies: [
                "CofferStore", "CofferStoreSQLite", "CofferStorePostgres", "CofferTestSupport",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "PropertyBased", package: "swift-property-based", condition: server),
                .product(name: "Logging", package: "swift-log", condition: server),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: server),
            ],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "CofferAppStoreTests",
            dependencies: [
                "CofferAppStore", "CofferCore", "CofferSimulator", "CofferTestSupport",
                .product(name: "Crypto", package: "swift-crypto", condition: server),
                .product(name: "X509", package: "swift-certificates", condition: server),
                .product(name: "SwiftASN1", package: "swift-asn1", condition: server),
                .product(name: "AsyncHTTPClient", package: "async-http-client", condition: server),
                .product(name: "Hummingbird", package: "hummingbird", condition: server),
                .product(name: "HummingbirdTesting", package: "hummingbird", condition: server),
            ],
            resources: [.copy("Apple")],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "CofferSimulatorTests",
            dependencies: [
                "CofferSimulator", "CofferAppStore", "CofferCore", "CofferStoreKit", "CofferTestSupport",
                .product(name: "Crypto", package: "swift-crypto", condition: server),
                .product(name: "AsyncHTTPClient", package: "async-http-client", condition: server),
                .product(name: "Hummingbird", package: "hummingbird", condition: server),
                .product(name: "HummingbirdTesting", package: "hummingbird", condition: server),
            ],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "CofferServerTests",
            dependencies: [
                "CofferServer", "CofferService", "CofferAPI", "CofferAdmin", "CofferAppStore", "CofferCore",
                "CofferPanel",
                "CofferStore",
                "CofferStoreSQLite",
                "CofferStorePostgres", "CofferStoreKit", "CofferSimulator", "CofferTestSupport",
                .product(name: "AsyncHTTPClient", package: "async-http-client", condition: server),
                .product(name: "Crypto", package: "swift-crypto", condition: server),
                .product(name: "HTTPTypes", package: "swift-http-types", condition: server),
                .product(name: "Hummingbird", package: "hummingbird", condition: server),
                .product(name: "HummingbirdTesting", package: "hummingbird", condition: server),
                .product(name: "Logging", package: "swift-log", condition: server),
            ],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "CofferClientTests",
            dependencies: [
                "CofferClient", "CofferServer", "CofferService", "CofferAPI", "CofferAdmin", "CofferAppStore",
                "CofferCore",
                "CofferStore", "CofferStoreKit", "CofferStoreSQLite", "CofferStorePostgres", "CofferSimulator",
                "CofferTestSupport",
                .product(name: "Hummingbird", package: "hummingbird", condition: server),
                .product(name: "HummingbirdHTTP2", package: "hummingbird", condition: server),
                .product(name: "HummingbirdTesting", package: "hummingbird", condition: server),
                .product(name: "AsyncHTTPClient", package: "async-http-client", condition: server),
                .product(name: "Crypto", package: "swift-crypto", condition: server),
                .product(name: "NIOSSL", package: "swift-nio-ssl", condition: server),
                .product(name: "SwiftASN1", package: "swift-asn1", condition: server),
                .product(name: "X509", package: "swift-certificates", condition: server),
            ],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "CofferStoreKit2Tests",
            dependencies: [
                "CofferStoreKit2", "CofferStoreKit",
                .target(name: "StoreKitInterface", condition: .when(platforms: [.linux])),
            ],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "CofferCLITests",
            dependencies: [
                "CofferCLI", "CofferAdmin", "CofferAppStore", "CofferStoreSQLite", "CofferStorePostgres",
                "CofferSimulator",
                "CofferTestSupport", .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Crypto", package: "swift-crypto", condition: server),
            ],
            swiftSettings: strictSettings
        ),
    ],
    swiftLanguageModes: [.v6]
)
