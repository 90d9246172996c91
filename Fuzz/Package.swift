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
    dependencies: [.package(path: "..")],
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
            ],
            swiftSettings: [.unsafeFlags(["-parse-as-library"])]
        ),
    ],
    swiftLanguageModes: [.v6]
)
