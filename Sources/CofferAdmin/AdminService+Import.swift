import CofferCore
import CofferStore
import Crypto
import Foundation

/// A customer to bring in from the system an app used before Coffer: their id there, the balance it kept and
/// support's grants the app had not claimed yet.
public struct CustomerImport: Sendable, Hashable, Codable {
    /// A grant made in the old system, not yet claimed by the app.
    public struct PendingGrant: Sendable, Hashable, Codable {
        /// The grant's id in the old system (a CloudKit record name): the Coffer grant's id derives from it.
        public var externalId: String
        /// Credits.
        public var credits: Int64
        /// Why.
        public var reason: String

        /// A grant.
        public init(externalId: String, credits: Int64, reason: String) {
            self.externalId = externalId
            self.credits = credits
            self.reason = reason
        }
    }

    /// The customer's id in the old system (for CloudKit, their `userRecordName`).
    public var externalId: String
    /// The balance the old system kept, if it kept one.
    public var balance: Int64?
    /// The grants waiting for the app.
    public var grants: [PendingGrant]
    /// The ids of grants the old app claimed already: one an earlier run brought in, still pending here, is
    /// withdrawn (the old app credited it, and the balance brought in holds it).
    public var claimedGrants: [String]

    /// A customer.
    public init(externalId: String, balance: Int64?, grants: [PendingGrant], claimedGrants: [String] = []) {
        self.externalId = externalId
        self.balance = balance
        self.grants = grants
        self.claimedGrants = claimedGrants
    }
}

/// What an import did, customer by customer and in total. Running it again reports everything as on file.
public struct ImportReport: Sendable, Hashable, Codable {
    /// One customer's outcome.
    public struct Line: Sendable, Hashable, Codable {
        /// The id in the old system.
        public var externalId: String
        /// The Coffer user's Support ID (none when the customer could not be imported).
        public var supportId: String?
        /// Whether the user was made now.
        public var created: Bool
        /// `imported`, `on-file` (an earlier run brought it in), `updated` (device wallet: an earlier run brought
        /// in another value and the app has not claimed the customer yet, so the backup follows the old system),
        /// `differs` (another value is on file, written by the app or support: left as it is), `none` (no balance
        /// in the old system).
        public var balance: String
        /// Grants made now.
        public var grantsCreated: Int
        /// Grants an earlier run made.
        public var grantsOnFile: Int
        /// Grants an earlier run made that the old app claimed since: cancelled here.
        public var grantsWithdrawn: Int = 0
        /// What the run left as it is, and why (not a problem).
        public var notes: [String] = []
        /// What could not be done, for people.
        public var problems: [String]
    }

    /// The source, e.g. `cloudkit`.
    public var source: String
    /// The environment imported into.
    public var environment: AppStoreEnvironment
    /// Every customer.
    public var customers: [Line]
    /// Users made now.
    public var usersCreated: Int { customers.count { $0.created } }
    /// Balances brought in now (or brought up to date).
    public var balancesImported: Int { customers.count { $0.balance == "imported" || $0.balance == "updated" } }
    /// Grants made now.
    public var grantsCreated: Int { customers.reduce(0) { $0 + $1.grantsCreated } }
    /// Customers with a problem.
    public var problems: Int { customers.count { !$0.problems.isEmpty } }
}

extension AdminService {
    /// The source `coffer import cloudkit` records its customers under.
    public static let cloudKitSource = "cloudkit"

    /// The longest id of a customer or grant accepted from an old system.
    public static let maximumExternalIdLength = 255

    /// Whether a customer or grant id from an old system is acceptable: 1 to 255 printable ASCII characters.
    public static func isExternalId(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count <= maximumExternalIdLength
            && text.unicodeScalars.allSatisfy { $0.value > 0x20 && $0.value < 0x7F }
    }

