import CofferTestSupport
import Crypto
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `coffer import cloudkit` as an operator moving in from the seeds' CloudKit setup runs it: against the
/// simulator's CloudKit Web Services, which checks the server-to-server signature as CloudKit does.
@Suite("coffer import cloudkit", .timeLimit(.minutes(3)))
struct ImportCloudKitTests {
    /// The user record that created support's grants in these tests.
    static let support = "_support"

    /// A CloudKit record as Web Services writes it, created and last modified by `createdBy`: by default a
    /// backup's owner, or support for a grant.
    static func record(
        _ name: String, _ type: String, _ fields: [String: (Any, String)], createdBy: String? = nil,
        modifiedBy: String? = nil
    ) -> [String: Any] {
        var record: [String: Any] = [
            "recordName": name, "recordType": type,
            "fields": fields.mapValues { ["value": $0.0, "type": $0.1] },
        ]
        let creator = createdBy ?? (fields["ownerRecordName"]?.0 as? String) ?? support
        // CloudKit stamps the last change when the app wrote it (the app's own lastUpdated, in these records).
        let changed = (fields["lastUpdated"]?.0 as? Int) ?? 1_767_225_600_000
        record["created"] = ["timestamp": 1_767_225_600_000, "userRecordName": creator]
        record["modified"] = ["timestamp": changed, "userRecordName": modifiedBy ?? creator]
        return record
    }

