import CofferCore
import CofferStore
import Foundation

/// A store whose every operation fails, as a database that went away does (after `delay`, as one that
/// hangs before its connection times out).
struct FailingStore: CofferStore {
    static let failure = StoreError.storage("the database does not answer")
    var delay: Duration = .zero

    func createUser(_ user: User) async throws { throw Self.failure }
    func user(id: UUID) async throws -> User? { throw Self.failure }
    func user(supportId: SupportID, environment: Environment) async throws -> User? { throw Self.failure }
    func user(tokenHash: String) async throws -> User? { throw Self.failure }
    func user(appleAccount: AppleAccount, environment: Environment) async throws -> User? { throw Self.failure }
    func addToken(tokenHash: String, owner: UUID, at date: Date) async throws { throw Self.failure }
    func revokeToken(tokenHash: String, at date: Date) async throws -> Bool { throw Self.failure }
    func savePushToken(_ token: PushToken) async throws { throw Self.failure }
    func recordMilestone(owner: UUID, name: String, at date: Date) async throws -> Bool { throw Self.failure }
    func pushTokens(owner: UUID, environment: Environment) async throws -> [PushToken] { throw Self.failure }
    func deletePushToken(_ token: String, owner: UUID) async throws -> Bool { throw Self.failure }
    func mergeUser(_ merge: UserMerge) async throws -> UserMergeResult { throw Self.failure }
    func users(mergedInto user: UUID) async throws -> [User] { throw Self.failure }
    func deleteUser(_ deletion: UserDeletion) async throws -> UserDeletionResult { throw Self.failure }
    func saveVerifyReport(_ report: VerifyReport) async throws { throw Self.failure }
    func verifyReport(owner: UUID, environment: Environment) async throws -> VerifyReport? { throw Self.failure }
    func user(appAccountToken: UUID, environment: Environment) async throws -> User? { throw Self.failure }
    func users(environment: Environment, supportIdPrefix: String?, limit: Int, offset: Int) async throws -> [User] {
        throw Self.failure
    }
    func userCount(environment: Environment) async throws -> Int {
        try await Task.sleep(for: delay)
        throw Self.failure
    }
    func apply(_ requests: [LedgerRequest]) async throws -> [Result<LedgerResult, LedgerError>] { throw Self.failure }
    func wallet(owner: UUID, environment: Environment) async throws -> Wallet { throw Self.failure }
    func entries(owner: UUID, environment: Environment) async throws -> [LedgerEntry] { throw Self.failure }
    func receipt(transactionId: String, environment: Environment) async throws -> Receipt? { throw Self.failure }
    func receipts(owner: UUID, environment: Environment) async throws -> [Receipt] { throw Self.failure }
    func receipts(originalTransactionId: String, environment: Environment) async throws -> [Receipt] {
        throw Self.failure
    }
    func backup(owner: UUID, environment: Environment) async throws -> BackupRecord? { throw Self.failure }
    func writeBackup(
        owner: UUID, environment: Environment, _ decide: @escaping @Sendable (BackupRecord?) -> BackupRecord?
    ) async throws -> (current: BackupRecord?, written: BackupRecord?) { throw Self.failure }
    func createGrant(_ grant: Grant) async throws { throw Self.failure }
    func grants(environment: Environment, recipient: UUID?, status: GrantStatus?, limit: Int) async throws -> [Grant] {
        throw Self.failure
    }
    func claimGrant(id: UUID, environment: Environment, _ claim: @escaping @Sendable (Grant) throws -> GrantClaim?)
        async throws -> Grant
    { throw Self.failure }
    func cancelGrant(id: UUID, environment: Environment, _ cancel: @escaping @Sendable (Grant) -> Grant?)
        async throws -> Grant
    { throw Self.failure }
    func grant(id: UUID, environment: Environment) async throws -> Grant? { throw Self.failure }
    func recordNotification(_ record: NotificationRecord) async throws -> Bool { throw Self.failure }
    func notification(uuid: String, environment: Environment) async throws -> NotificationRecord? { throw Self.failure }
    func notificationCounts(environment: Environment, since: Date) async throws -> [String: Int] { throw Self.failure }
    func notifications(environment: Environment, transactionId: String?, outcome: NotificationOutcome?, limit: Int)
        async throws -> [NotificationRecord]
    { throw Self.failure }
    func saveRenewalState(_ state: RenewalState) async throws -> Bool { throw Self.failure }
    func renewalStates(owner: UUID, environment: Environment) async throws -> [RenewalState] { throw Self.failure }
    func cursor(_ name: String, environment: Environment) async throws -> String? { throw Self.failure }
    func saveCursor(_ name: String, value: String, environment: Environment) async throws { throw Self.failure }
    func recordAudit(_ event: AuditEvent) async throws { throw Self.failure }
    func auditEvents(environment: Environment, query: AuditQuery, limit: Int) async throws -> [AuditEvent] {
        throw Self.failure
    }
    func backupHistory(owner: UUID, environment: Environment, limit: Int) async throws -> [BackupHistoryItem] {
        throw Self.failure
    }
    func dashboard(environment: Environment, days: Int, now: Date) async throws -> DashboardFigures {
        throw Self.failure
    }
    func deleteGrants(environment: Environment) async throws -> Int { throw Self.failure }
    func createAdmin(_ admin: Admin) async throws { throw Self.failure }
    func admin(name: String) async throws -> Admin? { throw Self.failure }
    func admins() async throws -> [Admin] { throw Self.failure }
    func setAdminPassword(name: String, passwordHash: String, at: Date) async throws -> Bool { throw Self.failure }
    func updateAdmin(name: String, _ change: @escaping @Sendable (Admin) -> Admin?) async throws -> Admin? {
        throw Self.failure
    }
    func deleteSessions(adminId: UUID, except kept: String?) async throws -> Int { throw Self.failure }
    func createSession(_ session: AdminSession) async throws { throw Self.failure }
    func session(tokenHash: String) async throws -> AdminSession? { throw Self.failure }
    func setSessionEnvironment(tokenHash: String, environment: Environment) async throws { throw Self.failure }
    func deleteSession(tokenHash: String) async throws { throw Self.failure }
    func deleteSessions(expiredBefore date: Date) async throws -> Int { throw Self.failure }
    func createAdminKey(_ key: AdminKey) async throws { throw Self.failure }
    func adminKey(id: String) async throws -> AdminKey? { throw Self.failure }
    func adminKeys() async throws -> [AdminKey] { throw Self.failure }
    func revokeAdminKey(id: String, at: Date) async throws -> Bool { throw Self.failure }
    func recordSignature(_ digest: String, at: Date, forgetBefore: Date) async throws -> Bool { throw Self.failure }
    func receipts(owner: UUID, environment: Environment, productIds: Set<String>) async throws -> [Receipt] {
        throw Self.failure
    }
    func entries(owner: UUID, environment: Environment, kinds: Set<LedgerEntryKind>) async throws -> [LedgerEntry] {
        throw Self.failure
    }
}
