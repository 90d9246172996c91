import CofferAdmin
import CofferAppStore
import CofferCore
import Foundation

/// What `coffer import cloudkit` trusts of records anyone can write: whose grants count, and the largest balance
/// and grant it brings in.
struct CloudKitImportPolicy: Sendable {
    /// The user record names that created support's grants. Empty: no CreditGrant is imported.
    var grantCreators: Set<String> = []
    /// A balance larger than this is skipped and reported (never credited).
    var maxBalance: Int64?
    /// A grant larger than this is skipped and reported.
    var maxGrant: Int64?
}

/// A record the import passed over, and why.
struct CloudKitSkip: Sendable, Hashable, CustomStringConvertible {
    /// The record type.
    var type: String
    /// The record's name.
    var recordName: String
    /// Why, in words shared by every record skipped for the same reason (the report groups by it).
    var reason: String
    /// What this record had, for people.
    var detail: String?

    /// `CreditGrant grant-7: modified by _x, not its creator`.
    var description: String { "\(type) \(recordName): \(reason)" + (detail.map { " (\($0))" } ?? "") }
}

/// The seeds' CloudKit records as Coffer customers.
enum CloudKitCustomers {
    /// The record type of a customer's balance backup.
    static let backupType = "BankrollBackup"
    /// The record type of support's grants.
    static let grantType = "CreditGrant"

    /// A customer per user record name that has a backup record of their own: the balance of the backup updated
    /// last (a customer may have several), the unclaimed grants support made them, and the grants they claimed.
    ///
    /// The public database lets any signed-in app create records, and the seeds' app edited support's grants
    /// (`processed`), so the fields are what a patched app likes; what CloudKit itself stamps is trusted over
    /// them:
    /// - a backup counts only when its creator is its owner, the latest by CloudKit's own modification time;
    /// - a grant counts only when one of `policy.grantCreators` created it, both stamps are present, and its last
    ///   modifier is its creator (for an unclaimed one) or its recipient (marking it `processed`: the claim
    ///   signal, which imports nothing);
    /// - no customer is made from a grant's recipient alone;
    /// - balances and grants over the policy's maximums are skipped.
    ///
    /// - Returns: The customers in user record name order, and the records skipped with why.
    static func customers(backups: [CloudKitRecord], grants: [CloudKitRecord], policy: CloudKitImportPolicy)
        -> ([CustomerImport], [CloudKitSkip])
    {
        var skipped: [CloudKitSkip] = []
        var latest: [String: (balance: Int64, updated: Int64, name: String)] = [:]
        for record in backups {
            func skip(_ reason: String, _ detail: String? = nil) {
                skipped.append(
                    CloudKitSkip(type: backupType, recordName: record.recordName, reason: reason, detail: detail))
            }
            let fields = record.fields ?? [:]
            guard let owner = fields["ownerRecordName"]?.string, AdminService.isExternalId(owner) else {
                skip("no valid ownerRecordName")
                continue
            }
            guard let creator = record.created?.userRecordName, creator == owner else {
                skip("not created by its owner", "created by \(record.created?.userRecordName ?? "nobody known")")
                continue
            }
            guard let balance = fields["bankroll"]?.int64, balance >= 0, balance <= SupportRules.maximumAmount
            else {
                skip("bankroll missing or outside 0...\(SupportRules.maximumAmount)")
                continue
            }
            let updated = record.modified?.timestamp ?? fields["lastUpdated"]?.int64 ?? 0
            if let seen = latest[owner], (seen.updated, seen.name) >= (updated, record.recordName) { continue }
            latest[owner] = (balance, updated, record.recordName)
        }
        // The customer's latest balance over the maximum: the customer is skipped, not given an older balance.
        var overMaximum: Set<String> = []
        if let maximum = policy.maxBalance {
            for (owner, backup) in latest where backup.balance > maximum {
                skipped.append(
                    CloudKitSkip(
                        type: backupType, recordName: backup.name, reason: "balance over --max-balance",
                        detail: "\(backup.balance) credits for \(owner)"))
                latest[owner] = nil
                overMaximum.insert(owner)
            }
        }
        var pending: [String: [CustomerImport.PendingGrant]] = [:]
        var claimed: [String: [String]] = [:]
        for record in grants {
            func skip(_ reason: String, _ detail: String? = nil) {
                skipped.append(
                    CloudKitSkip(type: grantType, recordName: record.recordName, reason: reason, detail: detail))
            }
            let fields = record.fields ?? [:]
            guard let target = fields["targetUserRecordName"]?.string, AdminService.isExternalId(target),
                AdminService.isExternalId(record.recordName)
            else {
                skip("no valid targetUserRecordName")
                continue
            }
            guard !policy.grantCreators.isEmpty else {
                skip("no --grant-creator given: grants are imported only from named creators")
                continue
            }
            guard let creator = record.created?.userRecordName, let modifier = record.modified?.userRecordName,
                record.created?.timestamp != nil, record.modified?.timestamp != nil
            else {
                skip("created or modified stamp missing")
                continue
            }
            guard policy.grantCreators.contains(creator), creator != target else {
                skip("not created by a --grant-creator", "created by \(creator)")
                continue
            }
            guard latest[target] != nil else {
                if overMaximum.contains(target) {
                    skip("its recipient was skipped (balance over --max-balance)", "for \(target)")
                } else {
                    skip("its recipient has no backup record of their own", "for \(target)")
                }
                continue
            }
            guard fields["processed"]?.int64 ?? 0 == 0 else {
                // The old app credited it and marked it: the claim signal, which imports nothing.
                guard modifier == target || modifier == creator else {
                    skip("modified by someone other than its creator or recipient", "modified by \(modifier)")
                    continue
                }
                claimed[target, default: []].append(record.recordName)
                continue
            }
            guard modifier == creator else {
                skip("modified by someone other than its creator", "modified by \(modifier)")
                continue
            }
            guard let credits = fields["credits"]?.int64, credits > 0, credits <= SupportRules.maximumAmount else {
                skip("credits missing or outside 1...\(SupportRules.maximumAmount)")
                continue
            }
            if let maximum = policy.maxGrant, credits > maximum {
                skip("grant over --max-grant", "\(credits) credits for \(target)")
                continue
            }
            let reason = fields["reason"]?.string.map { String($0.prefix(200)) } ?? ""
            pending[target, default: []].append(
                .init(
                    externalId: record.recordName, credits: credits,
                    reason: reason.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty
                        ? "Imported from CloudKit" : reason))
        }
        let customers = latest.keys.sorted().map { name in
            CustomerImport(
                externalId: name, balance: latest[name]?.balance,
                grants: (pending[name] ?? []).sorted { $0.externalId < $1.externalId },
                claimedGrants: (claimed[name] ?? []).sorted())
        }
        return (customers, skipped)
    }

