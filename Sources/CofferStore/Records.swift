import CofferCore
import Foundation

/// A user of the app: created by the app on first launch, found by support through the Support ID.
public struct User: Sendable, Hashable, Codable {
    /// The internal id.
    public var id: UUID
    /// The environment the user lives in; a user's records never leave it.
    public var environment: AppStoreEnvironment
    /// The Support ID shown in the app.
    public var supportId: SupportID
    /// A hash of the user's secret token (the token itself is never stored).
    public var tokenHash: String
    /// The `appAccountToken` the app passes to StoreKit, tying transactions to this user.
    public var appAccountToken: UUID
    /// When the user was created.
    public var createdAt: Date
    /// The Apple account the user is, for a user registered with a signed AppTransaction; `nil` for an
    /// anonymous user (one install, found again only by its token).
    public var appleAccount: AppleAccount?
    /// The account user support merged this anonymous user into: its tokens, appAccountToken, receipts,
    /// grants and balance are that user's now.
    public var mergedInto: UUID?
    /// When support deleted the customer at their request (``UserStore/deleteUser(_:)``): the record stays,
    /// anonymised, so the ledger's totals still add up; nothing signs in as it.
    public var deletedAt: Date?

    /// Whether the customer is live: not deleted at their request. A deleted customer gets nothing new (no token,
    /// push token, milestone, backup, grant, report or Apple account); every engine keeps this one rule (SQL
    /// engines as the `live_users` view).
    public var isLive: Bool { deletedAt == nil }

    /// Whether a token or a code may name the user: live, and not merged into another customer.
    public var isOwnCustomer: Bool { isLive && mergedInto == nil }

    /// Creates a user record.
    public init(
        id: UUID = UUID(), environment: AppStoreEnvironment, supportId: SupportID, tokenHash: String,
        appAccountToken: UUID = UUID(), createdAt: Date, appleAccount: AppleAccount? = nil, mergedInto: UUID? = nil,
        deletedAt: Date? = nil
    ) {
        self.deletedAt = deletedAt
        self.id = id
        self.environment = environment
        self.supportId = supportId
        self.tokenHash = tokenHash
        self.appAccountToken = appAccountToken
        self.createdAt = createdAt
        self.appleAccount = appleAccount
        self.mergedInto = mergedInto
    }
}

/// The last "Verify Purchases" an install ran and reported (``UserStore/saveVerifyReport(_:)``).
public struct VerifyReport: Sendable, Hashable, Codable {
    /// The user.
    public var owner: UUID
    /// Their environment.
    public var environment: AppStoreEnvironment
    /// When the server received it.
    public var reportedAt: Date
    /// What the install found, one item per transaction.
    public var items: [ReconciliationItem]

    /// Creates a report.
    public init(owner: UUID, environment: AppStoreEnvironment, reportedAt: Date, items: [ReconciliationItem]) {
        self.owner = owner
        self.environment = environment
        self.reportedAt = reportedAt
        self.items = items
    }

    /// The items as stored: a JSON array.
    public var itemsText: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return (try? encoder.encode(items)).map { String(decoding: $0, as: UTF8.self) } ?? "[]"
    }

    /// Items from their stored text.
    public static func items(_ text: String) throws -> [ReconciliationItem] {
        do {
            return try JSONDecoder().decode([ReconciliationItem].self, from: Data(text.utf8))
        } catch {
            throw StoreError.storage("corrupt verify report")
        }
    }
}

/// What a backup write needs to find on the server before it may replace the record.
public enum BackupPrecondition: Sendable, Hashable {
    /// No backup exists yet (a first write).
    case absent
    /// The current backup has this version (`If-Match`).
    case version(Int64)
    /// Anything: an admin override.
    case overwrite

