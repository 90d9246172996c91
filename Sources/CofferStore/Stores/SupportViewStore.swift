import CofferCore
import Foundation

/// What support's pages read across customers: backup history, the dashboard's figures, and the Sandbox
/// grants they clean up.
public protocol SupportViewStore: Sendable {
    // MARK: Support

    /// The backups a user's devices and admins wrote, newest first.
    func backupHistory(owner: UUID, environment: AppStoreEnvironment, limit: Int) async throws -> [BackupHistoryItem]
    /// The dashboard's figures: totals, and purchases and refunds per UTC day over the `days` days ending
    /// with the day of `now`. The SQL engines read them from rollups kept in each change's transaction
    /// (``DashboardRollup``), never by counting receipts or customers.
    func dashboard(environment: AppStoreEnvironment, days: Int, now: Date) async throws -> DashboardFigures
    /// Moves the rollups' pending contributions into their sums, where an engine keeps them apart (PostgreSQL, whose
    /// instances write at once); one instance at a time, the others return at once. The instance that folds also
    /// tends what the folds leave (PostgreSQL: the contributions' dead rows after a burst, the statistics of a table
    /// that doubled).
    ///
    /// - Returns: How many contributions were moved.
    func foldRollups() async throws -> Int
    /// Deletes every grant of an environment (ledger entries of claimed grants stay).
    ///
    /// - Returns: How many were deleted.
    func deleteGrants(environment: AppStoreEnvironment) async throws -> Int
    /// The grants of an environment to its Sandbox-marked users (as ``sandboxMarkedUsers(environment:supportIdPrefix:limit:offset:)``
    /// says), newest first, optionally of one status.
    func sandboxMarkedGrants(environment: AppStoreEnvironment, status: GrantStatus?, limit: Int) async throws
        -> [Grant]
    /// Deletes the grants of an environment to its Sandbox-marked users: the test grants of a Production server
    /// (ledger entries of claimed grants stay).
    ///
    /// - Returns: How many were deleted.
    func deleteSandboxMarkedGrants(environment: AppStoreEnvironment) async throws -> Int
}

extension SupportViewStore {
    /// Nothing to fold: the engine adds to its sums in place.
    public func foldRollups() async throws -> Int { 0 }
}
