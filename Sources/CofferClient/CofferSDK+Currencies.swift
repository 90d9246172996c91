import CofferAPI
import CofferCore
import Foundation

extension CofferSDK {
    /// Credits that end, of one currency: what is left of a grant's with an end or of a subscription period's
    /// allowance (``CofferSDK/expiring()``).
    public struct Expiring: Sendable, Hashable {
        /// The currency, by its catalog id.
        public var currency: String
        /// What is left.
        public var amount: Int64
        /// When what is left ends.
        public var expiresAt: Date

        /// Credits that end.
        public init(currency: String, amount: Int64, expiresAt: Date) {
            self.currency = currency
            self.amount = amount
            self.expiresAt = expiresAt
        }
    }

    /// Every currency's balance by id (the catalog's `currencies`; the default currency's is ``balance()``): the
    /// server's in the server wallet, the local ledger's in the device wallet.
    ///
    /// ```swift
    /// let gems = try await coffer.balances()["gems"] ?? 0
    /// ```
    ///
    /// - Throws: ``SDKError/serverRequired(_:)`` or ``ServerClientError`` when the server wallet's server is out of
    ///   reach.
    public func balances() async throws -> [String: Int64] {
        try await currencyWallet().balances
    }

    /// Credits that end, what is left of each, soonest first: support's grants with an end and a subscription's
    /// allowance for the period (the server wallet's; they are in ``balances()`` too, and spent first). Show them, so
    /// a customer knows what ends when. The device wallet keeps no credits that end (support's grants with an end and
    /// allowances are the server wallet's): none.
    ///
    /// ```swift
    /// for credits in try await coffer.expiring() {
    ///     Text("\(credits.amount) \(credits.currency) end \(credits.expiresAt, style: .relative)")
    /// }
    /// ```
    ///
    /// - Throws: ``SDKError/serverRequired(_:)`` or ``ServerClientError`` when the server wallet's server is out of
    ///   reach.
    public func expiring() async throws -> [Expiring] {
        try await currencyWallet().expiring
    }

    /// Every currency's balance and the credits that end, in one reading of the server's (the server wallet's) or
    /// of the local ledger's (the device wallet's).
    func currencyWallet() async throws -> (balance: Int64, balances: [String: Int64], expiring: [Expiring]) {
        let defaultId = catalog.defaultCurrency.rawValue
        guard configuration.wallet == .server else {
            let wallets = try await localWallets()
            return (
                wallets[catalog.defaultCurrency]?.balance ?? 0,
                Dictionary(uniqueKeysWithValues: wallets.map { ($0.key.rawValue, $0.value.balance) }), []
            )
        }
        let me = try await signedIn { try await server.me(token: $0) }
        keepWallet(Wallet(balance: me.balance, deficit: 0))
        // A server from before several currencies answers the default's balance alone, and nothing that ends.
        let expiring = (me.expiring ?? []).compactMap { credits in
            (try? Date(credits.expiresAt, strategy: .iso8601)).map {
                Expiring(currency: credits.currency, amount: credits.amount, expiresAt: $0)
            }
        }
        return (me.balance, me.balances ?? [defaultId: me.balance], expiring)
    }

    /// Spends credits of one currency by id, once per `key` and currency (give the same key when retrying the same
    /// spend): from the local ledger in the device wallet (then backed up), through the server in the server
    /// wallet. The default currency's spend is ``spend(_:key:)``.
    ///
    /// - Returns: That currency's balance after the spend.
    /// - Throws: ``SDKError/currencyNotKept(_:)`` for a currency the catalog does not list;
    ///   `LedgerError.insufficientBalance` when the balance holds less (nothing is spent); ``ServerClientError`` when
    ///   the server wallet's server is out of reach.
    @discardableResult
    public func spend(_ amount: Int64, of currency: String, key: String = UUID().uuidString.lowercased())
        async throws -> Int64
    {
        guard let kept = try ledgerCurrency(currency) else { return try await spend(amount, key: key) }
        guard amount > 0, amount <= Ledger.maximumAmount else { throw LedgerError.invalidAmount(amount) }
        guard configuration.wallet == .server else {
            return try await applyLocally(.spend(key: key, amount: amount), currency: kept, inPlay: true).wallet.balance
        }
        let balance = try await signedIn { token in
            do {
                return try await server.spend(amount: amount, key: key, token: token, currency: currency).balance
            } catch ServerClientError.refused(_, "insufficient-balance", _) {
                let balance = try await server.me(token: token).balances?[currency] ?? 0
                throw LedgerError.insufficientBalance(balance: balance, requested: amount)
            } catch ServerClientError.refused(_, "key-reused", _) {
                throw LedgerError.keyReused(IdempotencyKey(.spend, key))
            }
        }
        publish(.wallet)
        return balance
    }

    /// Device wallet: credits of one currency by id won in play, added once per `key` and currency (give the same key
    /// when retrying the same win), then backed up (``SDKConfiguration/backupDelay``). The default currency's is
    /// ``earn(_:key:)``.
    ///
    /// ```swift
    /// try await coffer.earn(3, of: "gems", key: "level-12")
    /// ```
    ///
    /// - Returns: That currency's balance after.
    /// - Throws: ``SDKError/currencyNotKept(_:)`` for a currency the catalog does not list;
    ///   ``SDKError/deviceWalletOnly(_:)`` in the server wallet; `LedgerError.keyReused` for a key used before with
    ///   another amount.
    @discardableResult
    public func earn(_ amount: Int64, of currency: String, key: String) async throws -> Int64 {
        guard let kept = try ledgerCurrency(currency) else { return try await earn(amount, key: key) }
        guard configuration.wallet == .device else {
            throw SDKError.deviceWalletOnly("earn: in the server wallet credits come from the server (grants)")
        }
        guard amount > 0, amount <= Ledger.maximumAmount else { throw LedgerError.invalidAmount(amount) }
        let result = try await applyLocally(
            .adjustment(id: "earn:" + key, delta: amount, reason: "earned in play"), currency: kept, inPlay: true)
        return result.wallet.balance
    }

    /// The ledger's currency for a catalog id: `nil` for the default currency (its ledger is the default's).
    ///
    /// - Throws: ``SDKError/currencyNotKept(_:)`` for an id the catalog does not list.
    func ledgerCurrency(_ id: String) throws -> Currency? {
        if id == catalog.defaultCurrency.rawValue { return nil }
        guard let currency = catalog.currencies.first(where: { $0.id.rawValue == id })?.id else {
            throw SDKError.currencyNotKept("the catalog does not list \(id.prefix(40))")
        }
        return currency
    }
}