    /// The record a write leaves, or `nil` when the precondition does not hold for `current` (a conflict).
    /// Every engine decides with this, inside its write.
    ///
    /// - Parameters:
    ///   - current: The backup on record now.
    ///   - value: The balance to back up.
    ///   - deficit: The deficit to back up with it.
    ///   - writer: Who writes.
    ///   - at: When.
    ///   - applied: The mailbox keys the balance holds, as the device says (`nil`: those of `current`, as an admin's
    ///     edit keeps them).
    ///   - currencies: The other currencies' wallets to set, each named one replacing `current`'s (an empty one
    ///     clears it); those not named keep `current`'s, so an app whose catalog lacks a currency never erases it.
    public func write(
        over current: BackupRecord?, value: Int64, deficit: Int64 = 0, writer: BackupWriter, at: Date,
        applied: [String]? = nil, currencies: [Currency: Wallet]? = nil
    ) -> BackupRecord? {
        switch (self, current) {
        case (.absent, nil), (.overwrite, _): break
        case (.version(let expected), let record?) where record.version == expected: break
        default: return nil
        }
        return BackupRecord(
            value: value, lastUpdated: at, version: (current?.version ?? 0) + 1, writer: writer, deficit: deficit,
            applied: applied ?? current?.applied ?? [],
            currencies: (current?.currencies ?? [:]).merging(currencies ?? [:]) { $1 })
    }
}

/// The result of a backup write.
public enum BackupSaveResult: Sendable, Hashable {
    /// Written; the new record.
    case saved(BackupRecord)
    /// The precondition failed; the record on the server now (`nil` if none).
    case conflict(current: BackupRecord?)
}

/// Credits support gives a user, with a reason; the app picks them up and claims them once.
public struct Grant: Sendable, Hashable, Codable {
    /// The grant's id, also its ledger key (`grant:<id>`).
    public var id: UUID
    /// The environment.
    public var environment: AppStoreEnvironment
    /// The user who receives it.
    public var recipient: UUID
    /// The credits granted.
    public var credits: Int64
    /// Why, e.g. "Ticket #42".
    public var reason: String
    /// Who created it.
    public var createdBy: String
    /// When it was created.
    public var createdAt: Date
    /// When the app claimed it, `nil` while pending.
    public var claimedAt: Date?
    /// When support cancelled it, `nil` unless cancelled.
    public var cancelledAt: Date?
    /// Who cancelled it.
    public var cancelledBy: String?
    /// The currency of the credits, when not the default (``LedgerRequest/currency``).
    public var currency: Currency?
    /// For credits that expire: how many days after the app claims them (``LedgerRequest/expiresAt``); `nil`, they
    /// never do.
    public var expiresInDays: Int?

    /// Creates a grant.
    public init(
        id: UUID = UUID(), environment: AppStoreEnvironment, recipient: UUID, credits: Int64, reason: String,
        createdBy: String,
        createdAt: Date, claimedAt: Date? = nil, cancelledAt: Date? = nil, cancelledBy: String? = nil,
        currency: Currency? = nil, expiresInDays: Int? = nil
    ) {
        self.currency = currency
        self.expiresInDays = expiresInDays
        self.id = id
        self.environment = environment
        self.recipient = recipient
        self.credits = credits
        self.reason = reason
        self.createdBy = createdBy
        self.createdAt = createdAt
        self.claimedAt = claimedAt
        self.cancelledAt = cancelledAt
        self.cancelledBy = cancelledBy
    }

    /// Pending, claimed or cancelled.
    public var status: GrantStatus {
        if claimedAt != nil { return .claimed }
        return cancelledAt == nil ? .pending : .cancelled
    }

    /// What cancelling the grant does: the grant cancelled by `actor` at `at`, or `nil` when it is not pending
    /// (claimed: the credits are the customer's, and only a new adjustment answers them; or cancelled before).
    public func cancel(by actor: String, at: Date) -> Grant? {
        guard status == .pending else { return nil }
        var cancelled = self
        cancelled.cancelledAt = at
        cancelled.cancelledBy = actor
        return cancelled
    }