    @Test(
        "reads every page of both record types with a signed request, makes a user per customer, is safe to run twice, refuses a forged key"
    )
    func importTwice() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("coffer-ck-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let initialized = try await CofferProcess.run([
            "appstore-sim", "init", folder.appendingPathComponent("sim").path,
        ])
        #expect(initialized.status == 0, "\(initialized.stderr)")
        let keyFile =
            try JSONSerialization.jsonObject(
                with: Data(contentsOf: folder.appendingPathComponent("sim/cloudkit-key.json"))) as? [String: String]
        let keyId = try #require(keyFile?["keyId"])
        let keyPath = folder.appendingPathComponent("sim/cloudkit-key.pem").path
        let attributes = try FileManager.default.attributesOfItem(atPath: keyPath)
        #expect((attributes[.posixPermissions] as? Int) == 0o600, "the private key is the owner's only")

        let (simulator, port) = try await AppStoreSimCommandTests.serve(folder.appendingPathComponent("sim"))
        defer {
            kill(simulator.processIdentifier, SIGKILL)
            simulator.waitUntilExit()
        }
        let remote = ["--server", "http://127.0.0.1:\(port)"]

        // 450 customers' backups (three pages of at most 200), one customer with two backups (the later one
        // counts), grants: unclaimed, claimed in the app already, and one with credits out of range.
        var records: [[String: Any]] = (0..<450).map { index in
            Self.record(
                "backup-\(index)", "BankrollBackup",
                [
                    "ownerRecordName": (String(format: "_%032x", index), "STRING"),
                    "bankroll": (1000 + index, "INT64"), "lastUpdated": (1_767_225_600_000, "TIMESTAMP"),
                ])
        }
        records.append(
            Self.record(
                "backup-older", "BankrollBackup",
                [
                    "ownerRecordName": (String(format: "_%032x", 0), "STRING"), "bankroll": (99, "INT64"),
                    "lastUpdated": (1_767_225_000_000, "TIMESTAMP"),
                ]))
        records += [
            Self.record(
                "grant-a", "CreditGrant",
                [
                    "targetUserRecordName": (String(format: "_%032x", 1), "STRING"), "credits": (400_000, "INT64"),
                    "reason": ("Ticket #42", "STRING"), "processed": (0, "INT64"),
                ]),
            // No customer is made from a grant's recipient alone.
            Self.record(
                "grant-b", "CreditGrant",
                [
                    "targetUserRecordName": ("_onlygrant", "STRING"), "credits": (250, "INT64"),
                    "processed": (0, "INT64"),
                ]),
            Self.record(
                "grant-c", "CreditGrant",
                [
                    "targetUserRecordName": (String(format: "_%032x", 3), "STRING"), "credits": (250, "INT64"),
                    "processed": (0, "INT64"),
                ]),
            // Support's grant that someone else edited afterwards (a new recipient, a larger amount).
            Self.record(
                "grant-edited", "CreditGrant",
                [
                    "targetUserRecordName": (String(format: "_%032x", 5), "STRING"), "credits": (500_000, "INT64"),
                    "processed": (0, "INT64"),
                ], modifiedBy: "_attacker"),
            Self.record(
                "grant-claimed", "CreditGrant",
                [
                    "targetUserRecordName": (String(format: "_%032x", 2), "STRING"), "credits": (900, "INT64"),
                    "processed": (1, "INT64"),
                ]),
            // Customer 7's app wrote a later lastUpdated into an older backup: CloudKit's own modified stamp picks.
            {
                var record = Self.record(
                    "backup-7-stale", "BankrollBackup",
                    [
                        "ownerRecordName": (String(format: "_%032x", 7), "STRING"), "bankroll": (70, "INT64"),
                        "lastUpdated": (1_900_000_000_000, "TIMESTAMP"),
                    ])
                record["modified"] = ["timestamp": 1_767_000_000_000]
                return record
            }(),
            {
                var record = Self.record(
                    "backup-7-fresh", "BankrollBackup",
                    [
                        "ownerRecordName": (String(format: "_%032x", 7), "STRING"), "bankroll": (7_007, "INT64"),
                        "lastUpdated": (1_000, "TIMESTAMP"),
                    ])
                record["modified"] = ["timestamp": 1_767_400_000_000]
                return record
            }(),
            // What a patched app could write: a grant to itself, a backup of someone else's.
            Self.record(
                "grant-self", "CreditGrant",
                [
                    "targetUserRecordName": (String(format: "_%032x", 4), "STRING"), "credits": (9_999, "INT64"),
                    "processed": (0, "INT64"),
                ], createdBy: String(format: "_%032x", 4)),
            Self.record(
                "backup-forged", "BankrollBackup",
                [
                    "ownerRecordName": (String(format: "_%032x", 5), "STRING"), "bankroll": (0, "INT64"),
                    "lastUpdated": (Int64.max, "TIMESTAMP"),
                ], createdBy: "_attacker"),
            Self.record(
                "grant-negative", "CreditGrant",
                [
                    "targetUserRecordName": (String(format: "_%032x", 3), "STRING"), "credits": (-5, "INT64"),
                    "processed": (0, "INT64"),
                ]),
        ]
        let recordsFile = folder.appendingPathComponent("records.json")
        try JSONSerialization.data(withJSONObject: ["records": records]).write(to: recordsFile)
        let saved = try await CofferProcess.run(["appstore-sim", "cloudkit-records", recordsFile.path] + remote)
        #expect(saved.status == 0, "\(saved.stderr)")
        #expect(saved.stdout.contains("saved 461 records"))

        let database = "sqlite:" + folder.appendingPathComponent("coffer.sqlite").path
        let common = [
            "import", "cloudkit", "--container", "iCloud.com.example.app", "--cloudkit-environment", "development",
            "--key-id", keyId, "--cloudkit-url", "http://127.0.0.1:\(port)", "--grant-creator", Self.support,
            "--database-url", database,
        ]

        // A key CloudKit does not hold under that id (a forged one): refused, nothing written.
        let forged = folder.appendingPathComponent("forged.pem")
        try Data(P256.Signing.PrivateKey().pemRepresentation.utf8).write(to: forged)
        let refused = try await CofferProcess.run(common + ["--key-file", forged.path])
        #expect(refused.status != 0)
        #expect(refused.stderr.contains("AUTHENTICATION_FAILED"), "\(refused.stderr)")
        #expect(!FileManager.default.fileExists(atPath: folder.appendingPathComponent("coffer.sqlite").path))

        let dry = try await CofferProcess.run(common + ["--key-file", keyPath, "--dry-run"])
        #expect(dry.status == 0, "\(dry.stderr)")
        #expect(dry.stdout.contains("would import 450 customers (450 balances, 2 unclaimed grants)"), "\(dry.stdout)")
        #expect(dry.stdout.contains("the ten largest balances:\n  7007 credits"), "\(dry.stdout)")
        #expect(dry.stdout.contains("the ten largest grants:\n  400000 credits"), "\(dry.stdout)")
        #expect(!FileManager.default.fileExists(atPath: folder.appendingPathComponent("coffer.sqlite").path))

        let first = try await CofferProcess.run(common + ["--key-file", keyPath, "--json"])
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.stderr.contains("CreditGrant grant-negative: credits missing or outside"))
        #expect(first.stderr.contains("CreditGrant grant-self: not created by a --grant-creator"))
        #expect(first.stderr.contains("BankrollBackup backup-forged: not created by its owner (created by _attacker)"))
        #expect(first.stderr.contains("CreditGrant grant-b: its recipient has no backup record of their own"))
        #expect(
            first.stderr.contains(
                "CreditGrant grant-edited: modified by someone other than its creator (modified by _attacker)"))
        let report = try #require(try JSONSerialization.jsonObject(with: Data(first.stdout.utf8)) as? [String: Any])
        let customers = try #require(report["customers"] as? [[String: Any]])
        #expect(customers.count == 450)
        #expect(customers.allSatisfy { $0["created"] as? Bool == true })
        #expect(customers.filter { $0["balance"] as? String == "imported" }.count == 450)
        #expect(customers.reduce(0) { $0 + ($1["grantsCreated"] as? Int ?? 0) } == 2)
        let zero = try #require(customers.first { $0["externalId"] as? String == String(format: "_%032x", 0) })
        let zeroId = try #require(zero["supportId"] as? String)

        // Run again: everything on file, nothing made twice.
        let second = try await CofferProcess.run(common + ["--key-file", keyPath])
        #expect(second.status == 0, "\(second.stderr)")
        #expect(
            second.stdout.contains(
                "imported from CloudKit into Sandbox: 450 customers, 0 users made, 0 balances, 0 grants made"),
            "\(second.stdout)")
        #expect(second.stdout.contains("450 customers were on file from an earlier run"))
        #expect(second.stdout.contains("1 CreditGrant records: modified by someone other than its creator"))

        // The customers are there for support: the later backup's balance, the import in the story.
        let user = try await CofferProcess.run(["user", zeroId, "--database-url", database])
        #expect(user.status == 0, "\(user.stderr)")
        #expect(user.stdout.contains("backup 1000 (version 1"), "\(user.stdout)")
        #expect(user.stdout.contains("customer.import"))
        // Support finds the customer by the old Support ID (the CloudKit user record name) too.
        let found = try await CofferProcess.run([
            "users", "--search", String(format: "_%032x", 0), "--database-url", database, "--json",
        ])
        #expect(found.stdout.contains(zeroId) && found.stdout.contains("cloudkit-record-name"), "\(found.stdout)")

        // The old app went on writing a customer's backup after the import: a later run brings it, as the app
        // has not claimed the customer yet.
        // Meanwhile the old app claimed grant-a too: the Coffer grant still pending is withdrawn.
        let later = [
            Self.record(
                "grant-a", "CreditGrant",
                [
                    "targetUserRecordName": (String(format: "_%032x", 1), "STRING"), "credits": (400_000, "INT64"),
                    "reason": ("Ticket #42", "STRING"), "processed": (1, "INT64"),
                ]),
            Self.record(
                "backup-0", "BankrollBackup",
                [
                    "ownerRecordName": (String(format: "_%032x", 0), "STRING"), "bankroll": (7_777, "INT64"),
                    "lastUpdated": (1_767_300_000_000, "TIMESTAMP"),
                ]),
        ]
        try JSONSerialization.data(withJSONObject: ["records": later]).write(to: recordsFile)
        #expect(
            try await CofferProcess.run(["appstore-sim", "cloudkit-records", recordsFile.path] + remote).status == 0)
        let third = try await CofferProcess.run(common + ["--key-file", keyPath])
        #expect(third.stdout.contains("0 users made, 1 balances, 0 grants made"), "\(third.stdout)")
        #expect(third.stdout.contains("updated"))
        #expect(third.stdout.contains("0 made, 0 on file, 1 withdrawn"), "\(third.stdout)")
        #expect(
            try await CofferProcess.run(["user", zeroId, "--database-url", database]).stdout.contains(
                "backup 7777 (version 2"))

        let seven = try #require(customers.first { $0["externalId"] as? String == String(format: "_%032x", 7) })
        let sevenUser = try await CofferProcess.run([
            "user", try #require(seven["supportId"] as? String), "--database-url", database,
        ])
        #expect(sevenUser.stdout.contains("backup 7007 (version 1"), "\(sevenUser.stdout)")

        #expect(!customers.contains { $0["externalId"] as? String == "_onlygrant" })
        let grants = try await CofferProcess.run(["grants", "--database-url", database, "--status", "pending"])
        #expect(!grants.stdout.contains("Ticket #42"), "withdrawn: \(grants.stdout)")
        #expect(!grants.stdout.contains("9,999") && !grants.stdout.contains("9999"))
        #expect(!grants.stdout.contains("500,000") && !grants.stdout.contains("500000"))
        #expect(grants.stdout.contains("Imported from CloudKit"))
        #expect(!grants.stdout.contains("900"), "a grant the app claimed in CloudKit is not made again")

        // The server wallet: the balance is a ledger adjustment, made once however often the import runs.
        let ledger = "sqlite:" + folder.appendingPathComponent("server.sqlite").path
        var serverWallet = common
        serverWallet[serverWallet.count - 1] = ledger
        serverWallet += ["--key-file", keyPath, "--wallet", "server"]
        let made = try await CofferProcess.run(serverWallet + ["--json"])
        #expect(made.status == 0, "\(made.stderr)")
        let again = try await CofferProcess.run(serverWallet)
        #expect(again.stdout.contains("0 users made, 0 balances, 0 grants made"), "\(again.stdout)")
        let madeReport = try JSONSerialization.jsonObject(with: Data(made.stdout.utf8)) as? [String: Any]
        let first450 = try #require(
            (madeReport?["customers"] as? [[String: Any]])?.first {
                $0["externalId"] as? String == String(format: "_%032x", 449)
            })
        let serverUser = try await CofferProcess.run([
            "user", try #require(first450["supportId"] as? String), "--database-url", ledger, "--wallet", "server",
        ])
        #expect(serverUser.stdout.contains("balance 1449  deficit 0"), "\(serverUser.stdout)")
    }
}
