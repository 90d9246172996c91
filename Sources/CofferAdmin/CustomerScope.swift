import CofferAPI
import CofferCore
import CofferStore
import Foundation

/// Which customers a panel view shows. A Sandbox server keeps each environment's customers apart. A Production
/// server keeps App Review's and TestFlight's customers among its own (Sandbox-marked: their AppTransaction or
/// their purchases are Apple's Sandbox), so there the panel's Sandbox view shows those customers and their grants,
/// and "Delete all test grants" reaches them, while the Production view shows every customer.
public struct CustomerScope: Sendable, Equatable {
    /// Where the customers are kept.
    public var environment: AppStoreEnvironment
    /// Whether only the Sandbox-marked customers are in the scope.
    public var sandboxMarkedOnly: Bool

    /// The scope of the panel's `view` (its environment switch) on a server of environment `server`.
    public init(view: AppStoreEnvironment, server: AppStoreEnvironment) {
        environment = server == .production ? .production : view
        sandboxMarkedOnly = server == .production && view == .sandbox
    }
}

extension AdminService {
    /// The users among `users` in the scope: all of them, or only the Sandbox-marked ones.
    func inScope(_ users: [User], _ sandboxMarkedOnly: Bool) async throws -> [User] {
        guard sandboxMarkedOnly else { return users }
        var kept: [User] = []
        for user in users
        where SandboxMark.holds(
            user, receipts: try await store.receipts(owner: user.id, environment: user.environment))
        {
            kept.append(user)
        }
        return kept
    }

    /// One customer's detail, refused when the scope does not hold them: a Production customer seen from a
    /// Production server's Sandbox view (support switches to Production to see or change a real customer).
    public func user(scope: CustomerScope, supportId: String) async throws -> UserDetail {
        let detail = try await user(environment: scope.environment, supportId: supportId)
        guard !scope.sandboxMarkedOnly || detail.sandboxMarked else { throw Self.outOfScope(detail.user.supportId) }
        return detail
    }

    /// Refuses a customer the scope does not hold, as ``user(scope:supportId:)`` does: every write the panel makes
    /// (a grant, its cancellation, a balance edit, a merge, a deletion, an export) asks first, the confirmed step
    /// as well as its confirmation page.
    public func requireInScope(_ scope: CustomerScope, supportId: String) async throws {
        guard scope.sandboxMarkedOnly else { return }
        let user = try await find(supportId, environment: scope.environment)
        let receipts = try await store.receipts(owner: user.id, environment: user.environment)
        guard SandboxMark.holds(user, receipts: receipts) else { throw Self.outOfScope(user.supportId.rawValue) }
    }

    static func outOfScope(_ supportId: String) -> AdminError {
        .forbidden(
            "\(supportId) is a Production customer, not App Review's, TestFlight's or a sandbox tester's: switch to "
                + "Production to see or change them")
    }

    /// The grants in the scope, newest first.
    public func grants(scope: CustomerScope, status: GrantStatus?, limit: Int = 200) async throws -> [GrantView] {
        guard scope.sandboxMarkedOnly else {
            return try await grants(environment: scope.environment, status: status, limit: limit)
        }
        let grants = try await store.sandboxMarkedGrants(
            environment: scope.environment, status: status, limit: min(max(1, limit), 1_000))
        return try await views(of: grants)
    }

    /// "Delete all test grants": every grant of a Sandbox server, or a Production server's grants to its
    /// Sandbox-marked customers (never a real customer's), audited. Refused in a Production view.
    public func deleteTestGrants(scope: CustomerScope, actor: String) async throws -> Int {
        guard scope.sandboxMarkedOnly else {
            return try await deleteAllGrants(environment: scope.environment, actor: actor)
        }
        let before = try await store.sandboxMarkedGrants(environment: scope.environment, status: nil, limit: 1_000_000)
        let deleted = try await store.deleteSandboxMarkedGrants(environment: scope.environment)
        try await audit(
            scope.environment, actor: actor, action: "grants.delete-test", subject: "grants",
            before: [
                "pending": before.count { $0.status == .pending }, "claimed": before.count { $0.status == .claimed },
            ],
            after: ["deleted": deleted])
        return deleted
    }
}
