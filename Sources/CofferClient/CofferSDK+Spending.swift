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
        return try await wallet.spend(amount, key: key, self)
    }
}
