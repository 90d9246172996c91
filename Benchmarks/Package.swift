// swift-tools-version: 6.1
import Foundation
import PackageDescription

/// SwiftPM names a path dependency after its folder, so the Coffer checkout's folder name is the package name.
let coffer = URL(fileURLWithPath: Context.packageDirectory).deletingLastPathComponent().lastPathComponent

// Coffer's benchmarks, kept in their own package so the product build and the test command never compile
// the benchmark harness. Run from the repository root:
//   swift package --package-path Benchmarks benchmark
let package = Package(
    name: "CofferBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(path: ".."),
        .package(url: "https://github.com/ordo-one/benchmark.git", from: "1.38.1", traits: ["MallocInterposer"]),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
    ],
    targets: [
        .target(
            name: "BenchmarkSupport",
            dependencies: [
                .product(name: "CofferSimulator", package: coffer), .product(name: "GRDB", package: "GRDB.swift"),
            ]
        ),
        .executableTarget(
            name: "VerificationPayloads",
            dependencies: ["BenchmarkSupport"]
        ),
        .executableTarget(
            name: "VerificationLoop",
            dependencies: [
                "BenchmarkSupport",
                .product(name: "CofferAppStore", package: coffer),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        .executableTarget(
            name: "DeliveryLoad",
            dependencies: [
                "BenchmarkSupport",
                .product(name: "CofferCLI", package: coffer),
                .product(name: "CofferAdmin", package: coffer),
                .product(name: "CofferClient", package: coffer),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "CofferCore", package: coffer),
                .product(name: "CofferStore", package: coffer),
                .product(name: "CofferStoreSQLite", package: coffer),
                .product(name: "CofferStorePostgres", package: coffer),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CofferSimulator", package: coffer),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),
        .executableTarget(
            name: "LedgerGrowth",
            dependencies: [
                "BenchmarkSupport",
                .product(name: "CofferCore", package: coffer),
                .product(name: "CofferStore", package: coffer),
                .product(name: "CofferStoreSQLite", package: coffer),
                .product(name: "CofferStorePostgres", package: coffer),
            ]
        ),
        .executableTarget(
            name: "VerificationBenchmarks",
            dependencies: [
                "BenchmarkSupport",
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "CofferAppStore", package: coffer),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            path: "Benchmarks/VerificationBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        .executableTarget(
            name: "LedgerBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "CofferCore", package: coffer),
                .product(name: "CofferStore", package: coffer),
                .product(name: "CofferStoreSQLite", package: coffer),
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
            path: "Benchmarks/LedgerBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
