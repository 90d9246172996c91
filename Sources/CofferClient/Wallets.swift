import CofferAPI
import CofferCore
import CofferStoreKit
import Foundation

/// Where the balance lives, as the SDK sees it. Every step that differs between the two wallets is one
/// requirement here, answered once by ``DeviceWallet`` (the balance in the local ledger, backed up to the
/// server, the server's findings applied through the mailbox) and once by ``ServerWallet`` (the balance on the
/// server); the SDK's sections ask their wallet instead of branching on it.
protocol WalletKeeper: Sendable {
    /// The balance now.
    func balance(_ sdk: isolated CofferSDK) async throws -> Int64
    /// Delivers a transaction already remembered for the server, and finishes it once that is durable.
    ///
    /// - Returns: Whether it is finished.
    func deliver(_ transaction: StoreTransaction, to user: LocalUser, _ sdk: isolated CofferSDK) async throws -> Bool
    /// The credits a delivered transaction gave, when known.
    func credits(of transactionId: String, _ sdk: isolated CofferSDK) async throws -> Int64?
    /// Whether a transaction StoreKit reports refunded is still to be taken back.
    func needsTakingBack(_ transaction: StoreTransaction, _ sdk: isolated CofferSDK) async throws -> Bool
    /// Whether the wallet holds the transaction as the user's (Verify Purchases).
    func holds(_ transactionId: String, for user: LocalUser, _ sdk: isolated CofferSDK) async throws -> Bool
    /// Takes back, once, what a transaction the server answered `revoked` for had delivered.
    func takeBack(_ transactionId: String, _ sdk: isolated CofferSDK) async throws
    /// Spends `amount` once per `key`.
    ///
    /// - Returns: The balance after.
    func spend(_ amount: Int64, key: String, _ sdk: isolated CofferSDK) async throws -> Int64
    /// Applies a pending grant before it is claimed.
    ///
    /// - Returns: The credits it added now.
    func applyGrant(_ grant: GrantBody, for user: LocalUser, _ sdk: isolated CofferSDK) async throws -> Int64
    /// The credits a claim added.
    func creditsClaimed(_ claim: ClaimResponse, of grant: GrantBody) -> Int64
    /// Answers a claim the server refused because support cancelled the grant first: what ``applyGrant(_:for:_:)``
    /// added is taken back, once.
    ///
    /// - Returns: The credits that changes (0 or negative).
    func grantCancelled(_ grant: GrantBody, _ sdk: isolated CofferSDK) async throws -> Int64
    /// Takes back the grants support cancelled that this install applied but never claimed (it died between the
    /// two steps, or support cancelled in between), once each.
    ///
    /// - Returns: The credits that changes (0 or negative).
    func takeBackCancelledGrants(token: String, _ sdk: isolated CofferSDK) async throws -> Int64
    /// Applies the server's findings (refunds, reversals, support's edits) the wallet does not see itself.
    ///
    /// - Returns: How many were applied now.
    func applyMailbox(_ sdk: isolated CofferSDK) async throws -> Int
    /// Backs the balance up, or takes the server's backup, by the backup rule.
    func syncBackup(_ sdk: isolated CofferSDK) async throws -> BackupDecision
    /// Whether the server's backup holds the balance.
    func backupStatus(_ sdk: isolated CofferSDK) async throws -> CofferSDK.BackupStatus
}

/// The device wallet: the balance is the local ledger's.
struct DeviceWallet: WalletKeeper {
    func balance(_ sdk: isolated CofferSDK) async throws -> Int64 { try await sdk.localWallet().balance }

    func deliver(_ transaction: StoreTransaction, to user: LocalUser, _ sdk: isolated CofferSDK) async throws -> Bool {
        try await sdk.deliverLocally(transaction, to: user)
        try sdk.crashAfter(.delivered)
        // Posted before it is finished: the outbox goes with the app if it is deleted, and an app that dies
        // here and is then deleted leaves the transaction unfinished, so the new install delivers it again
        // from the backup it restores (which the purchase's own backup has not yet changed). Offline it stays
        // in the outbox and is finished all the same: the balance is the device's.
        _ = try await sdk.post(id: transaction.id, jws: transaction.jwsRepresentation)
        await sdk.storeKit.finish(transactionId: transaction.id)
        try sdk.crashAfter(.finished)
        return true
    }

