import CofferAppStore
import Foundation
import Testing

@testable import CofferCLI

/// What `coffer import cloudkit` trusts of the public database, where any signed-in app writes: the third security
/// round's attacks on the import, record by record.
@Suite("CloudKit import policy")
struct CloudKitPolicyTests {
    static let support = "_support"

    static func stamp(_ who: String?, at time: Int64? = 1_767_225_600_000) -> CloudKitRecord.Stamp {
        CloudKitRecord.Stamp(timestamp: time, userRecordName: who)
    }

    static func backup(_ owner: String, _ bankroll: Int64, name: String? = nil, by creator: String? = nil)
        -> CloudKitRecord
    {
        CloudKitRecord(
            recordName: name ?? "backup-\(owner)", recordType: CloudKitCustomers.backupType,
            fields: ["ownerRecordName": .string(owner), "bankroll": .int64(bankroll, type: "INT64")],
            created: stamp(creator ?? owner), modified: stamp(creator ?? owner))
    }

    static func grant(
        _ name: String, to target: String, credits: Int64, processed: Bool = false, created: CloudKitRecord.Stamp?,
        modified: CloudKitRecord.Stamp?
    ) -> CloudKitRecord {
        CloudKitRecord(
            recordName: name, recordType: CloudKitCustomers.grantType,
            fields: [
                "targetUserRecordName": .string(target), "credits": .int64(credits, type: "INT64"),
                "processed": .int64(processed ? 1 : 0, type: "INT64"),
            ], created: created, modified: modified)
    }

    static func grant(_ name: String, to target: String, credits: Int64, processed: Bool = false, by: String = support)
        -> CloudKitRecord
    {
        grant(name, to: target, credits: credits, processed: processed, created: stamp(by), modified: stamp(by))
    }

    @Test("without --grant-creator no CreditGrant is imported, and the report says why")
    func noCreators() {
        let (customers, skipped) = CloudKitCustomers.customers(
            backups: [Self.backup("_alice", 10)], grants: [Self.grant("g1", to: "_alice", credits: 500)],
            policy: CloudKitImportPolicy())
        #expect(customers.map(\.externalId) == ["_alice"] && customers[0].grants.isEmpty)
        #expect(skipped.map(\.reason) == ["no --grant-creator given: grants are imported only from named creators"])
        #expect(CloudKitCustomers.skippedSummary(skipped).contains("1 CreditGrant records: no --grant-creator given"))
    }

    @Test(
        "a grant counts only when a named creator made it, both stamps are there, and its creator modified it last")
    func grantStamps() {
        let policy = CloudKitImportPolicy(grantCreators: [Self.support])
        let grants = [
            Self.grant("good", to: "_alice", credits: 5),
            // A made-up grant worth 10^12 from any signed-in user.
            Self.grant("made-up", to: "_alice", credits: 1_000_000_000_000, by: "_mallory"),
            // Support's grant whose amount or recipient someone else changed.
            Self.grant(
                "edited", to: "_alice", credits: 900_000, created: Self.stamp(Self.support),
                modified: Self.stamp("_mallory")),
            Self.grant("no-modified", to: "_alice", credits: 5, created: Self.stamp(Self.support), modified: nil),
            Self.grant(
                "undated", to: "_alice", credits: 5, created: Self.stamp(Self.support, at: nil),
                modified: Self.stamp(Self.support)),
            // Marked processed by its recipient: the claim signal, which imports nothing.
            Self.grant(
                "claimed", to: "_alice", credits: 7, processed: true, created: Self.stamp(Self.support),
                modified: Self.stamp("_alice")),
            // Marked processed by a stranger: skipped.
            Self.grant(
                "processed-by-other", to: "_alice", credits: 7, processed: true, created: Self.stamp(Self.support),
                modified: Self.stamp("_mallory")),
            // A recipient with no backup of their own is no customer.
            Self.grant("ghost", to: "_ghost", credits: 5),
        ]
        let (customers, skipped) = CloudKitCustomers.customers(
            backups: [Self.backup("_alice", 10), Self.backup("_ghost", 10, by: "_mallory")], grants: grants,
            policy: policy)
        #expect(customers.map(\.externalId) == ["_alice"])
        #expect(customers[0].grants.map(\.externalId) == ["good"])
        #expect(customers[0].claimedGrants == ["claimed"])
        let reasons = Dictionary(uniqueKeysWithValues: skipped.map { ($0.recordName, $0.reason) })
        #expect(reasons["made-up"] == "not created by a --grant-creator")
        #expect(reasons["edited"] == "modified by someone other than its creator")
        #expect(reasons["no-modified"] == "created or modified stamp missing")
        #expect(reasons["undated"] == "created or modified stamp missing")
        #expect(reasons["processed-by-other"] == "modified by someone other than its creator or recipient")
        #expect(reasons["ghost"] == "its recipient has no backup record of their own")
        #expect(reasons["backup-_ghost"] == "not created by its owner")
        #expect(skipped.count == 7)
    }

    @Test("--max-balance and --max-grant skip and report what is larger; the latest balance decides")
    func maximums() {
        let policy = CloudKitImportPolicy(grantCreators: [Self.support], maxBalance: 1_000, maxGrant: 500)
        var older = Self.backup("_rich", 900, name: "rich-old")
        older.modified = Self.stamp("_rich", at: 1)
        let (customers, skipped) = CloudKitCustomers.customers(
            backups: [Self.backup("_alice", 1_000), older, Self.backup("_rich", 5_000_000, name: "rich-new")],
            grants: [
                Self.grant("small", to: "_alice", credits: 500), Self.grant("large", to: "_alice", credits: 501),
            ], policy: policy)
        // The rich customer's latest balance is over the maximum: skipped whole, never given the older one.
        #expect(customers.map(\.externalId) == ["_alice"])
        #expect(customers[0].balance == 1_000 && customers[0].grants.map(\.externalId) == ["small"])
        #expect(
            skipped.map(\.description).sorted() == [
                "BankrollBackup rich-new: balance over --max-balance (5000000 credits for _rich)",
                "CreditGrant large: grant over --max-grant (501 credits for _alice)",
            ])
    }

    @Test("the dry run lists the ten largest balances and grants")
    func largest() {
        let backups = (1...12).map { Self.backup("_c\($0)", Int64($0) * 100) }
        let grants = (1...12).map { Self.grant("g\($0)", to: "_c\($0)", credits: Int64($0)) }
        let (customers, _) = CloudKitCustomers.customers(
            backups: backups, grants: grants, policy: CloudKitImportPolicy(grantCreators: [Self.support]))
        let text = CloudKitCustomers.largest(customers)
        let lines = text.split(separator: "\n").map(String.init)
        #expect(lines.count == 22)
        #expect(lines[1] == "  1200 credits  _c12" && lines[10] == "  300 credits  _c3")
        #expect(lines[11] == "the ten largest grants:" && lines[12] == "  12 credits  _c12  (g12)")
    }
}
