import Foundation

/// Apple's real and mock test material, copied once from `shared/apple/` into `Tests/CofferTestSupport/Apple`
/// for every test target: `mock-signed/` (the App Store Server Library's vectors and their test CA),
/// `real-signed/` and `real-chain/` (Apple's own signed data and certificates), `receipts/` (app receipts of
/// each kind), `xcode/` (StoreKit testing in Xcode: signed data, receipts, the certificate), and Xcode's
/// `StoreKitTestCertificate.cer`.
public enum AppleFixtures {
    /// The file at `path` below `Apple/`.
    public static func url(_ path: String) throws -> URL {
        guard let base = Bundle.module.resourceURL?.appendingPathComponent("Apple"),
            FileManager.default.fileExists(atPath: base.appendingPathComponent(path).path)
        else { throw CocoaError(.fileNoSuchFile, userInfo: [NSFilePathErrorKey: "Apple/" + path]) }
        return base.appendingPathComponent(path)
    }

    /// The file's path, for a command that reads it.
    public static func path(_ path: String) throws -> String { try url(path).path }

    /// The file's bytes.
    public static func data(_ path: String) throws -> Data { try Data(contentsOf: url(path)) }

    /// The file's text, without the line break at its end.
    public static func text(_ path: String) throws -> String {
        String(decoding: try data(path), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
