// swift-format-ignore-file: AllPublicDeclarationsHaveDocumentation

// The public methods here are the store protocols' requirements, documented there (`CofferStore/Stores`).
import CofferCore
import Foundation

/// A ``CofferStore`` held in memory: for tests, the simulator and trying Coffer out. Nothing survives
/// the process.
public actor InMemoryStore: CofferStore {
    struct EntryKey: Hashable {
        var environment: AppStoreEnvironment
        var owner: UUID
        var key: IdempotencyKey
        var currency: Currency? = nil
    }

    /// A user's wallet, or a transaction's receipt, in another currency's ledger than the default.
    struct CurrencyKey<Of: Hashable>: Hashable {
        var of: Of
        var currency: Currency
    }

    struct TransactionKey: Hashable {
        var environment: AppStoreEnvironment
        var transactionId: String
    }

    struct State: LedgerWriteContext {
        var users: [UUID: User] = [:]
        var wallets: [UUID: Wallet] = [:]
        var entries: [LedgerEntry] = []
        var entryIndex: [EntryKey: Int] = [:]
        var receipts: [TransactionKey: Receipt] = [:]
        var receiptOrder: [TransactionKey] = []
        /// The ledgers of the currencies other than the default: wallets and receipts (their entries are in
        /// `entries`, each saying its currency).
        var currencyWallets: [CurrencyKey<UUID>: Wallet] = [:]
        var currencyReceipts: [CurrencyKey<TransactionKey>: Receipt] = [:]
        /// The webhooks' outbox, written with each change as the other engines' triggers write theirs.
        var outbox = WebhookOutbox()

        func wallet(owner: UUID, environment: AppStoreEnvironment, currency: Currency? = nil) -> Wallet? {
            // A user support merged into another is gone for the ledger.
            guard users[owner]?.environment == environment && users[owner]?.mergedInto == nil else { return nil }
            guard let currency else { return wallets[owner] ?? .empty }
            return currencyWallets[CurrencyKey(of: owner, currency: currency)] ?? .empty
        }
        func receipt(transactionId: String, environment: AppStoreEnvironment, currency: Currency? = nil) -> Receipt? {
            let key = TransactionKey(environment: environment, transactionId: transactionId)
            guard let currency else { return receipts[key] }
            return currencyReceipts[CurrencyKey(of: key, currency: currency)]
        }
        func entry(owner: UUID, environment: AppStoreEnvironment, key: IdempotencyKey, currency: Currency?)
            -> LedgerEntry?
        {
            entryIndex[EntryKey(environment: environment, owner: owner, key: key, currency: currency)].map {
                entries[$0]
            }
        }
        mutating func save(
            _ decision: LedgerDecision, owner: UUID, environment: AppStoreEnvironment, currency: Currency? = nil
        ) {
            if let currency {
                currencyWallets[CurrencyKey(of: owner, currency: currency)] = decision.wallet
                if let receipt = decision.receipt {
                    let key = TransactionKey(environment: environment, transactionId: receipt.transaction.transactionId)
                    currencyReceipts[CurrencyKey(of: key, currency: currency)] = receipt
                }
            } else {
                wallets[owner] = decision.wallet
                if let receipt = decision.receipt {
                    let key = TransactionKey(environment: environment, transactionId: receipt.transaction.transactionId)
                    if receipts.updateValue(receipt, forKey: key) == nil { receiptOrder.append(key) }
                }
            }
            if decision.appendsEntry, let entry = decision.entry {
                entryIndex[EntryKey(environment: environment, owner: owner, key: entry.key, currency: currency)] =
                    entries.count
                entries.append(entry)
                let original = entry.transactionId.flatMap {
                    receipt(transactionId: $0, environment: environment, currency: currency)?.transaction
                        .originalTransactionId
                }
                outbox.write(
                    entry, environment: environment, supportId: users[owner]?.supportId.rawValue ?? "",
                    original: original)
            }
        }
    }

    var state = State()
    var backups: [UUID: (AppStoreEnvironment, BackupRecord)] = [:]
    var grantList: [Grant] = []
    var audit: [AuditEvent] = []
    var notificationLog: [NotificationRecord] = []
    var renewals: [TransactionKey: RenewalState] = [:]
    var cursors: [String: String] = [:]
    var consents: [UUID: ConsumptionConsent] = [:]
    var consumptionAnswerLog: [ConsumptionAnswerRecord] = []
    var entitlementGrantList: [EntitlementGrant] = []
    var discrepancyList: [DiscrepancyRecord] = []
    var backupLog: [(owner: UUID, environment: AppStoreEnvironment, item: BackupHistoryItem)] = []
    var adminList: [Admin] = []
    var sessions: [String: AdminSession] = [:]
    var keys: [AdminKey] = []
    var signatures: [String: Date] = [:]
    /// Tokens added for more devices, and revoked tokens, by hash.
    var deviceTokens: [String: (owner: UUID, revokedAt: Date?, origin: TokenOrigin)] = [:]
    var pushTokenRecords: [String: PushToken] = [:]
    /// Credits that expire, by wallet (``CreditLot``).
    var lotList: [CreditLotWrites.Wallet: [CreditLot]] = [:]
    var milestones: Set<String> = []
    var verifyReports: [UUID: VerifyReport] = [:]

    var failureLog: [String: [Date]] = [:]
    var tokenCreated: [String: Date] = [:]
    var mergeCodes: [UUID: MergeCode] = [:]

    /// Creates an empty store.
    public init() {}

    public func user(id: UUID) -> User? { state.users[id] }

    public func user(supportId: SupportID, environment: AppStoreEnvironment) -> User? {
        state.users.values.first { $0.supportId == supportId && $0.environment == environment }
    }

    public func user(tokenHash: String) -> User? {
        if let token = deviceTokens[tokenHash] {
            return token.revokedAt == nil && isOwnCustomer(token.owner) ? state.users[token.owner] : nil
        }
        return state.users.values.first { $0.tokenHash == tokenHash && $0.isOwnCustomer }
    }

    /// Whether the user exists and is live (``User/isLive``).
    func isLive(_ id: UUID) -> Bool { state.users[id]?.isLive ?? false }

    /// Whether the user exists and a token or a code may name it (``User/isOwnCustomer``).
    func isOwnCustomer(_ id: UUID) -> Bool { state.users[id]?.isOwnCustomer ?? false }

    public func user(appleAccount: AppleAccount, environment: AppStoreEnvironment) -> User? {
        state.users.values.first { $0.appleAccount == appleAccount && $0.environment == environment }
    }

    public func addToken(tokenHash: String, owner: UUID, origin: TokenOrigin, at date: Date) throws {
        guard isOwnCustomer(owner) else { throw StoreError.notFound("user \(owner)") }
        guard deviceTokens[tokenHash] == nil, !state.users.values.contains(where: { $0.tokenHash == tokenHash })
        else { throw StoreError.alreadyExists("token") }
        deviceTokens[tokenHash] = (owner, nil, origin)
        tokenCreated[tokenHash] = date
    }

    var imports: [String: ImportedCustomer] = [:]

    private static func importKey(_ source: String, _ externalId: String, _ environment: AppStoreEnvironment) -> String
    {
        "\(environment.rawValue)/\(source)/\(externalId)"
    }

    public func linkAppleAccount(_ account: AppleAccount, to id: UUID) throws -> Bool {
        guard var user = state.users[id], user.appleAccount == nil, user.isOwnCustomer
        else { return false }
        if state.users.values.contains(where: { $0.appleAccount == account && $0.environment == user.environment }) {
            throw StoreError.alreadyExists("user of Apple account \(account.appTransactionId)")
        }
        user.appleAccount = account
        state.users[id] = user
        return true
    }

    public func recordImport(_ customer: ImportedCustomer) -> ImportedCustomer {
        let key = Self.importKey(customer.source, customer.externalId, customer.environment)
        if let found = imports[key] { return found }
        imports[key] = customer
        return customer
    }

    public func importedCustomer(source: String, externalId: String, environment: AppStoreEnvironment)
        -> ImportedCustomer?
    {
        imports[Self.importKey(source, externalId, environment)]
    }

    public func claimImport(
        source: String, externalId: String, environment: AppStoreEnvironment, keyHash: String, at date: Date
    ) -> ImportedCustomer? {
        let key = Self.importKey(source, externalId, environment)
        guard var found = imports[key], found.claimKeyHash == nil || found.claimKeyHash == keyHash else { return nil }
        if found.claimKeyHash == nil {
            found.claimKeyHash = keyHash
            found.claimedAt = date
            imports[key] = found
        }
        return found
    }

    public func recordMilestone(owner: UUID, name: String, at date: Date) throws -> Bool {
        guard isLive(owner) else { throw StoreError.notFound("user \(owner)") }
        return milestones.insert("\(owner)/\(name)").inserted
    }

    public func savePushToken(_ token: PushToken) throws {
        guard isLive(token.owner) else { throw StoreError.notFound("user \(token.owner)") }
        pushTokenRecords[token.token] = token
        for old in pushTokens(owner: token.owner, environment: token.environment).dropFirst(PushToken.keptPerUser) {
            pushTokenRecords[old.token] = nil
        }
    }

    public func pushTokens(owner: UUID, environment: AppStoreEnvironment) -> [PushToken] {
        pushTokenRecords.values.filter { $0.owner == owner && $0.environment == environment }
            .sorted { ($0.updatedAt, $0.token) > ($1.updatedAt, $1.token) }
    }

    @discardableResult
    public func deletePushToken(_ token: String, owner: UUID) -> Bool {
        guard pushTokenRecords[token]?.owner == owner else { return false }
        pushTokenRecords[token] = nil
        return true
    }

    public func revokeToken(tokenHash: String, at date: Date) -> Bool {
        if let token = deviceTokens[tokenHash] {
            guard token.revokedAt == nil else { return false }
            deviceTokens[tokenHash] = (token.owner, date, token.origin)
            return true
        }
        guard let user = state.users.values.first(where: { $0.tokenHash == tokenHash }) else { return false }
        deviceTokens[tokenHash] = (user.id, date, .device)
        return true
    }

    public func user(appAccountToken: UUID, environment: AppStoreEnvironment) -> User? {
        let named = state.users.values.first { $0.appAccountToken == appAccountToken && $0.environment == environment }
        return named?.mergedInto.flatMap { state.users[$0] } ?? named
    }

    public func users(ids: Set<UUID>) -> [User] { ids.compactMap { state.users[$0] } }

    public func users(mergedInto user: UUID) -> [User] {
        state.users.values.filter { $0.mergedInto == user }.sorted {
            ($0.createdAt, $0.supportId) < ($1.createdAt, $1.supportId)
        }
    }

    public func mergeUser(_ merge: UserMerge, audit events: @Sendable (UserMergeResult) throws -> [AuditEvent])
        throws -> UserMergeResult
    {
        let movedReceipts = state.receipts.filter {
            $0.value.owner == merge.from && $0.key.environment == merge.environment
        }
        // The plan, its result and its audit entries first: nothing changes when they cannot be made.
        var found = UserMergeState(
            from: state.users[merge.from], into: state.users[merge.into],
            fromWallet: state.wallets[merge.from] ?? .empty, intoWallet: state.wallets[merge.into] ?? .empty,
            backup: backups[merge.from]?.1.value, tokens: tokenCounts(owner: merge.from),
            receipts: movedReceipts.count, grants: grantList.count { $0.recipient == merge.from })
        found.currencyWallets = (
            currencyWallets(owner: merge.from, environment: merge.environment),
            currencyWallets(owner: merge.into, environment: merge.environment)
        )
        found.backupCurrencies = backups[merge.from]?.1.currencies ?? [:]
        let plan = try merge.plan(found, audit: events)
        guard let from = state.users[merge.from], let into = state.users[merge.into] else {
            throw StoreError.notFound("user")
        }
        state.save(plan.from, owner: from.id, environment: merge.environment)
        state.save(plan.into, owner: into.id, environment: merge.environment)
        for (currency, fromDecision, intoDecision) in plan.otherCurrencies {
            state.save(fromDecision, owner: from.id, environment: merge.environment, currency: currency)
            state.save(intoDecision, owner: into.id, environment: merge.environment, currency: currency)
        }
        for key in movedReceipts.keys { state.receipts[key]?.owner = into.id }
        moveLots(from: from.id, into: into.id, environment: merge.environment)
        for (key, receipt) in state.currencyReceipts
        where receipt.owner == from.id && key.of.environment == merge.environment {
            state.currencyReceipts[key]?.owner = into.id
        }
        for index in grantList.indices where grantList[index].recipient == from.id {
            grantList[index].recipient = into.id
        }
        dropDiscrepancies(of: [from.id])
        for index in entitlementGrantList.indices where entitlementGrantList[index].recipient == from.id {
            entitlementGrantList[index].recipient = into.id
        }
        for (key, renewal) in renewals where renewal.owner == from.id { renewals[key]?.owner = into.id }
        // An import's first token was never an install's: it stays where it is.
        if deviceTokens[from.tokenHash] == nil, !imports.values.contains(where: { $0.user == from.id }) {
            deviceTokens[from.tokenHash] = merge.movesTokens ? (into.id, nil, .device) : (from.id, merge.at, .device)
        }
        for (hash, token) in deviceTokens where token.owner == from.id {
            // A claim's token ends with the merge; an install that registered itself signs in as the account when
            // the account's owner said so, and ends otherwise.
            deviceTokens[hash] =
                token.origin == .device && merge.movesTokens
                ? (into.id, token.revokedAt, .device) : (from.id, token.revokedAt ?? merge.at, token.origin)
        }
        for (key, customer) in imports where customer.user == from.id {
            imports[key]?.claimedAt = customer.claimedAt ?? merge.at
            imports[key]?.claimKeyHash = ImportedCustomer.mergedKeyHash
        }
        state.users[from.id]?.mergedInto = into.id
        appendAudit(plan.audit)
        return plan.result
    }

    public func deleteUser(
        _ deletion: UserDeletion, audit events: @Sendable (UserDeletionResult) throws -> [AuditEvent]
    ) throws -> UserDeletionResult {
        let user = state.users[deletion.user]
        let merged = state.users.values.filter { $0.mergedInto == deletion.user }.map(\.id)
        let everyone = Set([deletion.user] + merged)
        // The plan, its result and its audit entries first: nothing changes when they cannot be made.
        var found = UserDeletionState(
            user: user, wallet: user.flatMap { state.wallet(owner: $0.id, environment: $0.environment) },
            merged: merged,
            pendingGrants: grantList.count { everyone.contains($0.recipient) && $0.status == .pending })
        found.currencyWallets = currencyWallets(owner: deletion.user, environment: deletion.environment)
        let plan = try deletion.plan(found, audit: events)
        let ids = Set(plan.owners)
        deviceTokens = deviceTokens.filter { !ids.contains($0.value.owner) }
        pushTokenRecords = pushTokenRecords.filter { !ids.contains($0.value.owner) }
        backupLog.removeAll { ids.contains($0.owner) }
        for id in ids {
            backups[id] = nil
            verifyReports[id] = nil
            mergeCodes[id] = nil
            consents[id] = nil
            consumptionAnswerLog.removeAll { $0.owner == id }
            state.users[id]?.tokenHash = "deleted:" + id.uuidString
            state.users[id]?.appAccountToken = UUID()
            state.users[id]?.appleAccount = nil
            state.users[id]?.deletedAt = deletion.at
        }
        for index in grantList.indices where ids.contains(grantList[index].recipient) {
            if grantList[index].status == .pending {
                grantList[index].cancelledAt = deletion.at
                grantList[index].cancelledBy = deletion.actor
            }
            grantList[index].reason = UserDeletion.removedReason
        }
        dropDiscrepancies(of: ids)
        for index in entitlementGrantList.indices where ids.contains(entitlementGrantList[index].recipient) {
            if entitlementGrantList[index].cancelledAt == nil, entitlementGrantList[index].endsAt > deletion.at {
                entitlementGrantList[index].cancelledAt = deletion.at
                entitlementGrantList[index].cancelledBy = deletion.actor
            }
            entitlementGrantList[index].reason = UserDeletion.removedReason
        }
        for index in state.entries.indices where ids.contains(state.entries[index].owner) {
            // Support writes the reasons of grants and adjustments; the others are Coffer's own words.
            if state.entries[index].reason != nil, [.grant, .adjustment].contains(state.entries[index].key.kind) {
                state.entries[index].reason = UserDeletion.removedReason
            }
        }
        let supportIds = Set(ids.compactMap { state.users[$0]?.supportId.rawValue })
        for index in audit.indices
        where audit[index].environment == deletion.environment && supportIds.contains(audit[index].subject) {
            audit[index].before = UserDeletion.anonymised(audit[index].before)
            audit[index].after = UserDeletion.anonymised(audit[index].after)
        }
        state.outbox.scrub(environment: deletion.environment, supportIds: supportIds)
        // What delivered no credits is Apple's to give again; what delivered credits in any currency stays theirs.
        let credited = Set(
            (state.receipts.map { ($0.key, $0.value) } + state.currencyReceipts.map { ($0.key.of, $0.value) })
                .filter { ($0.1.deliveredCredits ?? 0) > 0 }.map(\.0))
        let deliveredNothing = { (key: TransactionKey, receipt: Receipt) in
            ids.contains(receipt.owner) && receipt.deliveredCredits == 0 && receipt.revokedAt == nil
                && !credited.contains(key)
        }
        for (key, receipt) in state.receipts where deliveredNothing(key, receipt) {
            state.receipts[key] = nil
            state.receiptOrder.removeAll { $0 == key }
        }
        for (key, receipt) in state.currencyReceipts where deliveredNothing(key.of, receipt) {
            state.currencyReceipts[key] = nil
        }
        if let closing = plan.closing {
            state.save(closing, owner: deletion.user, environment: deletion.environment)
        }
        for (currency, closing) in plan.closingCurrencies {
            state.save(closing, owner: deletion.user, environment: deletion.environment, currency: currency)
        }
        // The closing entries take every wallet to zero: nothing is left to expire.
        lotList = lotList.filter { !ids.contains($0.key.owner) }
        appendAudit(plan.audit)
        return plan.result
    }

    public func saveVerifyReport(_ report: VerifyReport) throws {
        guard isLive(report.owner), state.users[report.owner]?.environment == report.environment else {
            throw StoreError.notFound("user \(report.owner)")
        }
        verifyReports[report.owner] = report
    }

    public func verifyReport(owner: UUID, environment: AppStoreEnvironment) -> VerifyReport? {
        verifyReports[owner].flatMap { $0.environment == environment ? $0 : nil }
    }

    public func users(environment: AppStoreEnvironment, supportIdPrefix: String?, limit: Int, offset: Int) -> [User] {
        let prefix = supportIdPrefix?.lowercased() ?? ""
        let matching = state.users.values
            .filter { $0.environment == environment && $0.supportId.rawValue.hasPrefix(prefix) }
            .sorted { ($0.createdAt, $0.supportId) > ($1.createdAt, $1.supportId) }
        return Array(matching.dropFirst(max(0, offset)).prefix(max(0, limit)))
    }

    public func userCount(environment: AppStoreEnvironment) -> Int {
        state.users.values.filter { $0.environment == environment }.count
    }

    public func backup(owner: UUID, environment: AppStoreEnvironment) -> BackupRecord? {
        guard let (env, record) = backups[owner], env == environment else { return nil }
        return record
    }

    public func writeBackup(
        owner: UUID, environment: AppStoreEnvironment, _ decide: @escaping @Sendable (BackupRecord?) -> BackupRecord?,
        audit events: @escaping @Sendable (BackupRecord?, BackupRecord) throws -> [AuditEvent]
    ) throws -> (current: BackupRecord?, written: BackupRecord?) {
        guard isLive(owner), state.users[owner]?.environment == environment else {
            throw StoreError.notFound("user \(owner)")
        }
        let current = backup(owner: owner, environment: environment)
        guard let record = decide(current) else { return (current, nil) }
        // The audit entries first: nothing changes when they cannot be made.
        let entries = try events(current, record)
        appendAudit(entries)
        backups[owner] = (environment, record)
        backupLog.append((owner, environment, BackupHistoryItem(record: record, previousValue: current?.value)))
        let mine = backupLog.indices.filter { backupLog[$0].owner == owner && backupLog[$0].environment == environment }
        if mine.count > BackupHistoryItem.kept {
            let dropped = Set(mine.prefix(mine.count - BackupHistoryItem.kept))
            backupLog = backupLog.enumerated().filter { !dropped.contains($0.offset) }.map(\.element)
        }
        return (current, record)
    }

    public func setBalance(
        _ edit: BalanceEdit, audit events: @Sendable (BalanceEditResult) throws -> [AuditEvent]
    ) throws -> BalanceEditResult {
        guard isOwnCustomer(edit.owner),
            let wallet = state.wallet(owner: edit.owner, environment: edit.environment, currency: edit.currency)
        else { throw StoreError.notFound("user \(edit.owner)") }
        var result = BalanceEditResult(before: wallet, after: wallet, entry: nil)
        if let request = try edit.request(from: wallet) {
            // Worked out on a copy: nothing changes when the ledger refuses or the entries cannot be made.
            var ledger = state
            let applied = try LedgerWriter.apply(request, in: &ledger).get()
            result.after = applied.wallet
            result.entry = applied.entry
            let entries = try events(result)
            state = ledger
            updateLots([request], [.success(applied)])
            appendAudit(entries)
        } else {
            appendAudit(try events(result))
        }
        return result
    }

    public func createGrant(_ grant: Grant, audit events: [AuditEvent]) throws {
        guard isLive(grant.recipient), state.users[grant.recipient]?.environment == grant.environment else {
            throw StoreError.notFound("user \(grant.recipient)")
        }
        guard !grantList.contains(where: { $0.id == grant.id }) else {
            throw StoreError.alreadyExists("grant \(grant.id)")
        }
        grantList.append(grant)
        appendAudit(events)
    }

    public func grant(id: UUID, environment: AppStoreEnvironment) -> Grant? {
        grantList.first { $0.id == id && $0.environment == environment }
    }

    public func grants(environment: AppStoreEnvironment, recipient: UUID?, status: GrantStatus?, limit: Int) -> [Grant]
    {
        let matching = grantList.filter { grant in
            grant.environment == environment && (recipient == nil || grant.recipient == recipient)
                && (status == nil || grant.status == status)
        }
        return Array(
            matching.sorted { ($0.createdAt, $0.id.uuidString) > ($1.createdAt, $1.id.uuidString) }.prefix(
                max(0, limit)))
    }

    public func claimGrant(
        id: UUID, environment: AppStoreEnvironment, _ claim: @escaping @Sendable (Grant) throws -> GrantClaim?
    )
        throws -> Grant
    {
        guard let index = grantList.firstIndex(where: { $0.id == id && $0.environment == environment }) else {
            throw StoreError.notFound("grant \(id)")
        }
        guard let claimed = try claim(grantList[index]) else { return grantList[index] }
        if let credit = claimed.credit {
            var draft = state
            let applied = try LedgerWriter.apply(credit, in: &draft).get()
            state = draft
            updateLots([credit], [.success(applied)])
        }
        grantList[index] = claimed.grant
        return claimed.grant
    }

    public func cancelGrant(
        id: UUID, environment: AppStoreEnvironment, _ cancel: @escaping @Sendable (Grant) -> Grant?,
        audit: @escaping @Sendable (Grant) -> [AuditEvent]
    ) throws -> Grant {
        guard let index = grantList.firstIndex(where: { $0.id == id && $0.environment == environment }) else {
            throw StoreError.notFound("grant \(id)")
        }
        guard let cancelled = cancel(grantList[index]) else { return grantList[index] }
        grantList[index] = cancelled
        appendAudit(audit(cancelled))
        return cancelled
    }

    public func recordNotification(_ record: NotificationRecord) -> Bool {
        guard notification(uuid: record.uuid, environment: record.environment) == nil else { return false }
        notificationLog.append(record)
        let supportId = record.owner.flatMap { state.users[$0]?.supportId.rawValue } ?? ""
        state.outbox.write(record, supportId: supportId)
        state.outbox.forward(record, supportId: supportId)
        return true
    }

    public func notification(uuid: String, environment: AppStoreEnvironment) -> NotificationRecord? {
        notificationLog.first { $0.uuid == uuid && $0.environment == environment }
    }

    public func notificationCounts(environment: AppStoreEnvironment, since: Date) -> [String: Int] {
        notificationLog.filter { $0.environment == environment && $0.receivedAt >= since }
            .reduce(into: [:]) { counts, record in counts[record.type, default: 0] += 1 }
    }

    public func notifications(
        environment: AppStoreEnvironment, transactionId: String?, outcome: NotificationOutcome?, limit: Int
    ) -> [NotificationRecord] {
        let matching = notificationLog.enumerated().filter { _, record in
            record.environment == environment
                && (transactionId == nil || record.transactionId == transactionId
                    || record.originalTransactionId == transactionId)
                && (outcome == nil || record.outcome == outcome)
        }
        return Array(
            matching.sorted { ($0.element.receivedAt, $0.offset) > ($1.element.receivedAt, $1.offset) }
                .map(\.element).prefix(max(0, limit)))
    }

    public func saveRenewalState(_ renewal: RenewalState) throws -> Bool {
        guard state.users[renewal.owner]?.environment == renewal.environment else {
            throw StoreError.notFound("user \(renewal.owner)")
        }
        let key = TransactionKey(environment: renewal.environment, transactionId: renewal.originalTransactionId)
        if let current = renewals[key], current.signedDate > renewal.signedDate { return false }
        renewals[key] = renewal
        return true
    }

    public func renewalStates(owner: UUID, environment: AppStoreEnvironment) -> [RenewalState] {
        renewals.values.filter { $0.owner == owner && $0.environment == environment }
            .sorted { $0.originalTransactionId < $1.originalTransactionId }
    }

    public func cursor(_ name: String, environment: AppStoreEnvironment) -> String? {
        cursors["\(environment.rawValue)/\(name)"]
    }

    public func saveCursor(_ name: String, value: String, environment: AppStoreEnvironment) {
        cursors["\(environment.rawValue)/\(name)"] = value
    }

    /// Appends an audit event.
    /// Appends audit entries written with a change; one whose id is taken gets an id of its own.
    func appendAudit(_ events: [AuditEvent]) {
        for event in events {
            var event = event
            if audit.contains(where: { $0.id == event.id }) { event.id = UUID() }
            audit.append(event)
            state.outbox.write(event)
        }
    }

    public func recordAudit(_ event: AuditEvent) throws {
        guard !audit.contains(where: { $0.id == event.id }) else { throw StoreError.alreadyExists("audit \(event.id)") }
        audit.append(event)
        state.outbox.write(event)
    }

    public func auditEvents(environment: AppStoreEnvironment, query: AuditQuery, limit: Int) -> [AuditEvent] {
        Array(audit.filter { $0.environment == environment && query.matches($0) }.reversed().prefix(max(0, limit)))
    }
}