    func credits(of transactionId: String, _ sdk: isolated CofferSDK) async throws -> Int64? {
        try await sdk.localReceipt(transactionId)?.deliveredCredits
    }

    func needsTakingBack(_ transaction: StoreTransaction, _ sdk: isolated CofferSDK) async throws -> Bool {
        // Only what this install delivered, and only once.
        guard let receipt = try await sdk.localReceipt(transaction.id) else { return false }
        if receipt.revokedAt == nil { return true }
        // Refunded in part: a larger share StoreKit states now (a full refund after a prorated one) takes the rest.
        guard transaction.revocationPercentage != nil, let delivered = receipt.deliveredCredits else { return false }
        return CofferSDK.fact(transaction).refundedShare(of: delivered) > receipt.refundedCredits
    }

    func holds(_ transactionId: String, for user: LocalUser, _ sdk: isolated CofferSDK) async throws -> Bool {
        try await sdk.localReceipt(transactionId)?.owner == user.id
    }

    func takeBack(_ transactionId: String, _ sdk: isolated CofferSDK) async throws {
        // A purchase the app delivered before Coffer gave nothing through Coffer: another user's, it takes nothing.
        guard let receipt = try await sdk.localReceipt(transactionId), receipt.revokedAt == nil,
            !receipt.deliveredBeforeCoffer
        else { return }
        var fact = receipt.transaction
        fact.revocationDate = sdk.now()
        // In every currency the purchase gave (applyLocally reaches each).
        try await sdk.applyLocally(.revocation(fact))
    }

    func spend(_ amount: Int64, key: String, _ sdk: isolated CofferSDK) async throws -> Int64 {
        try await sdk.applyLocally(.spend(key: key, amount: amount), inPlay: true).wallet.balance
    }

    func applyGrant(_ grant: GrantBody, for user: LocalUser, _ sdk: isolated CofferSDK) async throws -> Int64 {
        let id = grant.id.uuidString.lowercased()
        let key = "grant:" + id
        guard try !sdk.applied(key) else { return 0 }
        let currency = try grant.currency.flatMap(sdk.ledgerCurrency)
        let result = try await sdk.applyLocally(
            .grant(id: id, credits: grant.credits, reason: grant.reason), currency: currency)
        try sdk.crashAfter(.grantApplied)
        try sdk.remember(key)
        try sdk.crashAfter(.grantRemembered)
        // What the default currency's balance gained (another currency's grant shows in balances()).
        return result.outcome == .applied && currency == nil ? grant.credits : 0
    }

    func creditsClaimed(_ claim: ClaimResponse, of grant: GrantBody) -> Int64 { 0 }

    func grantCancelled(_ grant: GrantBody, _ sdk: isolated CofferSDK) async throws -> Int64 {
        // Applied before the claim, the grant's credits are in the local ledger: support cancelled it in between,
        // so they go back out, as far as the balance allows, once (an adjustment keyed by the grant, remembered).
        let id = grant.id.uuidString.lowercased()
        let takeBack = "grant-cancelled:" + id
        guard try sdk.applied("grant:" + id), try !sdk.applied(takeBack) else { return 0 }
        let user = try await sdk.localUser()
        let key = IdempotencyKey(.adjustment, takeBack)
        // A currency the catalog does not list was never applied here (refreshGrants waits for it).
        let currency: Currency?
        do {
            currency = try grant.currency.flatMap(sdk.ledgerCurrency)
        } catch {
            return 0
        }
        let environment = sdk.configuration.environment
        let done = try await sdk.ledger.entries(owner: user.id, environment: environment, currency: currency)
            .contains { $0.key == key }
        var changed: Int64 = 0
        if !done {
            let balance = try await sdk.ledger.wallet(owner: user.id, environment: environment, currency: currency)
                .balance
            let taken = min(balance, grant.credits)
            if taken > 0 {
                _ = try await sdk.applyLocally(
                    .adjustment(id: takeBack, delta: -taken, reason: "grant cancelled by support"), currency: currency)
                if currency == nil { changed = -taken }
            }
        }
        try sdk.remember(takeBack)
        return changed
    }

