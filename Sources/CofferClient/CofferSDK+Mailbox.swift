import CofferAPI
import CofferCore
import CofferStoreKit
import Foundation

extension CofferSDK {
    /// Picks up support's grants: each is applied once (its key is kept with the identity, so not even a
    /// server that lists it again, or a reinstall, applies it twice), then claimed. A grant support cancelled
    /// before the claim is answered `grant-cancelled`: nothing is credited, and the device wallet takes back
    /// what it had applied, once (also when the app died between applying and claiming it).
    ///
    /// - Returns: The credits added.
    @discardableResult
    public func refreshGrants() async throws -> Int64 {
        try await signedIn { token in
            let user = try await localUser()
            var added: Int64 = 0
            for grant in try await server.pendingGrants(token: token) {
                // The device applies a grant itself: one in a currency this catalog does not list yet waits, unclaimed.
                if configuration.wallet == .device, let id = grant.currency, (try? ledgerCurrency(id)) == nil,
                    id != catalog.defaultCurrency.rawValue
                {
                    continue
                }
                added += try await wallet.applyGrant(grant, for: user, self)
                guard let claimed = try await claimUnlessCancelled(grant.id, token: token) else {
                    added += try await wallet.grantCancelled(grant, self)
                    continue
                }
                added += wallet.creditsClaimed(claimed, of: grant)
                try crashAfter(.grantClaimed)
            }
            added += try await wallet.takeBackCancelledGrants(token: token, self)
            if added != 0 { configuration.log(.info, .grant, "support's grants picked up: \(added) credits") }
            return added
        }
    }

    /// Claims a grant; `nil` when the server answers that support cancelled it.
    func claimUnlessCancelled(_ id: UUID, token: String) async throws(ServerClientError) -> ClaimResponse? {
        do {
            return try await server.claim(grant: id, token: token)
        } catch {
            if case .refused(_, let code, _) = error, code == "grant-cancelled" { return nil }
            throw error
        }
    }

    /// Applies the device wallet's mailbox: refunds, revocations and reversals the server learned from Apple,
    /// and admin edits, each once by its key. A refund of a purchase this install delivered takes back what
    /// it delivered (a deficit for what was spent); one this install never saw (bought before a reinstall)
    /// takes back what the balance allows.
    ///
    /// - Returns: How many were applied now.
    @discardableResult
    public func applyMailbox() async throws -> Int {
        let applied = try await wallet.applyMailbox(self)
        if applied > 0 {
            configuration.log(
                .info, .refund, "the server's mailbox: \(applied) changes applied (refunds, reversals, edits)")
        }
        return applied
    }

    /// The device wallet's mailbox, applied to the local ledger.
    func applyMailboxToLedger() async throws -> Int {
        try await signedIn { try await applyMailboxToLedger(token: $0) }
    }