    /// What claiming the grant by `recipient` does: `nil` when it was claimed before (claiming again changes
    /// nothing), else the grant claimed at `at` and, with a `policy` (server wallet), the ledger request that
    /// credits it (`grant:<id>`), to apply in the same commit.
    ///
    /// - Throws: ``StoreError/wrongUser(_:)`` when it is someone else's, ``StoreError/cancelled(_:)`` when
    ///   support cancelled it.
    public func claim(by recipient: UUID, crediting policy: DeficitPolicy?, at: Date) throws -> GrantClaim? {
        guard self.recipient == recipient else { throw StoreError.wrongUser("grant \(id)") }
        guard claimedAt == nil else { return nil }
        guard cancelledAt == nil else { throw StoreError.cancelled("grant \(id)") }
        var claimed = self
        claimed.claimedAt = at
        let credit = policy.map { policy in
            LedgerRequest(
                owner: recipient, environment: environment,
                event: .grant(id: id.uuidString.lowercased(), credits: credits, reason: reason), policy: policy, at: at,
                currency: currency, expiresAt: expiresInDays.map { at.addingTimeInterval(Double($0) * 86_400) })
        }
        return GrantClaim(grant: claimed, credit: credit)
    }
}

/// A grant claimed: the grant as it is now, and the ledger request that credits it (server wallet).
public struct GrantClaim: Sendable, Hashable {
    /// The grant, claimed.
    public var grant: Grant
    /// The request crediting it, applied in the same commit; `nil` in the device wallet.
    public var credit: LedgerRequest?
}

/// One admin action, recorded with who, when, what, and the state before and after.
public struct AuditEvent: Sendable, Hashable, Codable {
    /// The event's id.
    public var id: UUID
    /// The environment acted in.
    public var environment: AppStoreEnvironment
    /// Who acted (an admin name or a key id).
    public var actor: String
    /// What they did, e.g. `grant.create`.
    public var action: String
    /// What it was done to, e.g. a Support ID.
    public var subject: String
    /// The state before, as text (often JSON).
    public var before: String?
    /// The state after.
    public var after: String?
    /// When.
    public var at: Date

    /// Creates an audit event.
    public init(
        id: UUID = UUID(), environment: AppStoreEnvironment, actor: String, action: String, subject: String,
        before: String? = nil, after: String? = nil, at: Date
    ) {
        self.id = id
        self.environment = environment
        self.actor = actor
        self.action = action
        self.subject = subject
        self.before = before
        self.after = after
        self.at = at
    }
}

/// What Coffer did with an App Store Server Notification.
public enum NotificationOutcome: String, Sendable, Hashable, Codable, CaseIterable {
    /// Its effect (a delivery, a revocation, a reversal, a renewal state) is in the store.
    case applied
    /// It names a transaction no user has presented and no `appAccountToken` names a user: kept, and
    /// applied when a user presents the transaction.
    case unattributed
    /// Nothing to apply (TEST, a type Coffer does not act on); kept for the record.
    case logged
}

/// One App Store Server Notification V2, as received: the de-duplication record (`notificationUUID` is
/// unique per environment) and the support history of notifications.
public struct NotificationRecord: Sendable, Hashable, Codable {
    /// Apple's `notificationUUID`.
    public var uuid: String
    /// The environment it came from.
    public var environment: AppStoreEnvironment
    /// Apple's `notificationType`, e.g. `REFUND`.
    public var type: String
    /// Apple's `subtype`, if any.
    public var subtype: String?
    /// The transaction it is about, if any.
    public var transactionId: String?
    /// The first transaction of the subscription chain, if any.
    public var originalTransactionId: String?
    /// The user it was applied to, if known.
    public var owner: UUID?
    /// Apple's `signedDate`.
    public var signedDate: Date
    /// When Coffer received it.
    public var receivedAt: Date
    /// What Coffer did with it.
    public var outcome: NotificationOutcome
    /// How it arrived: `apple` (posted by Apple) or `recovery` (fetched from Notification History).
    public var source: String
    /// The body to forward to `apple.forward.url` (Apple's, unchanged), when the store writes the record: then the
    /// outbox gets it in the same transaction, if the environment forwards. Not kept with the record.
    public var forwardBody: String?

