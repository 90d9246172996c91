import CofferAPI
import CofferCore
import CofferStoreKit
import Foundation

extension CofferSDK {
    /// Spends credits, once per `key` (give the same key when retrying the same spend): from the local
    /// ledger in the device wallet, through the server in the server wallet.
    ///
    /// - Returns: The balance after the spend.
    /// - Throws: `LedgerError.insufficientBalance` when the balance holds less; ``ServerClientError`` when
    ///   the server wallet's server is out of reach (nothing was spent unless it answered).
    @discardableResult
    public func spend(_ amount: Int64, key: String = UUID().uuidString.lowercased()) async throws -> Int64 {
        guard amount > 0 else { throw LedgerError.invalidAmount(amount) }
        switch configuration.wallet {
        case .device:
            let user = try await localUser()
            let result = try await ledger.apply(
                LedgerRequest(
                    owner: user.id, environment: configuration.environment, event: .spend(key: key, amount: amount),
                    at: now()))
            return result.wallet.balance
        case .server:
            let token = try await credentials().token
            do {
                return try await server.spend(amount: amount, key: key, token: token).balance
            } catch .refused(_, "insufficient-balance", _) {
                let balance = try await server.me(token: token).balance
                throw LedgerError.insufficientBalance(balance: balance, requested: amount)
            } catch .refused(_, "key-reused", _) {
                throw LedgerError.keyReused(IdempotencyKey(.spend, key))
            }
        }
    }
}