    func applyMailboxToLedger(token: String) async throws -> Int {
        let user = try await localUser()
        var count = 0
        let ownMerge = IdempotencyKey(.merge, user.supportId.rawValue).rawValue
        let environment = configuration.environment
        for item in try await server.adjustments(token: token, currencies: true) where try !applied(item.key) {
            // Another currency's item is keyed `<currency>:<key>`; one the catalog no longer lists waits.
            var currency: Currency?
            var key = item.key
            if let id = item.currency {
                guard let listed = try? ledgerCurrency(id), item.key.hasPrefix(id + ":") else { continue }
                currency = listed
                key = String(item.key.dropFirst(id.count + 1))
            }
            guard key != ownMerge else {
                // Support merged this install into an Apple account's customer: the balance that moved there is
                // the one this device holds already.
                try rememberMailbox([item.key])
                continue
            }
            var receipt: Receipt?
            if let id = item.transactionId {
                receipt = try await ledger.receipt(transactionId: id, environment: environment, currency: currency)
            }
            let wallet = try await ledger.wallet(owner: user.id, environment: environment, currency: currency)
            // Apple's word on a purchase this install delivered is the default currency's item's: applied there to
            // every currency the purchase gave (its other currencies' items then hold nothing more, and are kept as
            // applied with it, so a backup never says one without the other).
            // (As `Delivery.mirrored` takes it: a refund of a held purchase, a reversal of one taken back here.)
            let word =
                item.kind == "revocation" && receipt != nil || item.kind == "reversal" && receipt?.isRevoked == true
            let events =
                word && currency != nil
                ? []
                : Delivery.mirrored(
                    kind: LedgerEntryKind(rawValue: item.kind), key: key, amount: item.amount,
                    reason: item.reason ?? item.kind, at: item.createdAt, receipt: receipt, balance: wallet.balance,
                    catalog: catalog)
            for event in events {
                var request = LedgerRequest(
                    owner: user.id, environment: environment, event: event, policy: configuration.deficitPolicy,
                    at: now())
                request.currency = currency
                let result = try await applyInEveryCurrency(request)
                if currency == nil { keepWallet(result.wallet) }
            }
            try crashAfter(.adjustmentApplied)
            var others: [String] = []
            if word, currency == nil, let id = item.transactionId {
                others = try await ledger.receiptCurrencies(transactionId: id, environment: environment).map {
                    "\($0):\(key)"
                }
            }
            try rememberMailbox([item.key] + others)
            try crashAfter(.adjustmentRemembered)
            count += 1
        }
        return count
    }

    /// Backs the device wallet's balance up, or takes the server's value, by the backup rule: a fresh install
    /// with the default balance restores a higher backup; an admin edit newer than this device's last backup
    /// is accepted; otherwise the device's value is written (with its version, retried on a conflict).
    /// One sync runs at a time (the periodic backup, a purchase and an event may ask at once); a caller that
    /// finds one running waits for it and then runs its own, so its own change is backed up.
    @discardableResult
    public func syncBackup() async throws -> BackupDecision {
        let decision = try await wallet.syncBackup(self)
        switch decision {
        case .upToDate: configuration.log(.debug, .backup, "backup: the server holds this balance already")
        case .push(let value): configuration.log(.info, .backup, "backup: \(value) written to the server")
        case .restore(let value): configuration.log(.info, .backup, "backup: restored \(value) from the server")
        case .acceptServer(let value):
            configuration.log(.info, .backup, "backup: took the server's \(value) (support's edit or another device)")
        }
        return decision
    }

    /// The device wallet's backup sync.
    func syncDeviceBackup() async throws -> BackupDecision {
        // Each sync in flight is waited for once: a finished one stays recorded until its caller resumes, and
        // waiting on it again would spin on the actor.
        var waited: Task<BackupDecision, any Error>?
        while let running = backupInFlight, running != waited {
            waited = running
            _ = try? await running.value
        }
        let task = Task { try await self.syncBackupOnce() }
        backupInFlight = task
        defer { if backupInFlight == task { backupInFlight = nil } }
        return try await task.value
    }

    func syncBackupOnce() async throws -> BackupDecision {
        try await signedIn { try await syncBackupOnce(token: $0) }
    }

