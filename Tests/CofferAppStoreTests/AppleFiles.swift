import CofferAppStore
import CofferTestSupport
import Foundation

/// Apple's test material: Apple's model fixtures in this target's `Apple/models`, everything else from
/// ``AppleFixtures`` (kept once in `CofferTestSupport`).
enum AppleFiles {
    static func data(_ path: String) throws -> Data {
        guard path.hasPrefix("models/") else { return try AppleFixtures.data(path) }
        guard let base = Bundle.module.resourceURL?.appendingPathComponent("Apple") else {
            throw CocoaError(.fileNoSuchFile)
        }
        return try Data(contentsOf: base.appendingPathComponent(path))
    }

    static func text(_ path: String) throws -> String {
        String(decoding: try data(path), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// A verifier for Apple's mock vectors: test CA root, bundle `com.example`, offline.
    static func mockVerifier(
        environment: SignedDataEnvironment = .sandbox, appAppleId: Int64? = 1234, acceptsSandbox: Bool = false
    ) throws -> SignedDataVerifier {
        try SignedDataVerifier(
            rootCertificates: [data("mock-signed/testCA.der")], bundleId: "com.example", appAppleId: appAppleId,
            environment: environment, acceptsSandbox: acceptsSandbox)
    }
}

/// Runs `body` and returns the verification error it throws; `nil` when it succeeds or throws anything else.
func verificationError(_ body: () async throws -> Void) async -> VerificationError? {
    do {
        try await body()
        return nil
    } catch {
        return error as? VerificationError
    }
}
