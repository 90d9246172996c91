import CofferAPI
import CofferCore
import CofferStore

extension AdminService {
    /// What the latest reconciliation with Apple's history found for `user`, for the customer page and the admin
    /// API.
    func discrepancyViews(of user: User, environment: AppStoreEnvironment) async throws -> [DiscrepancyView] {
        try await store.discrepancies(owner: user.id, environment: environment).map {
            DiscrepancyView(
                supportId: user.supportId.rawValue, kind: $0.kind, transactionId: $0.transactionId,
                productId: $0.productId, detail: $0.detail, foundAt: $0.foundAt, repairedAt: $0.repairedAt)
        }
    }
}