    func syncBackupOnce(token: String) async throws -> BackupDecision {
        let user = try await localUser()
        for _ in 0..<3 {
            let wallet = try await ledger.wallet(owner: user.id, environment: configuration.environment)
            let others = try await backedUpWallets(user)
            let local = wallet.balance
            let remote = try await server.backup(token: token)
            let record = remote.map {
                BackupRecord(
                    value: $0.value, lastUpdated: $0.lastUpdated, version: $0.version,
                    writer: $0.writer == "admin" ? .admin("") : .device(""), deficit: $0.deficit,
                    currencies: listedWallets($0.currencies))
            }
            let lastBackupAt = try state.value("lastBackupAt").flatMap(Double.init).map(
                Date.init(timeIntervalSince1970:))
            // The restore rule is for a fresh install: a device that has backed up or has ledger entries (its
            // starting balance aside) can reach the default balance by spending or a refund, and must not
            // "restore" then. A default no balance can equal (-1) keeps the rule's other two branches for it.
            var fresh = lastBackupAt == nil
            if fresh { fresh = try await holdsOnlyStartingBalance(user) }
            let decision = BackupRule.decide(
                localBalance: local, localDeficit: wallet.deficit, localCurrencies: others,
                defaultBalance: fresh ? configuration.startingBalance : -1,
                lastBackupAt: lastBackupAt,
                lastVersion: try state.value("lastBackupVersion").flatMap(Int64.init), server: record)
            switch decision {
            case .restore(let value), .acceptServer(let value):
                guard let remote, let record else { return decision }
                // The backup's balance and deficit both, in every currency: a reinstall owes what the old install
                // owed.
                let taken = Wallet(balance: value, deficit: remote.deficit)
                // What the backup's balance holds of the mailbox is applied here too, never again (kept first: a
                // process dying after the restore must not apply them on top of it).
                try rememberMailbox(remote.applied ?? [])
                var changes: [Currency?: Wallet] = taken != wallet ? [nil: taken] : [:]
                for currency in Set(others.keys).union(record.currencies.keys)
                where others[currency] != record.currencies[currency] {
                    changes[currency] = record.currencies[currency] ?? .empty
                }
                // With several currencies, a newer backup (support's edit of one, another device's) gives what changed
                // on the server since this device last wrote or took it; what it did not change keeps what this device
                // did since, backed up next.
                if case .acceptServer = decision, catalog.currencies.count > 1, let known = try lastKnownBackup() {
                    if Wallet(balance: record.value, deficit: record.deficit) == known.wallet { changes[nil] = nil }
                    for currency in changes.keys.compactMap({ $0 })
                    where (record.currencies[currency] ?? .empty) == (known.currencies[currency] ?? .empty) {
                        changes[currency] = nil
                    }
                }
                if !changes.isEmpty {
                    let reason = remote.writer == "admin" ? "admin edit" : "restored from backup"
                    let requests = changes.sorted { ($0.key?.rawValue ?? "") < ($1.key?.rawValue ?? "") }.map {
                        var request = LedgerRequest(
                            owner: user.id, environment: configuration.environment,
                            event: .restore(id: "backup:\(remote.version)", wallet: $0.value, reason: reason),
                            at: now())
                        request.currency = $0.key
                        return request
                    }
                    do {
                        // Only over the wallets the rule decided on: a purchase or a hand since then is not undone.
                        var expected: [Currency?: Int64] = [nil: wallet.balance]
                        for currency in changes.keys.compactMap({ $0 }) {
                            expected[currency] = others[currency]?.balance ?? 0
                        }
                        _ = try await ledger.apply(requests, ifBalancesAre: expected)
                    } catch SDKError.balanceMoved {
                        continue  // decide again with the wallet as it is now
                    }
                    if changes[nil] != nil { keepWallet(taken) }
                    publish(.wallet)
                }
                try crashAfter(.backupTaken)
                try rememberBackup(remote)
                return decision
            case .upToDate:
                if let remote { try rememberBackup(remote) }
                return decision
            case .push(let value):
                await beforeBackupWrite?()
                do {
                    let written = try await saveBackup(
                        value: value, deficit: wallet.deficit, version: remote?.version, applied: mailboxApplied(),
                        currencies: others, token: token)
                    try crashAfter(.backupPushed)
                    try rememberBackup(written)
                    return decision
                } catch ServerClientError.refused(412, _, _) {
                    continue  // Another device wrote first: decide again with its record.
                }
            }
        }
        throw SDKError.conflict("the backup kept changing under this device")
    }

