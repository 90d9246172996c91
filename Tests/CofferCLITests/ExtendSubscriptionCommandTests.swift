import CofferTestSupport
import Foundation
import Testing

/// `coffer extend-subscription` as support types it: its modes are checked before anything runs, and without a
/// server it says that extending goes through Apple with the server's key. The extension itself is tested against
/// the simulator through the admin API it calls (`SubscriptionExtensionTests`).
@Suite("coffer extend-subscription", .timeLimit(.minutes(1)))
struct ExtendSubscriptionCommandTests {
    @Test("one mode at a time, each with what it needs")
    func modes() async throws {
        let cases: [([String], String)] = [
            (["--days", "5", "--reason-code", "1"], "give one of --recipient, --all --product or --status"),
            (["--recipient", "_0123456789ab", "--status"], "give one of --recipient, --all --product or --status"),
            (["--all", "--days", "5", "--reason-code", "3"], "--all needs --product"),
            (["--recipient", "_0123456789ab", "--days", "5"], "--days and --reason-code are required"),
            (
                ["--recipient", "_0123456789ab", "--days", "5", "--reason-code", "1", "--storefront", "USA"],
                "--storefront goes with --all"
            ),
        ]
        for (arguments, words) in cases {
            let output = try await CofferProcess.run(["extend-subscription"] + arguments)
            #expect(output.status != 0, "\(arguments)")
            #expect(output.stderr.contains(words), "\(arguments): \(output.stderr)")
        }
    }

    @Test("on a local database it names what it needs: the server's In-App Purchase key")
    func local() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("coffer-extend-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let output = try await CofferProcess.run(
            [
                "extend-subscription", "--recipient", "_0123456789ab", "--days", "5", "--reason-code", "1",
                "--database-url", "sqlite:\(folder.appendingPathComponent("coffer.sqlite").path)",
            ], in: folder)
        #expect(output.status != 0)
        #expect(output.stderr.contains("In-App Purchase key"), Comment(rawValue: output.stderr))
    }

    @Test("coffer grant: credits, or an entitlement with its days, one at a time")
    func grantModes() async throws {
        let cases: [([String], String)] = [
            (["--recipient", "_0123456789ab", "--reason", "x"], "grant --credits N, or --entitlement NAME --days N"),
            (
                ["--recipient", "_0123456789ab", "--reason", "x", "--entitlement", "premium"],
                "--entitlement needs --days"
            ),
            (
                [
                    "--recipient", "_0123456789ab", "--reason", "x", "--credits", "5", "--entitlement", "premium",
                    "--days", "3",
                ],
                "not both"
            ),
        ]
        for (arguments, words) in cases {
            let output = try await CofferProcess.run(["grant"] + arguments)
            #expect(output.status != 0, "\(arguments)")
            #expect(output.stderr.contains(words), "\(arguments): \(output.stderr)")
        }
    }
}
