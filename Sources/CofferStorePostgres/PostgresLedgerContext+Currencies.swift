import CofferCore
import CofferStore
import Foundation
import Logging
import PostgresNIO

/// The ledgers of the currencies other than the default (``PostgresCurrencyTables``).
extension PostgresLedgerContext {
    /// Another currency's wallet (empty before the ledger wrote it), receipt and entry in one round trip. The
    /// user's default wallet row is locked, as every write of the user's ledgers does, so the currency's wallet
    /// (which may have no row yet) is never written by two transactions at once.
    func loadCurrency(
        owner: UUID, environment: AppStoreEnvironment, transactionId: String?, key: IdempotencyKey,
        currency: Currency
    ) async throws -> (wallet: Wallet, receipt: Receipt?, existing: LedgerEntry?)? {
        try await PostgresStore.first(
            connection,
            """
            SELECT \(unescaped: Self.stateColumns.replacingOccurrences(
                of: "w.balance AS w_balance, w.deficit AS w_deficit",
                with: "coalesce(w.balance, 0) AS w_balance, coalesce(w.deficit, 0) AS w_deficit"))
            FROM users u JOIN wallets dw ON dw.user_id = u.id
            LEFT JOIN currency_wallets w ON w.user_id = u.id AND w.credit_currency = \(currency.rawValue)
            LEFT JOIN currency_receipts r ON r.environment = \(environment.rawValue)
                AND r.transaction_id = \(transactionId) AND r.credit_currency = \(currency.rawValue)
            LEFT JOIN currency_entries e ON e.environment = \(environment.rawValue) AND e.owner = u.id
                AND e.credit_currency = \(currency.rawValue) AND e.key = \(key.rawValue)
            WHERE u.id = \(owner.uuidString) AND u.environment = \(environment.rawValue) AND u.merged_into IS NULL
            FOR UPDATE OF dw
            """, logger: logger
        ) { postgresRow in
            var state = try Self.state(postgresRow.makeRandomAccess())
            state.existing?.currency = currency
            return (state.wallet, state.receipt, state.existing)
        }
    }

    /// Saves a decision in another currency's ledger: the wallet and the new entry in one statement, the receipt
    /// (which may lose a race) in another.
    func saveCurrency(
        _ decision: LedgerDecision, owner: UUID, environment: AppStoreEnvironment, currency: Currency
    ) async throws {
        let wallet = decision.wallet
        if decision.appendsEntry, let entry = decision.entry {
            try await connection.query(
                """
                WITH wallet AS (
                    INSERT INTO currency_wallets (user_id, credit_currency, balance, deficit)
                    VALUES (\(owner.uuidString), \(currency.rawValue), \(wallet.balance), \(wallet.deficit))
                    ON CONFLICT (user_id, credit_currency) DO UPDATE SET
                        balance = excluded.balance, deficit = excluded.deficit
                )
                INSERT INTO currency_entries (environment, owner, credit_currency, key, kind, amount, balance_delta,
                    deficit_delta, balance_after, deficit_after, transaction_id, product_id, reason, created_at,
                    data_environment, signed_by_xcode)
                VALUES (\(environment.rawValue), \(owner.uuidString), \(currency.rawValue), \(entry.key.rawValue),
                    \(entry.key.kind.rawValue), \(entry.amount), \(entry.balanceDelta), \(entry.deficitDelta),
                    \(entry.walletAfter.balance), \(entry.walletAfter.deficit), \(entry.transactionId),
                    \(entry.productId), \(entry.reason), \(Millis.from(entry.createdAt)),
                    \(entry.dataEnvironment?.rawValue), \(entry.signedByXcode))
                """, logger: logger)
        } else {
            try await connection.query(
                """
                INSERT INTO currency_wallets (user_id, credit_currency, balance, deficit)
                VALUES (\(owner.uuidString), \(currency.rawValue), \(wallet.balance), \(wallet.deficit))
                ON CONFLICT (user_id, credit_currency) DO UPDATE SET
                    balance = excluded.balance, deficit = excluded.deficit
                """, logger: logger)
        }
        guard let receipt = decision.receipt else { return }
        // A receipt another user's transaction committed since it was read is not overwritten: the write runs again.
        let written = try await PostgresStore.exists(
            connection, try Self.receiptWrite(receipt, environment: environment, currency: currency), logger: logger)
        guard written else { throw LostRace() }
    }

    /// The user's wallets of the currencies other than the default that the ledger wrote, by currency.
    func currencyWallets(owner: UUID) async throws -> [Currency: Wallet] {
        var wallets: [Currency: Wallet] = [:]
        for try await (currency, balance, deficit) in try await connection.query(
            "SELECT credit_currency, balance, deficit FROM currency_wallets WHERE user_id = \(owner.uuidString)",
            logger: logger
        ).decode((String, Int64, Int64).self) {
            wallets[try Rows.currency(currency)] = Wallet(balance: balance, deficit: deficit)
        }
        return wallets
    }

    /// ``receiptConflict`` for another currency's receipts.
    static let currencyReceiptConflict = receiptConflict(
        table: "currency_receipts", key: "environment, transaction_id, credit_currency")
}