    /// Writes the backup with the mailbox keys its value holds and each other currency the catalog lists (an empty one
    /// as 0, which clears it; one the catalog does not list is left as the server holds it; none for a catalog of one
    /// currency, as before). A 400 drops what the server refused, one part at a time: the currencies (a catalog the
    /// server changed since), then `applied` (a server older than it).
    func saveBackup(
        value: Int64, deficit: Int64, version: Int64?, applied: [String], currencies: [Currency: Wallet], token: String
    ) async throws -> BackupBody {
        let listed = catalog.currencies.map(\.id).filter { $0 != catalog.defaultCurrency }
        let sent: [String: BackupCurrency]? =
            listed.isEmpty
            ? nil : BackupCurrency.wire(Dictionary(uniqueKeysWithValues: listed.map { ($0, currencies[$0] ?? .empty) }))
        var attempts: [(applied: [String]?, currencies: [String: BackupCurrency]?)] = [
            (applied.isEmpty ? nil : applied, sent)
        ]
        if sent != nil { attempts.append((attempts[0].applied, nil)) }
        if !applied.isEmpty { attempts.append((nil, nil)) }
        var index = 0
        while true {
            let attempt = attempts[index]
            let result: Result<BackupBody, ServerClientError>
            do {
                result = .success(
                    try await server.saveBackup(
                        value: value, deficit: deficit, device: configuration.deviceName, version: version,
                        applied: attempt.applied, currencies: attempt.currencies, token: token))
            } catch {
                result = .failure(error)
            }
            if case .failure(.refused(400, _, _)) = result, index + 1 < attempts.count {
                index += 1
                continue
            }
            return try result.get()
        }
    }

    /// Keeps which record of the server's backup this device last wrote or took.
    func rememberBackup(_ record: BackupBody) throws {
        try state.set("lastBackupVersion", String(record.version))
        try state.set("lastBackupAt", String(record.lastUpdated.timeIntervalSince1970))
        try state.set("lastBackupWallet", "\(record.value) \(record.deficit)")
        try state.set(Self.lastBackupCurrenciesKey, Self.digest(listedWallets(record.currencies)))
        publish(.backup)
    }

    /// The wallets of the catalog's other currencies a backup holds, those holding something (one the catalog no
    /// longer lists stays on the device as it is, never backed up nor restored).
    func backedUpWallets(_ user: LocalUser) async throws -> [Currency: Wallet] {
        let listed = Set(catalog.currencies.map(\.id))
        return BackupRecord.kept(
            try await ledger.currencyWallets(owner: user.id, environment: configuration.environment)
                .filter { listed.contains($0.key) })
    }

    /// The state's note of the other currencies the last backup held (``digest(_:)``).
    static let lastBackupCurrenciesKey = "lastBackupCurrencies"

    /// The wallets of a backup's other currencies the catalog lists, those that hold something (one it does not list
    /// stays on the server as it is, never restored nor compared).
    func listedWallets(_ currencies: [String: BackupCurrency]?) -> [Currency: Wallet] {
        let listed = Set(catalog.currencies.map(\.id))
        var wallets: [Currency: Wallet] = [:]
        for (id, amounts) in currencies ?? [:] {
            guard let currency = Currency(rawValue: id), listed.contains(currency) else { continue }
            wallets[currency] = Wallet(balance: amounts.value, deficit: amounts.deficit ?? 0)
        }
        return BackupRecord.kept(wallets)
    }

