import CofferAPI
import CofferCore
import CofferStore
import Foundation

/// Support setting a customer's balance, against the balance support saw.
extension AdminService {
    /// Sets a user's balance. With the server wallet it is a ledger adjustment of the difference; with the
    /// device wallet it is an admin backup, which the app accepts as newer than its own (the backup rule).
    ///
    /// `expected` is the balance support saw (the server wallet's balance, or the device wallet's backed-up
    /// balance); the store checks it inside the edit's transaction, so a purchase, a spend or a backup landing
    /// between support's look and the edit refuses the edit instead of being overwritten.
    ///
    /// - Throws: ``AdminError/changed(_:)`` when the balance is not `expected`; ``AdminError/invalid(_:)`` for a
    ///   balance out of range or no reason (``SupportRules``).
    public func setBalance(
        environment: AppStoreEnvironment, supportId: String, balance: Int64, expected: Int64? = nil, reason: String,
        actor: String, currency: String? = nil
    )
        async throws -> BalanceChange
    {
        let balance = try Self.rule { () throws(SupportRuleError) in try SupportRules.balance(balance) }
        let reason = try Self.reason(reason)
        let currency = try ledgerCurrency(currency)
        let user = try await findChangeable(supportId, environment: environment)
        let at = now()
        // The audit entry is written in the edit's own transaction, on every engine.
        @Sendable func entries(_ change: BalanceChange) throws -> [AuditEvent] {
            guard change.before != change.after || change.via == .backup else { return [] }
            return [
                AuditEvent(
                    environment: environment, actor: actor, action: "balance.set", subject: user.supportId.rawValue,
                    before: try Self.json(BalanceAudit(balance: change.before, currency: change.currency)),
                    after: try Self.json(
                        BalanceAudit(balance: change.after, reason: reason, via: change.via, currency: change.currency)),
                    at: at)
            ]
        }
        let supportId = user.supportId.rawValue
        switch walletMode {
        case .server:
            // Credits whose end has come are gone before the balance support sets is worked out.
            _ = try await store.endingDueCredits(owner: user.id, environment: environment, at: at)
            let edit = BalanceEdit(
                owner: user.id, environment: environment, balance: balance, expected: expected,
                entryId: UUID().uuidString.lowercased(), reason: reason, at: at, currency: currency)
            let result = try await Self.refusingChanged {
                try await store.setBalance(edit) { result in
                    try entries(
                        BalanceChange(
                            supportId: supportId, before: result.before.balance, after: result.after.balance,
                            via: .ledger, currency: currency?.rawValue)
                    )
                }
            }
            if let entry = result.entry { await onChange?(user.id, .adjustment(key: entry.key.rawValue)) }
            return BalanceChange(
                supportId: supportId, before: result.before.balance, after: result.after.balance, via: .ledger,
                currency: currency?.rawValue)
        case .device:
            // Support sets the balance of one currency; the deficit the device backed up and the other currencies stay.
            // The balance support saw is checked inside the backup's transaction, where the audit entry is made.
            @Sendable func value(_ record: BackupRecord?) -> Int64 {
                guard let currency else { return record?.value ?? 0 }
                return record?.currencies[currency]?.balance ?? 0
            }
            let (current, written) = try await Self.refusingChanged {
                try await store.writeBackup(
                    owner: user.id, environment: environment,
                    { current in
                        var currencies = current?.currencies ?? [:]
                        if let currency {
                            currencies[currency] = Wallet(
                                balance: balance, deficit: currencies[currency]?.deficit ?? 0)
                        }
                        return BackupPrecondition.overwrite.write(
                            over: current, value: currency == nil ? balance : current?.value ?? 0,
                            deficit: current?.deficit ?? 0, writer: .admin(actor), at: at, currencies: currencies)
                    },
                    audit: { current, record in
                        // Before the app's first backup its balances are not known here: setting one currency would
                        // write the others as empty, which the app would take.
                        if current == nil, currency != nil || self.catalog.currencies.count > 1 {
                            throw AdminError.invalid(
                                "the app has not backed up yet: its balances are the device's until it does (ask the "
                                    + "customer to open the app, or grant the credits instead)")
                        }
                        try SupportRules.check(expected: expected, current: value(current))
                        return try entries(
                            BalanceChange(
                                supportId: supportId, before: value(current), after: value(record), via: .backup,
                                currency: currency?.rawValue))
                    })
            }
            guard let written else { throw AdminError.invalid("the backup could not be written") }
            await onChange?(user.id, .backup(version: written.version))
            return BalanceChange(
                supportId: supportId, before: value(current), after: value(written), via: .backup,
                currency: currency?.rawValue)
        }
    }

    struct BalanceAudit: Encodable, Sendable {
        var balance: Int64
        var reason: String?
        var via: BalanceChange.Via?
        /// The currency, when not the default.
        var currency: String?
    }
}
