import CofferCore
import CofferStore
import Foundation

/// A store whose every operation fails, as a database that went away does (after `delay`, as one that
/// hangs before its connection times out).
struct FailingStore: CofferStore {
    static let failure = StoreError.storage("the database does not answer")
    var delay: Duration = .zero
    /// What every operation throws.
    var error = Self.failure

    func ping() async throws {
        try await Task.sleep(for: delay)
        throw error
    }
    func createUser(_ user: User) async throws { throw error }
    func user(id: UUID) async throws -> User? { throw error }
    func user(supportId: SupportID, environment: AppStoreEnvironment) async throws -> User? { throw error }
    func user(tokenHash: String) async throws -> User? { throw error }
    func user(appleAccount: AppleAccount, environment: AppStoreEnvironment) async throws -> User? { throw error }
    func addToken(tokenHash: String, owner: UUID, origin: TokenOrigin, at date: Date) async throws { throw error }
    func tokenCounts(owner: UUID) async throws -> TokenCounts { throw error }
    func revokeOldTokens(owner: UUID, keeping: Int, at date: Date) async throws -> Int { throw error }
    func saveMergeCode(_ code: MergeCode) async throws { throw error }
    func recordFailure(_ key: String, at date: Date, since: Date) async throws -> Int { throw error }
    func failures(_ key: String, since: Date) async throws -> Int { throw error }
    func clearFailures(_ key: String) async throws { throw error }
    func grantedCredits(environment: AppStoreEnvironment, holder: String, since: Date) async throws -> Int64 {
        throw error
    }
    func useMergeCode(owner: UUID, codeHash: String, at date: Date) async throws -> Bool { throw error }
    func revokeToken(tokenHash: String, at date: Date) async throws -> Bool { throw error }
    func savePushToken(_ token: PushToken) async throws { throw error }
    func recordMilestone(owner: UUID, name: String, at date: Date) async throws -> Bool { throw error }
    func linkAppleAccount(_ account: AppleAccount, to user: UUID) async throws -> Bool { throw error }
    func recordImport(_ customer: ImportedCustomer) async throws -> ImportedCustomer { throw error }
    func importedCustomer(source: String, externalId: String, environment: AppStoreEnvironment) async throws
        -> ImportedCustomer?
    { throw error }
    func claimImport(
        source: String, externalId: String, environment: AppStoreEnvironment, keyHash: String, at date: Date
    )
        async throws -> ImportedCustomer?
    { throw error }
    func pushTokens(owner: UUID, environment: AppStoreEnvironment) async throws -> [PushToken] { throw error }
    func deletePushToken(_ token: String, owner: UUID) async throws -> Bool { throw error }
    func mergeUser(_ merge: UserMerge, audit: @escaping @Sendable (UserMergeResult) throws -> [AuditEvent])
        async throws -> UserMergeResult
    { throw error }
    func users(mergedInto user: UUID) async throws -> [User] { throw error }
    func users(ids: Set<UUID>) async throws -> [User] { throw error }
    func deleteUser(
        _ deletion: UserDeletion, audit: @escaping @Sendable (UserDeletionResult) throws -> [AuditEvent]
    ) async throws -> UserDeletionResult { throw error }
    func saveVerifyReport(_ report: VerifyReport) async throws { throw error }
    func verifyReport(owner: UUID, environment: AppStoreEnvironment) async throws -> VerifyReport? { throw error }
    func user(appAccountToken: UUID, environment: AppStoreEnvironment) async throws -> User? { throw error }
    func users(environment: AppStoreEnvironment, supportIdPrefix: String?, limit: Int, offset: Int) async throws
        -> [User]
    {
        throw error
    }
    func userCount(environment: AppStoreEnvironment) async throws -> Int { throw error }
    func apply(_ requests: [LedgerRequest]) async throws -> [Result<LedgerResult, LedgerError>] { throw error }
    func wallet(owner: UUID, environment: AppStoreEnvironment) async throws -> Wallet { throw error }
    func entries(owner: UUID, environment: AppStoreEnvironment) async throws -> [LedgerEntry] { throw error }
    func creditLots(owner: UUID, environment: AppStoreEnvironment) async throws -> [CreditLot] { throw error }
    func expireCredits(environment: AppStoreEnvironment, owner: UUID?, at now: Date, limit: Int) async throws -> Int {
        throw error
    }
    func receiptCurrencies(transactionId: String, environment: AppStoreEnvironment) async throws -> [Currency] {
        throw error
    }
    func currencyWallets(owner: UUID, environment: AppStoreEnvironment) async throws -> [Currency: Wallet] {
        throw error
    }
    func entries(owner: UUID, environment: AppStoreEnvironment, currency: Currency?) async throws -> [LedgerEntry] {
        throw error
    }
    func receipt(transactionId: String, environment: AppStoreEnvironment, currency: Currency?) async throws
        -> Receipt?
    {
        throw error
    }
    func receipt(transactionId: String, environment: AppStoreEnvironment) async throws -> Receipt? { throw error }
    func receipts(owner: UUID, environment: AppStoreEnvironment) async throws -> [Receipt] { throw error }
    func receipts(originalTransactionId: String, environment: AppStoreEnvironment) async throws -> [Receipt] {
        throw error
    }
    func backup(owner: UUID, environment: AppStoreEnvironment) async throws -> BackupRecord? { throw error }
    func writeBackup(
        owner: UUID, environment: AppStoreEnvironment, _ decide: @escaping @Sendable (BackupRecord?) -> BackupRecord?,
        audit: @escaping @Sendable (BackupRecord?, BackupRecord) throws -> [AuditEvent]
    ) async throws -> (current: BackupRecord?, written: BackupRecord?) { throw error }
    func setBalance(_ edit: BalanceEdit, audit: @escaping @Sendable (BalanceEditResult) throws -> [AuditEvent])
        async throws -> BalanceEditResult
    { throw error }
    func createGrant(_ grant: Grant, audit: [AuditEvent]) async throws { throw error }
    func grants(environment: AppStoreEnvironment, recipient: UUID?, status: GrantStatus?, limit: Int) async throws
        -> [Grant]
    {
        throw error
    }
    func claimGrant(
        id: UUID, environment: AppStoreEnvironment, _ claim: @escaping @Sendable (Grant) throws -> GrantClaim?
    )
        async throws -> Grant
    { throw error }
    func cancelGrant(
        id: UUID, environment: AppStoreEnvironment, _ cancel: @escaping @Sendable (Grant) -> Grant?,
        audit: @escaping @Sendable (Grant) -> [AuditEvent]
    ) async throws -> Grant { throw error }
    func grant(id: UUID, environment: AppStoreEnvironment) async throws -> Grant? { throw error }
    func recordNotification(_ record: NotificationRecord) async throws -> Bool { throw error }
    func notification(uuid: String, environment: AppStoreEnvironment) async throws -> NotificationRecord? {
        throw error
    }
    func notificationCounts(environment: AppStoreEnvironment, since: Date) async throws -> [String: Int] { throw error }
    func notifications(
        environment: AppStoreEnvironment, transactionId: String?, outcome: NotificationOutcome?, limit: Int
    )
        async throws -> [NotificationRecord]
    { throw error }
    func saveRenewalState(_ state: RenewalState) async throws -> Bool { throw error }
    func renewalStates(owner: UUID, environment: AppStoreEnvironment) async throws -> [RenewalState] { throw error }
    func cursor(_ name: String, environment: AppStoreEnvironment) async throws -> String? { throw error }
    func saveCursor(_ name: String, value: String, environment: AppStoreEnvironment) async throws { throw error }
    func reconciledCustomers(environment: AppStoreEnvironment, after: UUID?, limit: Int) async throws -> [UUID] {
        throw error
    }
    func replaceDiscrepancies(owner: UUID, environment: AppStoreEnvironment, _ records: [DiscrepancyRecord])
        async throws
    { throw error }
    func discrepancies(owner: UUID, environment: AppStoreEnvironment) async throws -> [DiscrepancyRecord] {
        throw error
    }
    func swapCursor(_ name: String, environment: AppStoreEnvironment, expected: String?, value: String)
        async throws -> Bool
    { throw error }
    func saveConsumptionConsent(_ consent: ConsumptionConsent) async throws { throw error }
    func consumptionConsent(owner: UUID, environment: AppStoreEnvironment) async throws -> ConsumptionConsent? {
        throw error
    }
    func recordConsumptionAnswer(_ answer: ConsumptionAnswerRecord) async throws -> Bool { throw error }
    func consumptionAnswers(owner: UUID, environment: AppStoreEnvironment, limit: Int) async throws
        -> [ConsumptionAnswerRecord]
    { throw error }
    func createEntitlementGrant(_ grant: EntitlementGrant, audit: [AuditEvent]) async throws { throw error }
    func entitlementGrants(environment: AppStoreEnvironment, recipient: UUID) async throws -> [EntitlementGrant] {
        throw error
    }
    func cancelEntitlementGrant(
        id: UUID, environment: AppStoreEnvironment, by actor: String, at: Date,
        audit: @escaping @Sendable (EntitlementGrant) -> [AuditEvent]
    ) async throws -> EntitlementGrant { throw error }
    func webhookEndpoints(environment: AppStoreEnvironment) async throws -> [WebhookEndpoint] { throw error }
    func saveWebhookEndpoint(_ endpoint: WebhookEndpoint) async throws { throw error }
    func removeWebhookEndpoint(id: String, environment: AppStoreEnvironment) async throws -> Bool { throw error }
    func routeWebhookEvents(
        environment: AppStoreEnvironment, limit: Int, at: Date,
        _ route: @escaping @Sendable (OutboxRecord) -> WebhookEvent?
    ) async throws -> Int { throw error }
    func leaseWebhookDeliveries(
        environment: AppStoreEnvironment, holder: String, limit: Int, at: Date, until: Date, endpoints: [String]?
    ) async throws -> [WebhookDelivery] { throw error }
    func finishWebhookAttempts(_ attempts: [WebhookAttempt], environment: AppStoreEnvironment, holder: String)
        async throws -> [Bool]
    { throw error }
    func webhookDeliveries(environment: AppStoreEnvironment, state: WebhookDeliveryState?, limit: Int) async throws
        -> [WebhookDelivery]
    { throw error }
    func resendWebhookDelivery(endpoint: String, seq: Int64, environment: AppStoreEnvironment, at: Date) async throws {
        throw error
    }
    func replayWebhookEvents(endpoint: String, environment: AppStoreEnvironment, since: Date, at: Date) async throws
        -> Int
    { throw error }
    func webhookBacklog(environment: AppStoreEnvironment) async throws -> WebhookBacklog { throw error }
    func pruneWebhookEvents(environment: AppStoreEnvironment, before: Date) async throws -> Int { throw error }
    func recordAudit(_ event: AuditEvent) async throws { throw error }
    func auditEvents(environment: AppStoreEnvironment, query: AuditQuery, limit: Int) async throws -> [AuditEvent] {
        throw error
    }
    func backupHistory(owner: UUID, environment: AppStoreEnvironment, limit: Int) async throws -> [BackupHistoryItem] {
        throw error
    }
    func dashboard(environment: AppStoreEnvironment, days: Int, now: Date) async throws -> DashboardFigures {
        throw error
    }
    func deleteGrants(environment: AppStoreEnvironment) async throws -> Int { throw error }
    func sandboxMarkedUsers(environment: AppStoreEnvironment, supportIdPrefix: String?, limit: Int, offset: Int)
        async throws -> [User]
    { throw error }
    func sandboxMarkedGrants(environment: AppStoreEnvironment, status: GrantStatus?, limit: Int) async throws
        -> [Grant]
    { throw error }
    func deleteSandboxMarkedGrants(environment: AppStoreEnvironment) async throws -> Int { throw error }
    func createAdmin(_ admin: Admin) async throws { throw error }
    func admin(name: String) async throws -> Admin? { throw error }
    func admins() async throws -> [Admin] { throw error }
    func setAdminPassword(name: String, passwordHash: String, at: Date) async throws -> Bool { throw error }
    func updateAdmin(name: String, _ change: @escaping @Sendable (Admin) -> Admin?) async throws -> Admin? {
        throw error
    }
    func deleteSessions(adminId: UUID, except kept: String?) async throws -> Int { throw error }
    func createSession(_ session: AdminSession) async throws { throw error }
    func session(tokenHash: String) async throws -> AdminSession? { throw error }
    func setSessionEnvironment(tokenHash: String, environment: AppStoreEnvironment) async throws { throw error }
    func deleteSession(tokenHash: String) async throws { throw error }
    func deleteSessions(expiredBefore date: Date) async throws -> Int { throw error }
    func createAdminKey(_ key: AdminKey) async throws { throw error }
    func adminKey(id: String) async throws -> AdminKey? { throw error }
    func adminKeys() async throws -> [AdminKey] { throw error }
    func revokeAdminKey(id: String, at: Date) async throws -> Bool { throw error }
    func recordSignature(_ digest: String, at: Date, forgetBefore: Date) async throws -> Bool { throw error }
    func receipts(owner: UUID, environment: AppStoreEnvironment, productIds: Set<String>) async throws -> [Receipt] {
        throw error
    }
    func entries(owner: UUID, environment: AppStoreEnvironment, kinds: Set<LedgerEntryKind>) async throws
        -> [LedgerEntry]
    {
        throw error
    }
}
