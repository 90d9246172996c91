import CofferCore
import CofferStore
import Foundation
import Synchronization

/// A store that forwards to another and counts the commits `apply` makes, each taking at least `commitTime`
/// (as an fsync does), so group commit can be seen; its ``FaultPlan`` makes the database go away for one
/// operation, before it runs or after it committed (the answer lost). Hooks run once, right after a read answered and before
/// its caller sees the answer, so a test can slip another request into the window a read leaves.
final class CountingStore: CofferStore {
    /// A read a hook can follow.
    enum Read: Hashable {
        /// `notifications(environment:transactionId:outcome:limit:)`.
        case notifications
        /// `receipts(originalTransactionId:environment:)`.
        case chainReceipts
    }

    let base: any CofferStore
    let commitTime: Duration
    private let counter = Mutex(0)
    private let hooks = Mutex<[Read: @Sendable () async throws -> Void]>([:])

    init(base: any CofferStore, commitTime: Duration = .zero) {
        self.base = base
        self.commitTime = commitTime
    }

    /// Runs `hook` once, after the next `read` answered and before its caller goes on.
    func after(_ read: Read, _ hook: @escaping @Sendable () async throws -> Void) {
        hooks.withLock { $0[read] = hook }
    }

    private func runHook(_ read: Read) async throws {
        if let hook = hooks.withLock({ $0.removeValue(forKey: read) }) { try await hook() }
    }

    /// How many times each operation was asked, by name.
    private let calls = Mutex<[String: Int]>([:])

    /// How many times the operation `name` was asked.
    func calls(_ name: String) -> Int { calls.withLock { $0[name] ?? 0 } }

    /// Database faults to inject (none unless armed).
    let faults = FaultPlan()

    /// Runs one operation of the base store through the fault plan.
    private func gate<T>(_ name: String, write: Bool, _ work: () async throws -> T) async throws -> T {
        calls.withLock { $0[name, default: 0] += 1 }
        try faults.before(name)
        let value = try await work()
        try faults.after(name, write: write)
        return value
    }

    /// How many times `apply` ran.
    var commits: Int { counter.withLock { $0 } }

    func createUser(_ user: User) async throws {
        try await gate("createUser", write: true) { try await base.createUser(user) }
    }
    func user(id: UUID) async throws -> User? { try await gate("user", write: false) { try await base.user(id: id) } }
    func user(supportId: SupportID, environment: AppStoreEnvironment) async throws -> User? {
        try await gate("user", write: false) { try await base.user(supportId: supportId, environment: environment) }
    }
    func user(tokenHash: String) async throws -> User? {
        try await gate("user", write: false) { try await base.user(tokenHash: tokenHash) }
    }
    func user(appleAccount: AppleAccount, environment: AppStoreEnvironment) async throws -> User? {
        try await gate("user", write: false) {
            try await base.user(appleAccount: appleAccount, environment: environment)
        }
    }
    func ping() async throws {
        try await gate("ping", write: false) { try await base.ping() }
    }
    func addToken(tokenHash: String, owner: UUID, origin: TokenOrigin, at date: Date) async throws {
        try await gate("addToken", write: true) {
            try await base.addToken(tokenHash: tokenHash, owner: owner, origin: origin, at: date)
        }
    }
    func recordFailure(_ key: String, at date: Date, since: Date) async throws -> Int {
        try await gate("recordFailure", write: true) { try await base.recordFailure(key, at: date, since: since) }
    }
    func failures(_ key: String, since: Date) async throws -> Int {
        try await gate("failures", write: false) { try await base.failures(key, since: since) }
    }
    func clearFailures(_ key: String) async throws {
        try await gate("clearFailures", write: true) { try await base.clearFailures(key) }
    }
    func grantedCredits(environment: AppStoreEnvironment, holder: String, since: Date) async throws -> Int64 {
        try await gate("grantedCredits", write: false) {
            try await base.grantedCredits(environment: environment, holder: holder, since: since)
        }
    }
    func saveMergeCode(_ code: MergeCode) async throws {
        try await gate("saveMergeCode", write: true) { try await base.saveMergeCode(code) }
    }
    func useMergeCode(owner: UUID, codeHash: String, at date: Date) async throws -> Bool {
        try await gate("useMergeCode", write: true) {
            try await base.useMergeCode(owner: owner, codeHash: codeHash, at: date)
        }
    }
    func revokeOldTokens(owner: UUID, keeping: Int, at date: Date) async throws -> Int {
        try await gate("revokeOldTokens", write: true) {
            try await base.revokeOldTokens(owner: owner, keeping: keeping, at: date)
        }
    }
    func tokenCounts(owner: UUID) async throws -> TokenCounts {
        try await gate("tokenCounts", write: false) { try await base.tokenCounts(owner: owner) }
    }
    func savePushToken(_ token: PushToken) async throws {
        try await gate("savePushToken", write: true) { try await base.savePushToken(token) }
    }