    /// Creates a record.
    public init(
        uuid: String, environment: AppStoreEnvironment, type: String, subtype: String? = nil,
        transactionId: String? = nil,
        originalTransactionId: String? = nil, owner: UUID? = nil, signedDate: Date, receivedAt: Date,
        outcome: NotificationOutcome, source: String = "apple"
    ) {
        self.uuid = uuid
        self.environment = environment
        self.type = type
        self.subtype = subtype
        self.transactionId = transactionId
        self.originalTransactionId = originalTransactionId
        self.owner = owner
        self.signedDate = signedDate
        self.receivedAt = receivedAt
        self.outcome = outcome
        self.source = source
    }
}

/// The renewal state of one subscription chain, from Apple's signed renewal info: what entitlements need
/// besides the transactions (the grace period) and what support wants to see.
public struct RenewalState: Sendable, Hashable, Codable {
    /// The chain's `originalTransactionId`.
    public var originalTransactionId: String
    /// The environment.
    public var environment: AppStoreEnvironment
    /// The subscriber.
    public var owner: UUID
    /// The product that renews next.
    public var autoRenewProductId: String?
    /// Whether the subscription renews (`autoRenewStatus` = 1).
    public var autoRenews: Bool
    /// Whether Apple is retrying a failed renewal.
    public var inBillingRetry: Bool
    /// When the billing grace period ends, while in one.
    public var gracePeriodExpiresDate: Date?
    /// When Apple signed this state: a state never replaces a newer one.
    public var signedDate: Date

    /// Creates a renewal state.
    public init(
        originalTransactionId: String, environment: AppStoreEnvironment, owner: UUID, autoRenewProductId: String? = nil,
        autoRenews: Bool, inBillingRetry: Bool = false, gracePeriodExpiresDate: Date? = nil, signedDate: Date
    ) {
        self.originalTransactionId = originalTransactionId
        self.environment = environment
        self.owner = owner
        self.autoRenewProductId = autoRenewProductId
        self.autoRenews = autoRenews
        self.inBillingRetry = inBillingRetry
        self.gracePeriodExpiresDate = gracePeriodExpiresDate
        self.signedDate = signedDate
    }
}

/// Which audit events to read: every one of an environment, or those about one subject, by one admin, or of one
/// action (or family of actions).
public struct AuditQuery: Sendable, Hashable {
    /// Exactly this subject: a Support ID, `admin NAME`, `grants`.
    public var subject: String?
    /// This admin: the actor is the name itself (a key id, `cli:USER`) or `NAME from ADDRESS` (the panel).
    public var admin: String?
    /// This action (`grant.create`) or family (`grant`: `grant.create`, `grant.cancel`).
    public var action: String?

    /// A query; `nil` fields do not filter.
    public init(subject: String? = nil, admin: String? = nil, action: String? = nil) {
        self.subject = subject
        self.admin = admin
        self.action = action
    }

    /// Whether `event` is one of those asked for (what every engine's query selects).
    public func matches(_ event: AuditEvent) -> Bool {
        if let subject, event.subject != subject { return false }
        if let admin, event.actor != admin, !event.actor.hasPrefix(admin + " from ") { return false }
        if let action, event.action != action, !event.action.hasPrefix(action + ".") { return false }
        return true
    }
}

/// What the notification recovery service's last run did, kept as a named position of the store so every
/// instance's dashboard shows it.
public struct RecoveryRun: Sendable, Hashable, CursorRecord {
    /// The name it is kept under (``NotificationStore/saveCursor(_:value:environment:)``).
    public static let cursorName = "notification-recovery.last-run"

    /// When the run ended.
    public var at: Date
    /// Notifications read from Apple's Notification History.
    public var read: Int
    /// Of those, the ones not seen before.
    public var new: Int
    /// Transactions delivered from Transaction History that nothing else had brought.
    public var filled: Int
    /// Why the run failed, `nil` when it finished.
    public var error: String?

    /// A run's record.
    public init(at: Date, read: Int, new: Int, filled: Int, error: String? = nil) {
        self.at = at
        self.read = read
        self.new = new
        self.filled = filled
        self.error = error
    }

}

/// A record kept as the text of a store's named position (``NotificationStore/saveCursor(_:value:environment:)``):
/// JSON, keys sorted, dates in milliseconds.
public protocol CursorRecord: Codable {}