    /// The grants support cancelled; none from a server from before cancellation (it answers 400).
    static func cancelledGrants(_ server: ServerClient, token: String) async throws(ServerClientError) -> [GrantBody] {
        do {
            return try await server.cancelledGrants(token: token)
        } catch {
            if case .refused(400, _, _) = error { return [] }
            throw error
        }
    }

    func takeBackCancelledGrants(token: String, _ sdk: isolated CofferSDK) async throws -> Int64 {
        var changed: Int64 = 0
        for grant in try await Self.cancelledGrants(sdk.server, token: token) {
            changed += try await grantCancelled(grant, sdk)
        }
        return changed
    }

    func applyMailbox(_ sdk: isolated CofferSDK) async throws -> Int { try await sdk.applyMailboxToLedger() }

    func syncBackup(_ sdk: isolated CofferSDK) async throws -> BackupDecision { try await sdk.syncDeviceBackup() }

    func backupStatus(_ sdk: isolated CofferSDK) async throws -> CofferSDK.BackupStatus {
        guard let remote = try await sdk.signedIn({ try await sdk.server.backup(token: $0) }) else { return .none }
        // The backup holds the balance and the deficit in every currency: it matches only when each does.
        let local = try await sdk.localWallet()
        let others = try await sdk.backedUpWallets(sdk.localUser())
        return remote.value == local.balance && remote.deficit == local.deficit
            && sdk.listedWallets(remote.currencies) == others
            ? .matches(since: remote.lastUpdated) : .differs(device: local.balance, server: remote.value)
    }
}

/// The server wallet: the balance is the server's; the device posts what it buys and asks.
struct ServerWallet: WalletKeeper {
    func balance(_ sdk: isolated CofferSDK) async throws -> Int64 {
        try await sdk.signedIn { try await sdk.server.me(token: $0).balance }
    }

    func deliver(_ transaction: StoreTransaction, to user: LocalUser, _ sdk: isolated CofferSDK) async throws -> Bool {
        guard try await sdk.post(id: transaction.id, jws: transaction.jwsRepresentation) else { return false }
        try sdk.crashAfter(.delivered)
        await sdk.storeKit.finish(transactionId: transaction.id)
        try sdk.crashAfter(.finished)
        return true
    }

    func credits(of transactionId: String, _ sdk: isolated CofferSDK) async throws -> Int64? {
        try sdk.state.credits(id: transactionId)
    }

    func needsTakingBack(_ transaction: StoreTransaction, _ sdk: isolated CofferSDK) async throws -> Bool {
        try sdk.state.outcome(id: transaction.id) != TransactionOutcome.revoked.rawValue
    }

    func holds(_ transactionId: String, for user: LocalUser, _ sdk: isolated CofferSDK) async throws -> Bool {
        try sdk.state.credits(id: transactionId) != nil
    }

    func takeBack(_ transactionId: String, _ sdk: isolated CofferSDK) async throws {}

    func spend(_ amount: Int64, key: String, _ sdk: isolated CofferSDK) async throws -> Int64 {
        try await sdk.signedIn { token in
            do {
                return try await sdk.server.spend(amount: amount, key: key, token: token).balance
            } catch ServerClientError.refused(_, "insufficient-balance", _) {
                let balance = try await sdk.server.me(token: token).balance
                throw LedgerError.insufficientBalance(balance: balance, requested: amount)
            } catch ServerClientError.refused(_, "key-reused", _) {
                throw LedgerError.keyReused(IdempotencyKey(.spend, key))
            }
        }
    }

    func applyGrant(_ grant: GrantBody, for user: LocalUser, _ sdk: isolated CofferSDK) async throws -> Int64 { 0 }

    func creditsClaimed(_ claim: ClaimResponse, of grant: GrantBody) -> Int64 {
        claim.grant.claimedAt != nil ? grant.credits : 0
    }

    func grantCancelled(_ grant: GrantBody, _ sdk: isolated CofferSDK) async throws -> Int64 { 0 }

    func takeBackCancelledGrants(token: String, _ sdk: isolated CofferSDK) async throws -> Int64 { 0 }

    func applyMailbox(_ sdk: isolated CofferSDK) async throws -> Int { 0 }

    func syncBackup(_ sdk: isolated CofferSDK) async throws -> BackupDecision { .upToDate }

    func backupStatus(_ sdk: isolated CofferSDK) async throws -> CofferSDK.BackupStatus { .notNeeded }
}