    /// How many records were skipped for each reason, most first: what the report says beside the table.
    static func skippedSummary(_ skipped: [CloudKitSkip]) -> String {
        var counts: [String: Int] = [:]
        for skip in skipped { counts["\(skip.type) records: \(skip.reason)", default: 0] += 1 }
        let lines = counts.sorted { ($1.value, $0.key) < ($0.value, $1.key) }.map { "  \($0.value) \($0.key)" }
        return (["skipped \(skipped.count) records (each is named on standard error):"] + lines).joined(separator: "\n")
    }

    /// The ten largest balances and the ten largest grants, for an operator to look at before an import.
    static func largest(_ customers: [CustomerImport]) -> String {
        let balances = customers.compactMap { customer in customer.balance.map { (customer.externalId, $0) } }
            .sorted { ($1.1, $0.0) < ($0.1, $1.0) }.prefix(10)
        let grants = customers.flatMap { customer in customer.grants.map { (customer.externalId, $0) } }
            .sorted { ($1.1.credits, $0.1.externalId) < ($0.1.credits, $1.1.externalId) }.prefix(10)
        var lines = ["the ten largest balances:"]
        lines += balances.isEmpty ? ["  none"] : balances.map { "  \($0.1) credits  \($0.0)" }
        lines.append("the ten largest grants:")
        lines += grants.isEmpty ? ["  none"] : grants.map { "  \($0.1.credits) credits  \($0.0)  (\($0.1.externalId))" }
        return lines.joined(separator: "\n")
    }
}