extension CursorRecord {
    /// The text kept.
    public var text: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        encoder.dateEncodingStrategy = .millisecondsSince1970
        return (try? encoder.encode(self)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }

    /// The record of a kept text, `nil` when it is not one.
    public init?(text: String) {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .millisecondsSince1970
        guard let record = try? decoder.decode(Self.self, from: Data(text.utf8)) else { return nil }
        self = record
    }
}

/// A customer brought in from the system an app used before Coffer (``source``, e.g. `cloudkit`), known there by
/// ``externalId`` (for CloudKit, the customer's `userRecordName`): the Coffer user made for them, and whether an
/// app has claimed it. An app claims it once: the first claim's key is kept, and only that key claims again (a
/// claim whose answer was lost is asked again with the same key).
public struct ImportedCustomer: Sendable, Hashable, Codable {
    /// The environment the user lives in.
    public var environment: AppStoreEnvironment
    /// The system the customer came from, e.g. `cloudkit`.
    public var source: String
    /// The customer's id in that system.
    public var externalId: String
    /// The Coffer user made for them.
    public var user: UUID
    /// When they were first imported.
    public var importedAt: Date
    /// When an app first claimed them.
    public var claimedAt: Date?
    /// A hash of the key the claiming app chose.
    public var claimKeyHash: String?

    /// Creates a record.
    public init(
        environment: AppStoreEnvironment, source: String, externalId: String, user: UUID, importedAt: Date,
        claimedAt: Date? = nil, claimKeyHash: String? = nil
    ) {
        self.environment = environment
        self.source = source
        self.externalId = externalId
        self.user = user
        self.importedAt = importedAt
        self.claimedAt = claimedAt
        self.claimKeyHash = claimKeyHash
    }

    /// The claim key hash a merge writes: no key hashes to it, so the merged customer's record name claims
    /// nothing again.
    public static let mergedKeyHash = "merged"
}

/// How a backup's other currencies are stored (``BackupRecord/currencies``): a JSON object of `[balance, deficit]`
/// by currency id, the same on every engine.
public enum BackupCurrencies {
    /// The wallets as stored (`{"gems": [balance, deficit]}`), `nil` for none.
    public static func text(_ wallets: [Currency: Wallet]) -> String? {
        guard !wallets.isEmpty else { return nil }
        let pairs = Dictionary(
            uniqueKeysWithValues: wallets.map { ($0.key.rawValue, [$0.value.balance, $0.value.deficit]) })
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return (try? encoder.encode(pairs)).map { String(decoding: $0, as: UTF8.self) }
    }

    /// The wallets from what is stored.
    ///
    /// - Throws: ``StoreError/storage(_:)`` for a value no engine wrote.
    public static func wallets(_ text: String?) throws -> [Currency: Wallet] {
        guard let text else { return [:] }
        guard let pairs = try? JSONDecoder().decode([String: [Int64]].self, from: Data(text.utf8)) else {
            throw StoreError.storage("corrupt currencies in backups")
        }
        var wallets: [Currency: Wallet] = [:]
        for (id, amounts) in pairs {
            guard let currency = Currency(rawValue: id), amounts.count == 2 else {
                throw StoreError.storage("corrupt currencies in backups")
            }
            wallets[currency] = Wallet(balance: amounts[0], deficit: amounts[1])
        }
        return wallets
    }
}

/// How a backup's applied mailbox keys are stored: a JSON array of strings, the same on every engine.
public enum BackupApplied {
    /// The keys as stored.
    public static func text(_ keys: [String]) -> String {
        (try? String(decoding: JSONEncoder().encode(keys), as: UTF8.self)) ?? "[]"
    }

    /// The keys from what is stored.
    ///
    /// - Throws: ``StoreError/storage(_:)`` for a value no engine wrote.
    public static func keys(_ text: String) throws -> [String] {
        guard let keys = try? JSONDecoder().decode([String].self, from: Data(text.utf8)) else {
            throw StoreError.storage("corrupt applied keys in backups")
        }
        return keys
    }
}
