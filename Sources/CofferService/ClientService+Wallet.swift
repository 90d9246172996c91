import CofferAPI
import CofferCore
import CofferStore
import Foundation

extension ClientService {
    /// The user's backup.
    ///
    /// - Throws: ``ServiceError/noBackup`` before the first one.
    public func backup(of user: User) async throws -> BackupRecord {
        guard let record = try await store.backup(owner: user.id, environment: user.environment) else {
            throw ServiceError.noBackup
        }
        return record
    }

    /// Writes the device's backup if `precondition` holds; the user's other devices are told it moved on.
    ///
    /// - Returns: The record written, or the record on the server now when the precondition failed.
    /// - Throws: ``ServiceError/badRequest(_:)`` for a negative value or a device name over 100 characters.
    /// - Parameters:
    ///   - applied: The mailbox keys the balance holds, as the device says: at most ``BackupRecord/maximumApplied``,
    ///     kept only where they are the customer's mailbox's.
    ///   - currencies: The other currencies' wallets by id (``backupCurrencies(_:)``); `nil` keeps the server's.
    public func saveBackup(
        of user: User, value: Int64, deficit: Int64 = 0, device: String?, precondition: BackupPrecondition,
        applied: [String]? = nil, currencies: [String: BackupCurrency]? = nil
    ) async throws -> BackupSaveResult {
        try checkBackup(value: value, deficit: deficit, device: device)
        let wallets = try currencies.map(backupCurrencies)
        // A device's write says which mailbox keys its value holds; none said (an older SDK) is none.
        var kept: [String] = []
        if let applied, !applied.isEmpty {
            guard applied.count <= BackupRecord.maximumApplied, applied.allSatisfy({ $0.utf8.count <= 200 }) else {
                throw ServiceError.badRequest(
                    "applied holds at most \(BackupRecord.maximumApplied) keys of at most 200 bytes")
            }
            let mailbox = Set(try await mailbox(of: user, currencies: true).map(\.key))
            kept = Set(applied).intersection(mailbox).sorted()
        }
        let result = try await store.saveBackup(
            owner: user.id, environment: user.environment, value: value, deficit: deficit,
            precondition: precondition, writer: .device(device ?? "app"), at: dependencies.now(), applied: kept,
            currencies: wallets)
        if case .saved(let record) = result {
            await events.publish(ServerEventBody(type: .backup, key: String(record.version)), to: user.id)
        }
        return result
    }

    /// The wallets of a backup's other currencies, each a currency the catalog lists other than the default, its
    /// balance and deficit in range.
    ///
    /// - Throws: ``ServiceError/badRequest(_:)`` saying which is wrong.
    public func backupCurrencies(_ currencies: [String: BackupCurrency]) throws -> [Currency: Wallet] {
        let catalog = dependencies.catalog
        var wallets: [Currency: Wallet] = [:]
        for (id, amounts) in currencies {
            guard let currency = catalog.currencies.first(where: { $0.id.rawValue == id })?.id,
                currency != catalog.defaultCurrency
            else {
                throw ServiceError.badRequest(
                    "currencies: \(String(id.prefix(40)).debugDescription) is not one of the catalog's other currencies ("
                        + catalog.currencies.map(\.id.rawValue).filter { $0 != catalog.defaultCurrency.rawValue }
                        .joined(separator: ", ") + ")")
            }
            do {
                try checkBackup(value: amounts.value, deficit: amounts.deficit ?? 0, device: nil)
            } catch ServiceError.badRequest(let why) {
                throw ServiceError.badRequest("currencies.\(id): \(why)")
            }
            wallets[currency] = Wallet(balance: amounts.value, deficit: amounts.deficit ?? 0)
        }
        return wallets
    }

    /// Refuses a backup value or deficit below zero or past the ledger's largest amount, and a device name over
    /// 100 characters.
    ///
    /// - Throws: ``ServiceError/badRequest(_:)``.
    public func checkBackup(value: Int64, deficit: Int64 = 0, device: String?) throws {
        guard value >= 0, deficit >= 0 else { throw ServiceError.badRequest("a backup cannot be negative") }
        guard value <= Ledger.maximumAmount, deficit <= Ledger.maximumAmount else {
            throw ServiceError.badRequest("a backup is at most \(Ledger.maximumAmount)")
        }
        if let device, device.count > 100 || device.utf8.count > 400 {
            throw ServiceError.badRequest("a device name is at most 100 characters")
        }
    }

