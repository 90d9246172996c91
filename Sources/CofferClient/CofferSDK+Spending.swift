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
        let balance = try await wallet.spend(amount, key: key, self)
        // The device wallet announced the change and scheduled its backup as it applied it.
        if configuration.wallet == .server { publish(.wallet) }
        return balance
    }

    /// Device wallet: credits won in play, added once per `key` (give the same key when retrying the same win),
    /// then backed up (``SDKConfiguration/backupDelay``).
    ///
    /// - Returns: The balance after.
    /// - Throws: ``SDKError/deviceWalletOnly(_:)`` in the server wallet (its balance changes only through the
    ///   server); `LedgerError.keyReused` for a key used before with another amount.
    @discardableResult
    public func earn(_ amount: Int64, key: String) async throws -> Int64 {
        guard configuration.wallet == .device else {
            throw SDKError.deviceWalletOnly("earn: in the server wallet credits come from the server (grants)")
        }
        guard amount > 0, amount <= Ledger.maximumAmount else { throw LedgerError.invalidAmount(amount) }
        let result = try await applyLocally(
            .adjustment(id: "earn:" + key, delta: amount, reason: "earned in play"), inPlay: true)
        return result.wallet.balance
    }

    /// Device wallet: sets the balance to `balance` only while it is still `expected`, the balance the game read
    /// (a compare-and-set), recorded in the local ledger as one change with its reason, then backed up
    /// (``SDKConfiguration/backupDelay``). Play moves the balance with ``earn(_:key:)`` and ``spend(_:key:)``;
    /// this is for a game that keeps a bankroll of its own and must not undo what the SDK applied in between (a
    /// grant, a refund taken back, support's edit).
    ///
    /// - Returns: The balance after.
    /// - Throws: ``SDKError/balanceMoved(expected:actual:)`` when the balance is no longer `expected` (nothing
    ///   changes: read it again); ``SDKError/deviceWalletOnly(_:)`` in the server wallet;
    ///   `LedgerError.invalidAmount` for a negative balance.
    @discardableResult
    public func setBalance(_ balance: Int64, expected: Int64, reason: String) async throws -> Int64 {
        guard configuration.wallet == .device else {
            throw SDKError.deviceWalletOnly("setBalance: the server wallet's balance is the server's")
        }
        guard balance >= 0, balance <= Ledger.maximumAmount else { throw LedgerError.invalidAmount(balance) }
        guard expected >= 0, expected <= Ledger.maximumAmount else { throw LedgerError.invalidAmount(expected) }
        guard balance != expected else {
            let current = try await localWallet().balance
            guard current == expected else { throw SDKError.balanceMoved(expected: expected, actual: current) }
            return current
        }
        let result = try await applyLocally(
            .adjustment(id: "set:" + UUID().uuidString.lowercased(), delta: balance - expected, reason: reason),
            inPlay: true, expectedBalance: expected)
        return result.wallet.balance
    }

    /// Backs the balance up ``SDKConfiguration/backupDelay`` seconds from now, unless a backup is already
    /// waiting (it takes this change too). A failure is kept in ``lastBackupFailure``.
    func scheduleBackup() {
        guard let delay = configuration.backupDelay, !backupWaiting else { return }
        backupWaiting = true
        scheduledBackup = Task {
            if delay > 0 { try? await self.configuration.timerClock.sleep(for: .milliseconds(Int(delay * 1_000))) }
            await self.runScheduledBackup()
        }
    }

    private func runScheduledBackup() async {
        // From here a change schedules a backup of its own: this one may have read the balance already.
        backupWaiting = false
        await backUpNow()
    }

    /// Waits until the backups balance changes scheduled have run (tests, and an app about to be suspended).
    public func backupSettled() async {
        while let task = scheduledBackup {
            await task.value
            if scheduledBackup == task { scheduledBackup = nil }
        }
    }
}