    func recordMilestone(owner: UUID, name: String, at date: Date) async throws -> Bool {
        try await gate("recordMilestone", write: true) {
            try await base.recordMilestone(owner: owner, name: name, at: date)
        }
    }

    func linkAppleAccount(_ account: AppleAccount, to user: UUID) async throws -> Bool {
        try await gate("linkAppleAccount", write: true) { try await base.linkAppleAccount(account, to: user) }
    }

    func recordImport(_ customer: ImportedCustomer) async throws -> ImportedCustomer {
        try await gate("recordImport", write: true) { try await base.recordImport(customer) }
    }

    func importedCustomer(source: String, externalId: String, environment: AppStoreEnvironment) async throws
        -> ImportedCustomer?
    {
        try await gate("importedCustomer", write: false) {
            try await base.importedCustomer(source: source, externalId: externalId, environment: environment)
        }
    }

    func claimImport(
        source: String, externalId: String, environment: AppStoreEnvironment, keyHash: String, at date: Date
    )
        async throws -> ImportedCustomer?
    {
        try await gate("claimImport", write: true) {
            try await base.claimImport(
                source: source, externalId: externalId, environment: environment, keyHash: keyHash, at: date)
        }
    }

    func pushTokens(owner: UUID, environment: AppStoreEnvironment) async throws -> [PushToken] {
        try await gate("pushTokens", write: false) { try await base.pushTokens(owner: owner, environment: environment) }
    }

    func deletePushToken(_ token: String, owner: UUID) async throws -> Bool {
        try await gate("deletePushToken", write: true) { try await base.deletePushToken(token, owner: owner) }
    }

