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
    /// server's in the server wallet, which keeps each currency the catalog lists; in the device wallet the local
    /// ledger's, which keeps the default currency only.
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
    /// a customer knows what ends when. The device wallet keeps no credits that end: none.
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

    /// Every currency's balance and the credits that end, in one reading of the server's (the server wallet's).
    func currencyWallet() async throws -> (balance: Int64, balances: [String: Int64], expiring: [Expiring]) {
        let defaultId = catalog.defaultCurrency.rawValue
        guard configuration.wallet == .server else {
            let balance = try await balance()
            return (balance, [defaultId: balance], [])
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
    /// spend). The default currency's spend is ``spend(_:key:)``; another currency is the server wallet's.
    ///
    /// - Returns: That currency's balance after the spend.
    /// - Throws: ``SDKError/currencyNotKept(_:)`` for a currency the catalog does not list, or another than the
    ///   default in the device wallet; `LedgerError.insufficientBalance` when the balance holds less (nothing is
    ///   spent); ``ServerClientError`` when the server is out of reach.
    @discardableResult
    public func spend(_ amount: Int64, of currency: String, key: String = UUID().uuidString.lowercased())
        async throws -> Int64
    {
        if currency == catalog.defaultCurrency.rawValue { return try await spend(amount, key: key) }
        guard catalog.currencies.contains(where: { $0.id.rawValue == currency }) else {
            throw SDKError.currencyNotKept("the catalog does not list \(currency.prefix(40))")
        }
        guard configuration.wallet == .server else {
            throw SDKError.currencyNotKept(
                "the device wallet keeps \(catalog.defaultCurrency) only: \(currency) needs the server wallet")
        }
        guard amount > 0, amount <= Ledger.maximumAmount else { throw LedgerError.invalidAmount(amount) }
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
}
