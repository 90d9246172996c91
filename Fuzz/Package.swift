// swift-tools-version: 6.1
import Foundation
import PackageDescription

// libFuzzer targets for Coffer's parsers of untrusted input, in their own package because they are built
// with sanitizers. Run from the repository root:
//   Fuzz/run.sh [SECONDS]

/// SwiftPM names a path dependency after its folder, so the Coffer checkout's folder name is the package name.
let coffer = URL(fileURLWithPath: Context.packageDirectory).deletingLastPathComponent().lastPathComponent

let package = Package(
    name: "CofferFuzz",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(path: ".."),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
    ],
    targets: [
        .target(name: "CFuzzDriver"),
        .executableTarget(
            name: "CofferFuzz",
            dependencies: [
                "CFuzzDriver",
                .product(name: "CofferAdmin", package: coffer),
                .product(name: "CofferAPI", package: coffer),
                .product(name: "CofferAppStore", package: coffer),
                .product(name: "CofferCore", package: coffer),
                .product(name: "CofferHTTP", package: coffer),
                .product(name: "CofferServer", package: coffer),
                .product(name: "CofferService", package: coffer),
                .product(name: "CofferStore", package: coffer),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: [.unsafeFlags(["-parse-as-library"])]
        ),
    ],
    swiftLanguageModes: [.v6]
)
