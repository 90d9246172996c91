import CofferCore
import Foundation

extension InMemoryStore {
    /// Whether a user's data is Apple's Sandbox: the AppTransaction says so; or, without one, a receipt of theirs is
    /// Sandbox data and none is Production's.
    func isSandboxMarked(_ user: User) -> Bool {
        if let account = user.appleAccount { return account.environment == .sandbox }
        let theirs = state.receipts.values.filter { $0.owner == user.id }
        return theirs.contains { $0.transaction.environment == .sandbox }
            && !theirs.contains { $0.transaction.environment == .production }
    }

    /// The Sandbox-marked users of an environment, newest first.
    public func sandboxMarkedUsers(
        environment: AppStoreEnvironment, supportIdPrefix: String?, limit: Int, offset: Int
    ) -> [User] {
        let prefix = supportIdPrefix?.lowercased() ?? ""
        let matching = state.users.values
            .filter { $0.environment == environment && $0.supportId.rawValue.hasPrefix(prefix) && isSandboxMarked($0) }
            .sorted { ($0.createdAt, $0.supportId) > ($1.createdAt, $1.supportId) }
        return Array(matching.dropFirst(max(0, offset)).prefix(max(0, limit)))
    }

    /// The grants of an environment to its Sandbox-marked users, newest first.
    public func sandboxMarkedGrants(environment: AppStoreEnvironment, status: GrantStatus?, limit: Int) -> [Grant] {
        let marked = Set(state.users.values.filter { $0.environment == environment && isSandboxMarked($0) }.map(\.id))
        return Array(
            grantList.filter { $0.environment == environment && marked.contains($0.recipient) }
                .filter { status == nil || $0.status == status }
                .sorted { ($0.createdAt, $0.id.uuidString) > ($1.createdAt, $1.id.uuidString) }
                .prefix(max(0, limit)))
    }

    /// Deletes the grants of an environment to its Sandbox-marked users.
    public func deleteSandboxMarkedGrants(environment: AppStoreEnvironment) -> Int {
        let marked = Set(state.users.values.filter { $0.environment == environment && isSandboxMarked($0) }.map(\.id))
        let before = grantList.count
        grantList.removeAll { $0.environment == environment && marked.contains($0.recipient) }
        return before - grantList.count
    }
}