    /// A stable UUID for a name: an import run twice names the same grant and audit entry.
    public static func stableId(_ name: String) -> UUID {
        var bytes = Array(SHA256.hash(data: Data(name.utf8)).prefix(16))
        bytes[6] = (bytes[6] & 0x0F) | 0x50  // version 5's layout (a name-derived UUID)
        bytes[8] = (bytes[8] & 0x3F) | 0x80
        return UUID(
            uuid: (
                bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7], bytes[8], bytes[9],
                bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]
            ))
    }

    /// Brings customers in from an old system (`source`, e.g. `cloudkit`): a user per customer, found again by
    /// the customer's id there; the balance (a ledger adjustment in the server wallet, the backup in the device
    /// wallet); a grant per pending grant. Safe to run twice, or after a run stopped half-way: what is on file is
    /// found and left, and what a customer lacks is made. Each customer's import is audited once.
    ///
    /// An app claims its customer with ``ClientService`` (`POST /v1/users/import`), once.
    public func importCustomers(
        _ customers: [CustomerImport], source: String, environment: AppStoreEnvironment, actor: String
    ) async throws -> ImportReport {
        var lines: [ImportReport.Line] = []
        for customer in customers {
            lines.append(try await importCustomer(customer, source: source, environment: environment, actor: actor))
        }
        return ImportReport(source: source, environment: environment, customers: lines)
    }

    private func importCustomer(
        _ customer: CustomerImport, source: String, environment: AppStoreEnvironment, actor: String
    ) async throws -> ImportReport.Line {
        var line = ImportReport.Line(
            externalId: customer.externalId, supportId: nil, created: false, balance: "none", grantsCreated: 0,
            grantsOnFile: 0, problems: [])
        guard Self.isExternalId(customer.externalId) else {
            line.problems.append("not an id: 1 to 255 printable ASCII characters")
            return line
        }
        // Only grants the old app claimed since an earlier run: withdrawn, and no user made for nothing.
        if customer.balance == nil, customer.grants.isEmpty {
            if let found = try await store.importedCustomer(
                source: source, externalId: customer.externalId, environment: environment)
            {
                line.supportId = try await store.user(id: found.user)?.supportId.rawValue
                for externalId in customer.claimedGrants {
                    try await withdraw(externalId, source: source, environment: environment, actor: actor, line: &line)
                }
                try await auditImport(line, source: source, environment: environment, actor: actor)
            }
            return line
        }
        // The record first, then its user: a run stopped between the two makes the user when run again.
        let record = try await store.recordImport(
            ImportedCustomer(
                environment: environment, source: source, externalId: customer.externalId, user: UUID(),
                importedAt: now()))
        let user: User
        if let found = try await store.user(id: record.user) {
            user = found
        } else {
            user = try await makeImportedUser(id: record.user, environment: environment)
            line.created = true
        }
        line.supportId = user.supportId.rawValue
        try await auditFirstImport(line, source: source, environment: environment, actor: actor)
        // Support may have merged the customer since (grants go where the merges lead; the balance moved with the
        // merge), or deleted them at their request (nothing more is brought in).
        var target = user
        for _ in 0..<8 {
            guard let into = target.mergedInto, let next = try await store.user(id: into) else { break }
            target = next
        }
        if !target.isOwnCustomer {
            line.notes.append("deleted at the customer's request: nothing imported")
            return line
        }
        if target.id != user.id {
            line.notes.append("merged into \(target.supportId): grants go there; the balance moved with the merge")
        } else if let balance = customer.balance {
            line.balance = try await importBalance(
                balance, of: user, source: source, actor: actor, record: record, line: &line)
        }
        for externalId in customer.claimedGrants {
            try await withdraw(externalId, source: source, environment: environment, actor: actor, line: &line)
        }
        for grant in customer.grants {
            let id = Self.stableId("\(source)-grant:\(environment.rawValue):\(grant.externalId)")
            if try await store.grant(id: id, environment: environment) != nil {
                line.grantsOnFile += 1
                continue
            }
            do {
                _ = try await createGrant(
                    environment: environment, supportId: target.supportId.rawValue, credits: grant.credits,
                    reason: grant.reason, actor: actor, id: id)
                line.grantsCreated += 1
            } catch let error as AdminError {
                line.problems.append("grant \(grant.externalId): \(error.description)")
            }
        }
        try await auditImport(line, source: source, environment: environment, actor: actor)
        return line
    }

    /// A grant an earlier run brought in that the old app claimed since: cancelled while pending here; claimed
    /// here too, it was credited twice, which support must settle.
    private func withdraw(
        _ externalId: String, source: String, environment: AppStoreEnvironment, actor: String,
        line: inout ImportReport.Line
    ) async throws {
        let id = Self.stableId("\(source)-grant:\(environment.rawValue):\(externalId)")
        guard let grant = try await store.grant(id: id, environment: environment) else { return }
        switch grant.status {
        case .pending:
            do {
                _ = try await cancelGrant(environment: environment, id: id.uuidString, actor: actor)
                line.grantsWithdrawn += 1
            } catch let error as AdminError {
                // Claimed here a moment ago: reported as below on the next run.
                line.problems.append("grant \(externalId): \(error.description)")
            }
        case .claimed:
            // A note, not a problem: once support settled it, later runs still find it so.
            line.notes.append(
                "grant \(externalId) was claimed in the old app and in Coffer: credited twice unless support took "
                    + "one back")
        case .cancelled: break
        }
    }

    private func makeImportedUser(id: UUID, environment: AppStoreEnvironment) async throws -> User {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<5 {
            let user = User(
                id: id, environment: environment, supportId: SupportID.random(using: &generator),
                tokenHash: Secrets.hash(Secrets.random()), createdAt: now())
            do {
                try await store.createUser(user)
                return user
            } catch StoreError.alreadyExists {
                // Another run made it at the same moment, or the Support ID was taken: look, and draw again.
                if let made = try await store.user(id: id) { return made }
            }
        }
        throw AdminError.unavailable("no free Support ID; run the import again")
    }

    /// The balance in the wallet the server runs: once, keyed by the customer.
    private func importBalance(
        _ balance: Int64, of user: User, source: String, actor: String, record: ImportedCustomer,
        line: inout ImportReport.Line
    ) async throws -> String {
        guard balance >= 0, balance <= SupportRules.maximumAmount else {
            line.problems.append("balance \(balance) is outside 0...\(SupportRules.maximumAmount): not imported")
            return "none"
        }
        let reason = "imported from \(source)"
        switch walletMode {
        case .server:
            guard balance > 0 else { return "none" }
            do {
                let result = try await store.apply(
                    LedgerRequest(
                        owner: user.id, environment: user.environment,
                        event: .adjustment(id: "\(source)-import", delta: balance, reason: reason), at: now()))
                return result.outcome == .applied ? "imported" : "on-file"
            } catch LedgerError.keyReused {
                line.notes.append(
                    "balance: the server wallet takes it once; an earlier run brought another value (CloudKit "
                        + "says \(balance) now): set it in the panel if that one is right")
                return "differs"
            }
        case .device:
            switch try await store.saveBackup(
                owner: user.id, environment: user.environment, value: balance, precondition: .absent,
                writer: .admin(actor), at: now())
            {
            case .saved: return "imported"
            case .conflict(let current):
                guard let current, current.value != balance else { return "on-file" }
                // Until the customer's app takes over, the backup is the import's: a later run brings the balance
                // the old app kept writing since. Once the app (or support) wrote it, it is theirs.
                if case .admin(let writer) = current.writer, writer.hasPrefix("import:"),
                    try await store.importedCustomer(
                        source: source, externalId: record.externalId, environment: record.environment)?.claimedAt
                        == nil,
                    case .saved = try await store.saveBackup(
                        owner: user.id, environment: user.environment, value: balance,
                        precondition: .version(current.version), writer: .admin(actor), at: now())
                {
                    return "updated"
                }
                line.notes.append(
                    "balance: the app or support wrote the backup since (\(current.value)); CloudKit's \(balance) "
                        + "is left out")
                return "differs"
            }
        }
    }

    /// The customer's first import, in their story once (keyed by the customer: written by whichever run gets
    /// there, a run that stopped half-way included).
    private func auditFirstImport(
        _ line: ImportReport.Line, source: String, environment: AppStoreEnvironment, actor: String
    ) async throws {
        guard let supportId = line.supportId else { return }
        let details = ["source": source, "externalId": line.externalId]
        do {
            try await store.recordAudit(
                AuditEvent(
                    id: Self.stableId("\(source)-import:\(environment.rawValue):\(line.externalId)"),
                    environment: environment, actor: actor, action: "customer.import", subject: supportId,
                    after: try Self.json(details), at: now()))
        } catch StoreError.alreadyExists {}
    }

    /// What a run brought in for a customer, when it brought something.
    private func auditImport(_ line: ImportReport.Line, source: String, environment: AppStoreEnvironment, actor: String)
        async throws
    {
        // Written when the run changed something: a run that found everything on file adds nothing.
        guard ["imported", "updated"].contains(line.balance) || line.grantsCreated > 0 || line.grantsWithdrawn > 0,
            let supportId = line.supportId
        else { return }
        try await store.recordAudit(
            AuditEvent(
                environment: environment, actor: actor, action: "customer.import.run", subject: supportId,
                after: try Self.json(line), at: now()))
    }
}