    func revokeToken(tokenHash: String, at date: Date) async throws -> Bool {
        try await gate("revokeToken", write: true) { try await base.revokeToken(tokenHash: tokenHash, at: date) }
    }
    func mergeUser(_ merge: UserMerge, audit: @escaping @Sendable (UserMergeResult) throws -> [AuditEvent])
        async throws -> UserMergeResult
    {
        try await gate("mergeUser", write: true) { try await base.mergeUser(merge, audit: audit) }
    }
    func users(mergedInto user: UUID) async throws -> [User] {
        try await gate("users", write: false) { try await base.users(mergedInto: user) }
    }
    func users(ids: Set<UUID>) async throws -> [User] {
        try await gate("users", write: false) { try await base.users(ids: ids) }
    }
    func deleteUser(
        _ deletion: UserDeletion, audit: @escaping @Sendable (UserDeletionResult) throws -> [AuditEvent]
    ) async throws -> UserDeletionResult {
        try await gate("deleteUser", write: true) { try await base.deleteUser(deletion, audit: audit) }
    }
    func saveVerifyReport(_ report: VerifyReport) async throws {
        try await gate("saveVerifyReport", write: true) { try await base.saveVerifyReport(report) }
    }
    func verifyReport(owner: UUID, environment: AppStoreEnvironment) async throws -> VerifyReport? {
        try await gate("verifyReport", write: false) {
            try await base.verifyReport(owner: owner, environment: environment)
        }
    }
    func user(appAccountToken: UUID, environment: AppStoreEnvironment) async throws -> User? {
        try await gate("user", write: false) {
            try await base.user(appAccountToken: appAccountToken, environment: environment)
        }
    }
    func users(environment: AppStoreEnvironment, supportIdPrefix: String?, limit: Int, offset: Int) async throws
        -> [User]
    {
        try await gate("users", write: false) {
            try await base.users(
                environment: environment, supportIdPrefix: supportIdPrefix, limit: limit, offset: offset)
        }
    }
    func userCount(environment: AppStoreEnvironment) async throws -> Int {
        try await gate("userCount", write: false) { try await base.userCount(environment: environment) }
    }
    func apply(_ requests: [LedgerRequest]) async throws -> [Result<LedgerResult, LedgerError>] {
        counter.withLock { $0 += 1 }
        if commitTime > .zero { try await Task.sleep(for: commitTime) }
        return try await gate("apply", write: true) { try await base.apply(requests) }
    }
    func wallet(owner: UUID, environment: AppStoreEnvironment) async throws -> Wallet {
        try await gate("wallet", write: false) { try await base.wallet(owner: owner, environment: environment) }
    }
    func entries(owner: UUID, environment: AppStoreEnvironment) async throws -> [LedgerEntry] {
        try await gate("entries", write: false) { try await base.entries(owner: owner, environment: environment) }
    }
    func creditLots(owner: UUID, environment: AppStoreEnvironment) async throws -> [CreditLot] {
        try await gate("wallet", write: false) { try await base.creditLots(owner: owner, environment: environment) }
    }
    func expireCredits(environment: AppStoreEnvironment, owner: UUID?, at now: Date, limit: Int) async throws -> Int {
        try await gate("expireCredits", write: true) {
            try await base.expireCredits(environment: environment, owner: owner, at: now, limit: limit)
        }
    }
    func receiptCurrencies(transactionId: String, environment: AppStoreEnvironment) async throws -> [Currency] {
        try await gate("receipt", write: false) {
            try await base.receiptCurrencies(transactionId: transactionId, environment: environment)
        }
    }
    func currencyWallets(owner: UUID, environment: AppStoreEnvironment) async throws -> [Currency: Wallet] {
        try await gate("wallet", write: false) {
            try await base.currencyWallets(owner: owner, environment: environment)
        }
    }
    func entries(owner: UUID, environment: AppStoreEnvironment, currency: Currency?) async throws -> [LedgerEntry] {
        try await gate("entries", write: false) {
            try await base.entries(owner: owner, environment: environment, currency: currency)
        }
    }
    func receipt(transactionId: String, environment: AppStoreEnvironment, currency: Currency?) async throws
        -> Receipt?
    {
        try await gate("receipt", write: false) {
            try await base.receipt(transactionId: transactionId, environment: environment, currency: currency)
        }
    }
    func receipt(transactionId: String, environment: AppStoreEnvironment) async throws -> Receipt? {
        try await gate("receipt", write: false) {
            try await base.receipt(transactionId: transactionId, environment: environment)
        }
    }
    func receipts(owner: UUID, environment: AppStoreEnvironment) async throws -> [Receipt] {
        try await gate("receipts", write: false) { try await base.receipts(owner: owner, environment: environment) }
    }
    func receipts(originalTransactionId: String, environment: AppStoreEnvironment) async throws -> [Receipt] {
        let receipts = try await gate("receipts", write: false) {
            try await base.receipts(originalTransactionId: originalTransactionId, environment: environment)
        }
        try await runHook(.chainReceipts)
        return receipts
    }
    func backup(owner: UUID, environment: AppStoreEnvironment) async throws -> BackupRecord? {
        try await gate("backup", write: false) { try await base.backup(owner: owner, environment: environment) }
    }
    func writeBackup(
        owner: UUID, environment: AppStoreEnvironment, _ decide: @escaping @Sendable (BackupRecord?) -> BackupRecord?,
        audit: @escaping @Sendable (BackupRecord?, BackupRecord) throws -> [AuditEvent]
    ) async throws -> (current: BackupRecord?, written: BackupRecord?) {
        try await gate("writeBackup", write: true) {
            try await base.writeBackup(owner: owner, environment: environment, decide, audit: audit)
        }
    }
    func setBalance(_ edit: BalanceEdit, audit: @escaping @Sendable (BalanceEditResult) throws -> [AuditEvent])
        async throws -> BalanceEditResult
    {
        try await gate("setBalance", write: true) { try await base.setBalance(edit, audit: audit) }
    }
    func createGrant(_ grant: Grant, audit: [AuditEvent]) async throws {
        try await gate("createGrant", write: true) { try await base.createGrant(grant, audit: audit) }
    }
    func grants(environment: AppStoreEnvironment, recipient: UUID?, status: GrantStatus?, limit: Int) async throws
        -> [Grant]
    {
        try await gate("grants", write: false) {
            try await base.grants(environment: environment, recipient: recipient, status: status, limit: limit)
        }
    }
    func claimGrant(
        id: UUID, environment: AppStoreEnvironment, _ claim: @escaping @Sendable (Grant) throws -> GrantClaim?
    )
        async throws -> Grant
    { try await gate("claimGrant", write: true) { try await base.claimGrant(id: id, environment: environment, claim) } }
    func cancelGrant(
        id: UUID, environment: AppStoreEnvironment, _ cancel: @escaping @Sendable (Grant) -> Grant?,
        audit: @escaping @Sendable (Grant) -> [AuditEvent]
    ) async throws -> Grant {
        try await gate("cancelGrant", write: true) {
            try await base.cancelGrant(id: id, environment: environment, cancel, audit: audit)
        }
    }
    func grant(id: UUID, environment: AppStoreEnvironment) async throws -> Grant? {
        try await gate("grant", write: false) { try await base.grant(id: id, environment: environment) }
    }
    func recordNotification(_ record: NotificationRecord) async throws -> Bool {
        try await gate("recordNotification", write: true) { try await base.recordNotification(record) }
    }
    func notificationCounts(environment: AppStoreEnvironment, since: Date) async throws -> [String: Int] {
        try await gate("notificationCounts", write: false) {
            try await base.notificationCounts(environment: environment, since: since)
        }
    }
    func notification(uuid: String, environment: AppStoreEnvironment) async throws -> NotificationRecord? {
        try await gate("notification", write: false) {
            try await base.notification(uuid: uuid, environment: environment)
        }
    }
    func notifications(
        environment: AppStoreEnvironment, transactionId: String?, outcome: NotificationOutcome?, limit: Int
    )
        async throws -> [NotificationRecord]
    {
        let records = try await gate("notifications", write: false) {
            try await base.notifications(
                environment: environment, transactionId: transactionId, outcome: outcome, limit: limit)
        }
        try await runHook(.notifications)
        return records
    }
    func saveRenewalState(_ state: RenewalState) async throws -> Bool {
        try await gate("saveRenewalState", write: true) { try await base.saveRenewalState(state) }
    }
    func renewalStates(owner: UUID, environment: AppStoreEnvironment) async throws -> [RenewalState] {
        try await gate("renewalStates", write: false) {
            try await base.renewalStates(owner: owner, environment: environment)
        }
    }
    func cursor(_ name: String, environment: AppStoreEnvironment) async throws -> String? {
        try await gate("cursor", write: false) { try await base.cursor(name, environment: environment) }
    }
    func saveCursor(_ name: String, value: String, environment: AppStoreEnvironment) async throws {
        try await gate("saveCursor", write: true) {
            try await base.saveCursor(name, value: value, environment: environment)
        }
    }
    func reconciledCustomers(environment: AppStoreEnvironment, after: UUID?, limit: Int) async throws -> [UUID] {
        try await gate("reconciledCustomers", write: false) {
            try await base.reconciledCustomers(environment: environment, after: after, limit: limit)
        }
    }
    func replaceDiscrepancies(owner: UUID, environment: AppStoreEnvironment, _ records: [DiscrepancyRecord])
        async throws
    {
        try await gate("replaceDiscrepancies", write: true) {
            try await base.replaceDiscrepancies(owner: owner, environment: environment, records)
        }
    }
    func discrepancies(owner: UUID, environment: AppStoreEnvironment) async throws -> [DiscrepancyRecord] {
        try await gate("discrepancies", write: false) {
            try await base.discrepancies(owner: owner, environment: environment)
        }
    }
    func swapCursor(_ name: String, environment: AppStoreEnvironment, expected: String?, value: String)
        async throws -> Bool
    {
        try await gate("swapCursor", write: true) {
            try await base.swapCursor(name, environment: environment, expected: expected, value: value)
        }
    }
    func saveConsumptionConsent(_ consent: ConsumptionConsent) async throws {
        try await gate("saveConsumptionConsent", write: true) { try await base.saveConsumptionConsent(consent) }
    }
    func consumptionConsent(owner: UUID, environment: AppStoreEnvironment) async throws -> ConsumptionConsent? {
        try await gate("consumptionConsent", write: false) {
            try await base.consumptionConsent(owner: owner, environment: environment)
        }
    }
    func recordConsumptionAnswer(_ answer: ConsumptionAnswerRecord) async throws -> Bool {
        try await gate("recordConsumptionAnswer", write: true) { try await base.recordConsumptionAnswer(answer) }
    }
    func consumptionAnswers(owner: UUID, environment: AppStoreEnvironment, limit: Int) async throws
        -> [ConsumptionAnswerRecord]
    {
        try await gate("consumptionAnswers", write: false) {
            try await base.consumptionAnswers(owner: owner, environment: environment, limit: limit)
        }
    }
    func createEntitlementGrant(_ grant: EntitlementGrant, audit: [AuditEvent]) async throws {
        try await gate("createEntitlementGrant", write: true) {
            try await base.createEntitlementGrant(grant, audit: audit)
        }
    }
    func entitlementGrants(environment: AppStoreEnvironment, recipient: UUID) async throws -> [EntitlementGrant] {
        try await gate("entitlementGrants", write: false) {
            try await base.entitlementGrants(environment: environment, recipient: recipient)
        }
    }
    func cancelEntitlementGrant(
        id: UUID, environment: AppStoreEnvironment, by actor: String, at: Date,
        audit: @escaping @Sendable (EntitlementGrant) -> [AuditEvent]
    ) async throws -> EntitlementGrant {
        try await gate("cancelEntitlementGrant", write: true) {
            try await base.cancelEntitlementGrant(id: id, environment: environment, by: actor, at: at, audit: audit)
        }
    }
    func webhookEndpoints(environment: AppStoreEnvironment) async throws -> [WebhookEndpoint] {
        try await gate("webhookEndpoints", write: false) { try await base.webhookEndpoints(environment: environment) }
    }
    func saveWebhookEndpoint(_ endpoint: WebhookEndpoint) async throws {
        try await gate("saveWebhookEndpoint", write: true) { try await base.saveWebhookEndpoint(endpoint) }
    }
    func removeWebhookEndpoint(id: String, environment: AppStoreEnvironment) async throws -> Bool {
        try await gate("removeWebhookEndpoint", write: true) {
            try await base.removeWebhookEndpoint(id: id, environment: environment)
        }
    }
    func routeWebhookEvents(
        environment: AppStoreEnvironment, limit: Int, at: Date,
        _ route: @escaping @Sendable (OutboxRecord) -> WebhookEvent?
    ) async throws -> Int {
        try await gate("routeWebhookEvents", write: true) {
            try await base.routeWebhookEvents(environment: environment, limit: limit, at: at, route)
        }
    }
    func leaseWebhookDeliveries(
        environment: AppStoreEnvironment, holder: String, limit: Int, at: Date, until: Date, endpoints: [String]?
    ) async throws -> [WebhookDelivery] {
        try await gate("leaseWebhookDeliveries", write: true) {
            try await base.leaseWebhookDeliveries(
                environment: environment, holder: holder, limit: limit, at: at, until: until, endpoints: endpoints)
        }
    }
    func finishWebhookAttempts(_ attempts: [WebhookAttempt], environment: AppStoreEnvironment, holder: String)
        async throws -> [Bool]
    {
        try await gate("finishWebhookAttempts", write: true) {
            try await base.finishWebhookAttempts(attempts, environment: environment, holder: holder)
        }
    }
    func webhookDeliveries(environment: AppStoreEnvironment, state: WebhookDeliveryState?, limit: Int) async throws
        -> [WebhookDelivery]
    {
        try await gate("webhookDeliveries", write: false) {
            try await base.webhookDeliveries(environment: environment, state: state, limit: limit)
        }
    }
    func resendWebhookDelivery(endpoint: String, seq: Int64, environment: AppStoreEnvironment, at: Date) async throws {
        try await gate("resendWebhookDelivery", write: true) {
            try await base.resendWebhookDelivery(endpoint: endpoint, seq: seq, environment: environment, at: at)
        }
    }
    func replayWebhookEvents(endpoint: String, environment: AppStoreEnvironment, since: Date, at: Date) async throws
        -> Int
    {
        try await gate("replayWebhookEvents", write: true) {
            try await base.replayWebhookEvents(endpoint: endpoint, environment: environment, since: since, at: at)
        }
    }
    func webhookBacklog(environment: AppStoreEnvironment) async throws -> WebhookBacklog {
        try await gate("webhookBacklog", write: false) { try await base.webhookBacklog(environment: environment) }
    }
    func pruneWebhookEvents(environment: AppStoreEnvironment, before: Date) async throws -> Int {
        try await gate("pruneWebhookEvents", write: true) {
            try await base.pruneWebhookEvents(environment: environment, before: before)
        }
    }
    func recordAudit(_ event: AuditEvent) async throws {
        try await gate("recordAudit", write: true) { try await base.recordAudit(event) }
    }
    func auditEvents(environment: AppStoreEnvironment, query: AuditQuery, limit: Int) async throws -> [AuditEvent] {
        try await gate("auditEvents", write: false) {
            try await base.auditEvents(environment: environment, query: query, limit: limit)
        }
    }
    func backupHistory(owner: UUID, environment: AppStoreEnvironment, limit: Int) async throws -> [BackupHistoryItem] {
        try await gate("backupHistory", write: false) {
            try await base.backupHistory(owner: owner, environment: environment, limit: limit)
        }
    }
    func dashboard(environment: AppStoreEnvironment, days: Int, now: Date) async throws -> DashboardFigures {
        try await gate("dashboard", write: false) {
            try await base.dashboard(environment: environment, days: days, now: now)
        }
    }
    func deleteGrants(environment: AppStoreEnvironment) async throws -> Int {
        try await gate("deleteGrants", write: true) { try await base.deleteGrants(environment: environment) }
    }
    func sandboxMarkedUsers(environment: AppStoreEnvironment, supportIdPrefix: String?, limit: Int, offset: Int)
        async throws -> [User]
    {
        try await gate("sandboxMarkedUsers", write: false) {
            try await base.sandboxMarkedUsers(
                environment: environment, supportIdPrefix: supportIdPrefix, limit: limit, offset: offset)
        }
    }
    func sandboxMarkedGrants(environment: AppStoreEnvironment, status: GrantStatus?, limit: Int) async throws
        -> [Grant]
    {
        try await gate("sandboxMarkedGrants", write: false) {
            try await base.sandboxMarkedGrants(environment: environment, status: status, limit: limit)
        }
    }
    func deleteSandboxMarkedGrants(environment: AppStoreEnvironment) async throws -> Int {
        try await gate("deleteSandboxMarkedGrants", write: true) {
            try await base.deleteSandboxMarkedGrants(environment: environment)
        }
    }
    func createAdmin(_ admin: Admin) async throws {
        try await gate("createAdmin", write: true) { try await base.createAdmin(admin) }
    }
    func admin(name: String) async throws -> Admin? {
        try await gate("admin", write: false) { try await base.admin(name: name) }
    }
    func admins() async throws -> [Admin] { try await gate("admins", write: false) { try await base.admins() } }
    func setAdminPassword(name: String, passwordHash: String, at: Date) async throws -> Bool {
        try await gate("setAdminPassword", write: true) {
            try await base.setAdminPassword(name: name, passwordHash: passwordHash, at: at)
        }
    }
    func updateAdmin(name: String, _ change: @escaping @Sendable (Admin) -> Admin?) async throws -> Admin? {
        try await gate("updateAdmin", write: true) { try await base.updateAdmin(name: name, change) }
    }
    func deleteSessions(adminId: UUID, except kept: String?) async throws -> Int {
        try await gate("deleteSessions", write: true) { try await base.deleteSessions(adminId: adminId, except: kept) }
    }
    func createSession(_ session: AdminSession) async throws {
        try await gate("createSession", write: true) { try await base.createSession(session) }
    }
    func session(tokenHash: String) async throws -> AdminSession? {
        try await gate("session", write: false) { try await base.session(tokenHash: tokenHash) }
    }
    func setSessionEnvironment(tokenHash: String, environment: AppStoreEnvironment) async throws {
        try await gate("setSessionEnvironment", write: true) {
            try await base.setSessionEnvironment(tokenHash: tokenHash, environment: environment)
        }
    }
    func deleteSession(tokenHash: String) async throws {
        try await gate("deleteSession", write: true) { try await base.deleteSession(tokenHash: tokenHash) }
    }
    func deleteSessions(expiredBefore date: Date) async throws -> Int {
        try await gate("deleteSessions", write: true) { try await base.deleteSessions(expiredBefore: date) }
    }
    func createAdminKey(_ key: AdminKey) async throws {
        try await gate("createAdminKey", write: true) { try await base.createAdminKey(key) }
    }
    func adminKey(id: String) async throws -> AdminKey? {
        try await gate("adminKey", write: false) { try await base.adminKey(id: id) }
    }
    func adminKeys() async throws -> [AdminKey] {
        try await gate("adminKeys", write: false) { try await base.adminKeys() }
    }
    func revokeAdminKey(id: String, at: Date) async throws -> Bool {
        try await gate("revokeAdminKey", write: true) { try await base.revokeAdminKey(id: id, at: at) }
    }
    func recordSignature(_ digest: String, at: Date, forgetBefore: Date) async throws -> Bool {
        try await gate("recordSignature", write: true) {
            try await base.recordSignature(digest, at: at, forgetBefore: forgetBefore)
        }
    }
    func receipts(owner: UUID, environment: AppStoreEnvironment, productIds: Set<String>) async throws -> [Receipt] {
        try await gate("receipts", write: false) {
            try await base.receipts(owner: owner, environment: environment, productIds: productIds)
        }
    }
    func entries(owner: UUID, environment: AppStoreEnvironment, kinds: Set<LedgerEntryKind>) async throws
        -> [LedgerEntry]
    {
        try await gate("entries", write: false) {
            try await base.entries(owner: owner, environment: environment, kinds: kinds)
        }
    }
}