    /// The user's grants, newest first, optionally of one status. In the device wallet, where the app applies a grant
    /// itself, one in another currency than the default is listed only to an app that reads currencies
    /// (`currencies`): an older one would add gems to its coins.
    public func grants(of user: User, status: GrantStatus?, currencies: Bool = true) async throws -> [Grant] {
        let grants = try await store.grants(
            environment: user.environment, recipient: user.id, status: status, limit: 500)
        guard !currencies, configuration.wallet == .device else { return grants }
        return grants.filter { $0.currency == nil }
    }

    /// Claims a grant for the user: credited to the ledger in the server wallet, once.
    ///
    /// - Returns: The grant and the user's balance after.
    /// - Throws: ``ServiceError/notFound(_:)`` for a grant that does not exist or is another user's (nothing
    ///   about another user's grant is revealed), ``ServiceError/grantCancelled`` for one support cancelled.
    public func claimGrant(_ id: UUID?, for user: User) async throws -> (grant: Grant, balance: Int64) {
        guard let id else { throw ServiceError.notFound("no such grant") }
        let grant: Grant
        do {
            grant = try await store.claimGrant(
                id: id, recipient: user.id, environment: user.environment,
                crediting: configuration.wallet == .server ? configuration.deficitPolicy : nil, at: dependencies.now())
        } catch StoreError.notFound, StoreError.wrongUser {
            throw ServiceError.notFound("no such grant")
        } catch StoreError.cancelled {
            throw ServiceError.grantCancelled
        }
        return (grant, try await store.wallet(owner: user.id, environment: user.environment).balance)
    }

    /// The key a spend is made once by, when spending is allowed: checked before the request's body is read.
    ///
    /// - Throws: ``ServiceError/deviceWallet`` in the device wallet, ``ServiceError/badRequest(_:)`` without a
    ///   key or with one over 200 characters.
    public func spendKey(_ key: String?) throws -> String {
        guard configuration.wallet == .server else { throw ServiceError.deviceWallet }
        guard let key, !key.isEmpty, key.count <= 200 else {
            throw ServiceError.badRequest("an Idempotency-Key header is required")
        }
        return key
    }

    /// Spends credits from the server wallet, once per idempotency key.
    ///
    /// - Returns: The balance after.
    /// - Throws: ``ServiceError/deviceWallet`` in the device wallet, ``ServiceError/badRequest(_:)`` without a
    ///   key (or one over 200 characters) or a currency the catalog does not list, ``ServiceError/ledger(_:)`` when
    ///   the ledger refuses it.
    public func spend(_ amount: Int64, currency: String? = nil, key: String?, for user: User) async throws -> Int64 {
        let key = try spendKey(key)
        let catalog = dependencies.catalog
        var ledgerCurrency: Currency?
        if let currency, currency != catalog.defaultCurrency.rawValue {
            guard let listed = catalog.currencies.first(where: { $0.id.rawValue == currency })?.id else {
                let named = Currency(rawValue: currency).map { "\"\($0)\"" } ?? "(not a currency id)"
                throw ServiceError.badRequest(
                    "unknown currency \(named): this server keeps "
                        + catalog.currencies.map(\.id.rawValue).joined(separator: ", "))
            }
            // Each currency is a ledger of its own: a key spends once in each currency it names.
            ledgerCurrency = listed
        }
        // Credits whose end has come are gone before anything is spent.
        _ = try await currentLots(of: user)
        let request = LedgerRequest(
            owner: user.id, environment: user.environment, event: .spend(key: key, amount: amount),
            at: dependencies.now(), currency: ledgerCurrency)
        switch try await ledger.apply([request]).first {
        case .success(let result): return result.wallet.balance
        case .failure(let error): throw ServiceError.ledger(error)
        case nil: throw ServiceError.internalError("the ledger did not answer")
        }
    }
}

extension ClientService {
    /// The customer's credits that expire, after ending those whose end has come (each by its `expiry:<id>` entry,
    /// once): a read never shows credits past their end, even before the server's sweep reaches them.
    func currentLots(of user: User) async throws -> [CreditLot] {
        try await store.endingDueCredits(owner: user.id, environment: user.environment, at: dependencies.now())
    }
}
