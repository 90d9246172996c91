// swift-format-ignore-file: AllPublicDeclarationsHaveDocumentation

// The public methods here are the store protocols' requirements, documented there (`CofferStore/Stores`).
import CofferCore
import Foundation

extension InMemoryStore {
    /// Whether a user is Sandbox-marked (``SandboxMark``).
    func isSandboxMarked(_ user: User) -> Bool {
        SandboxMark.holds(user, receipts: state.receipts.values.filter { $0.owner == user.id })
    }

    public func sandboxMarkedUsers(
        environment: AppStoreEnvironment, supportIdPrefix: String?, limit: Int, offset: Int
    ) -> [User] {
        let prefix = supportIdPrefix?.lowercased() ?? ""
        let matching = state.users.values
            .filter { $0.environment == environment && $0.supportId.rawValue.hasPrefix(prefix) && isSandboxMarked($0) }
            .sorted { ($0.createdAt, $0.supportId) > ($1.createdAt, $1.supportId) }
        return Array(matching.dropFirst(max(0, offset)).prefix(max(0, limit)))
    }

    public func sandboxMarkedGrants(environment: AppStoreEnvironment, status: GrantStatus?, limit: Int) -> [Grant] {
        let marked = Set(state.users.values.filter { $0.environment == environment && isSandboxMarked($0) }.map(\.id))
        return Array(
            grantList.filter { $0.environment == environment && marked.contains($0.recipient) }
                .filter { status == nil || $0.status == status }
                .sorted { ($0.createdAt, $0.id.uuidString) > ($1.createdAt, $1.id.uuidString) }
                .prefix(max(0, limit)))
    }

    public func deleteSandboxMarkedGrants(environment: AppStoreEnvironment) -> Int {
        let marked = Set(state.users.values.filter { $0.environment == environment && isSandboxMarked($0) }.map(\.id))
        let before = grantList.count
        grantList.removeAll { $0.environment == environment && marked.contains($0.recipient) }
        return before - grantList.count
    }
}