    /// The backup this device last wrote or took, as ``rememberBackup(_:)`` kept it: the default currency's wallet and
    /// the others'; `nil` before the first.
    func lastKnownBackup() throws -> (wallet: Wallet, currencies: [Currency: Wallet])? {
        // Cleared with the customer (a join, a new registration): a wallet kept from before is another customer's.
        guard try state.value("lastBackupAt") != nil,
            let kept = try state.value("lastBackupWallet")?.split(separator: " ").compactMap({ Int64($0) }),
            kept.count == 2
        else { return nil }
        var currencies: [Currency: Wallet] = [:]
        for line in (try state.value(Self.lastBackupCurrenciesKey) ?? "").split(separator: "\n") {
            let parts = line.split(separator: " ")
            guard parts.count == 3, let currency = Currency(rawValue: String(parts[0])),
                let balance = Int64(parts[1]), let deficit = Int64(parts[2])
            else { continue }
            currencies[currency] = Wallet(balance: balance, deficit: deficit)
        }
        return (Wallet(balance: kept[0], deficit: kept[1]), currencies)
    }

    /// Other currencies' wallets as one comparable line (`gems 5 0`, sorted), empty for none.
    static func digest(_ wallets: [Currency: Wallet]) -> String {
        BackupRecord.kept(wallets).sorted { $0.key.rawValue < $1.key.rawValue }
            .map { "\($0.key) \($0.value.balance) \($0.value.deficit)" }.joined(separator: "\n")
    }

    /// Whether the backup this device last wrote or took holds its balance, without asking the server (a screen
    /// showing it after every hand): ``BackupStatus/none`` until a backup is known. ``backupStatus()`` asks.
    public func knownBackupStatus() async throws -> BackupStatus {
        guard configuration.wallet == .device else { return .notNeeded }
        guard let at = try state.value("lastBackupAt").flatMap(Double.init), let kept = try lastKnownBackup() else {
            return .none
        }
        let local = try await localWallet()
        let others = try await backedUpWallets(localUser())
        return kept.wallet == local && others == kept.currencies
            ? .matches(since: Date(timeIntervalSince1970: at))
            : .differs(device: local.balance, server: kept.wallet.balance)
    }

    /// What a Settings screen says about the backup.
    public enum BackupStatus: Sendable, Equatable {
        /// The server holds the device's balance, written at this time.
        case matches(since: Date)
        /// The server holds another value: a backup not yet made, or a change from another device or support
        /// not yet taken (the next sync settles it).
        case differs(device: Int64, server: Int64)
        /// Nothing is backed up yet.
        case none
        /// The server wallet keeps the balance on the server: there is nothing to back up.
        case notNeeded
    }

    /// Whether the server's backup holds the device's balance, for a Settings screen; throws
    /// ``ServerClientError/transport(_:)`` when the server is out of reach.
    public func backupStatus() async throws -> BackupStatus { try await wallet.backupStatus(self) }

    func applied(_ key: String) throws -> Bool { identity?.appliedKeys.contains(key) ?? false }

    /// The state's list of the mailbox keys this device's balance holds (applied here, or taken with a backup).
    static let mailboxAppliedKey = "mailboxApplied"

    /// The mailbox keys this device's balance holds, the newest ``BackupRecord/maximumApplied``: sent with each
    /// backup, so a device that restores it never applies them again.
    func mailboxApplied() throws -> [String] {
        let kept = try state.value(Self.mailboxAppliedKey)?.split(separator: "\n").map(String.init) ?? []
        return Array(kept.suffix(BackupRecord.maximumApplied))
    }

    /// Keeps mailbox keys as applied: with the identity (never applied again by this install or a reinstall) and in
    /// the list the backups carry.
    func rememberMailbox(_ keys: [String]) throws {
        guard !keys.isEmpty else { return }
        for key in keys { try remember(key) }
        var kept = try state.value(Self.mailboxAppliedKey)?.split(separator: "\n").map(String.init) ?? []
        for key in keys where !kept.contains(key) { kept.append(key) }
        try state.set(Self.mailboxAppliedKey, kept.suffix(BackupRecord.maximumApplied).joined(separator: "\n"))
    }

    func remember(_ key: String) throws {
        guard var identity, !identity.appliedKeys.contains(key) else { return }
        identity.appliedKeys.insert(key)
        try credentialStore.save(identity)
        self.identity = identity
    }
}
