import CofferCore
import CofferStore
import Foundation
import Logging
import PostgresNIO

/// The ledger's read and write steps inside one PostgreSQL transaction.
struct PostgresLedgerContext: AsyncLedgerWriteContext {
    /// What a receipt written again keeps and takes, in a delivery's write and in a batch's: Apple's facts and the
    /// delivery's outcome are the latest; the data's environment and the Xcode mark stay unless the write knows
    /// them; a receipt of another owner is never overwritten (nothing is returned then).
    static let receiptConflict = receiptConflict(table: "receipts", key: "environment, transaction_id")

    /// ``receiptConflict`` of a receipts table keyed by `key`.
    static func receiptConflict(table: String, key: String) -> String {
        """
        ON CONFLICT (\(key)) DO UPDATE SET (original_transaction_id, quantity,
            purchase_date, expires_date, revocation_date, family_shared, trial, upgraded, delivered_credits,
            delivered_at, revoked_at, taken_from_balance, added_to_deficit, reversed_at)
            = (excluded.original_transaction_id, excluded.quantity, excluded.purchase_date,
            excluded.expires_date, excluded.revocation_date, excluded.family_shared, excluded.trial,
            excluded.upgraded, excluded.delivered_credits, excluded.delivered_at, excluded.revoked_at,
            excluded.taken_from_balance, excluded.added_to_deficit, excluded.reversed_at),
            signed_by_xcode = CASE WHEN excluded.data_environment IS NULL THEN \(table).signed_by_xcode
                ELSE excluded.signed_by_xcode END,
            data_environment = COALESCE(excluded.data_environment, \(table).data_environment),
            price = excluded.price, currency = excluded.currency, storefront = excluded.storefront,
            revocation_reason = excluded.revocation_reason,
            delivered_before_coffer = excluded.delivered_before_coffer
        WHERE \(table).owner = excluded.owner
        RETURNING 1
        """
    }

    let connection: PostgresConnection
    let logger: Logger

    /// The columns a request's state is read from: the wallet `w`, the receipt `r` and the entry `e`, prefixed.
    static let stateColumns = """
        w.balance AS w_balance, w.deficit AS w_deficit,
            r.transaction_id AS r_transaction_id, r.owner AS r_owner,
            r.original_transaction_id AS r_original_transaction_id, r.product_id AS r_product_id,
            r.quantity AS r_quantity, r.purchase_date AS r_purchase_date, r.expires_date AS r_expires_date,
            r.revocation_date AS r_revocation_date, r.family_shared AS r_family_shared, r.trial AS r_trial,
            r.upgraded AS r_upgraded, r.delivered_credits AS r_delivered_credits,
            r.delivered_at AS r_delivered_at, r.revoked_at AS r_revoked_at,
            r.taken_from_balance AS r_taken_from_balance, r.added_to_deficit AS r_added_to_deficit,
            r.reversed_at AS r_reversed_at, r.data_environment AS r_data_environment, r.price AS r_price,
            r.currency AS r_currency, r.storefront AS r_storefront, r.revocation_reason AS r_revocation_reason,
            r.delivered_before_coffer AS r_delivered_before_coffer, r.signed_by_xcode AS r_signed_by_xcode,
            e.owner AS e_owner, e.key AS e_key, e.amount AS e_amount, e.balance_delta AS e_balance_delta,
            e.deficit_delta AS e_deficit_delta, e.balance_after AS e_balance_after,
            e.deficit_after AS e_deficit_after, e.transaction_id AS e_transaction_id,
            e.product_id AS e_product_id, e.reason AS e_reason, e.created_at AS e_created_at,
            e.data_environment AS e_data_environment, e.signed_by_xcode AS e_signed_by_xcode
        """

    /// A request's state from a row of ``stateColumns``.
    static func state(_ row: PostgresRandomAccessRow) throws -> LedgerWriter.State {
        let wallet = Wallet(balance: try Rows.value(row, "w_balance"), deficit: try Rows.value(row, "w_deficit"))
        let receipt =
            try Rows.value(row, "r_transaction_id", as: String?.self) == nil ? nil : try Rows.receipt(row, prefix: "r_")
        let entry = try Rows.value(row, "e_key", as: String?.self) == nil ? nil : try Rows.entry(row, prefix: "e_")
        return LedgerWriter.State(wallet: wallet, receipt: receipt, existing: entry)
    }

    /// The wallet (locked), the receipt and the entry in one round trip: the receipt and the entry are
    /// joined to the wallet row, their columns prefixed `r_` and `e_`.
    func load(
        owner: UUID, environment: AppStoreEnvironment, transactionId: String?, key: IdempotencyKey,
        currency: Currency? = nil
    ) async throws -> (wallet: Wallet, receipt: Receipt?, existing: LedgerEntry?)? {
        if let currency {
            return try await loadCurrency(
                owner: owner, environment: environment, transactionId: transactionId, key: key, currency: currency)
        }
        return try await PostgresStore.first(
            connection,
            """
            SELECT \(unescaped: Self.stateColumns)
            FROM users u JOIN wallets w ON w.user_id = u.id
            LEFT JOIN receipts r ON r.environment = \(environment.rawValue) AND r.transaction_id = \(transactionId)
            LEFT JOIN ledger_entries e ON e.environment = \(environment.rawValue) AND e.owner = u.id
                AND e.key = \(key.rawValue)
            WHERE u.id = \(owner.uuidString) AND u.environment = \(environment.rawValue) AND u.merged_into IS NULL
            FOR UPDATE OF w
            """, logger: logger
        ) { postgresRow in
            let state = try Self.state(postgresRow.makeRandomAccess())
            return (state.wallet, state.receipt, state.existing)
        }
    }

    func save(
        _ decision: LedgerDecision, owner: UUID, environment: AppStoreEnvironment, currency: Currency? = nil
    ) async throws {
        if let currency {
            return try await saveCurrency(decision, owner: owner, environment: environment, currency: currency)
        }
        // The wallet and the new entry in one statement; the receipt (which may lose a race) in another.
        if decision.appendsEntry, let entry = decision.entry {
            try await connection.query(
                """
                WITH wallet AS (
                    UPDATE wallets SET balance = \(decision.wallet.balance), deficit = \(decision.wallet.deficit)
                    WHERE user_id = \(owner.uuidString)
                )
                INSERT INTO ledger_entries (environment, owner, key, kind, amount, balance_delta, deficit_delta,
                    balance_after, deficit_after, transaction_id, product_id, reason, created_at, data_environment,
                    signed_by_xcode)
                VALUES (\(environment.rawValue), \(owner.uuidString), \(entry.key.rawValue), \(entry.key.kind.rawValue),
                    \(entry.amount), \(entry.balanceDelta), \(entry.deficitDelta), \(entry.walletAfter.balance),
                    \(entry.walletAfter.deficit), \(entry.transactionId), \(entry.productId), \(entry.reason),
                    \(Millis.from(entry.createdAt)), \(entry.dataEnvironment?.rawValue), \(entry.signedByXcode))
                """, logger: logger)
        } else {
            try await connection.query(
                """
                UPDATE wallets SET balance = \(decision.wallet.balance), deficit = \(decision.wallet.deficit)
                WHERE user_id = \(owner.uuidString)
                """, logger: logger)
        }
        if let receipt = decision.receipt {
            // A receipt another user's transaction committed since it was read is not overwritten: the
            // insert does nothing, the update matches no row of this owner, and the write runs again.
            let written = try await PostgresStore.exists(
                connection, try Self.receiptWrite(receipt, environment: environment, currency: nil), logger: logger)
            guard written else { throw LostRace() }
        }
    }

    /// Writes a receipt into a currency's ledger (`nil`: the default's), never over another owner's (no row
    /// comes back then).
    static func receiptWrite(_ receipt: Receipt, environment: AppStoreEnvironment, currency: Currency?) throws
        -> PostgresQuery
    {
        let fact = receipt.transaction
        var binds = PostgresBindings(capacity: 26)
        binds.append(environment.rawValue)
        binds.append(fact.transactionId)
        binds.append(receipt.owner.uuidString)
        binds.append(fact.originalTransactionId)
        binds.append(fact.productId)
        binds.append(Int64(fact.quantity))
        binds.append(Millis.from(fact.purchaseDate))
        binds.append(fact.expiresDate.map(Millis.from))
        binds.append(fact.revocationDate.map(Millis.from))
        binds.append(fact.isFamilyShared)
        binds.append(fact.isTrial)
        binds.append(fact.isUpgraded)
        binds.append(receipt.deliveredCredits)
        binds.append(receipt.deliveredAt.map(Millis.from))
        binds.append(receipt.revokedAt.map(Millis.from))
        binds.append(receipt.takenFromBalance)
        binds.append(receipt.addedToDeficit)
        binds.append(receipt.reversedAt.map(Millis.from))
        binds.append(fact.environment?.rawValue)
        binds.append(fact.price)
        binds.append(fact.currency)
        binds.append(fact.storefront)
        binds.append(fact.revocationReason.map(Int64.init))
        binds.append(receipt.deliveredBeforeCoffer)
        binds.append(fact.signedByXcode)
        if let currency { binds.append(currency.rawValue) }
        let marks = (1...binds.count).map { "$\($0)" }.joined(separator: ", ")
        let sql = """
            INSERT INTO \(currency == nil ? "receipts" : "currency_receipts") (environment, transaction_id, owner,
                original_transaction_id, product_id, quantity, purchase_date, expires_date, revocation_date,
                family_shared, trial, upgraded, delivered_credits, delivered_at, revoked_at, taken_from_balance,
                added_to_deficit, reversed_at, data_environment, price, currency, storefront, revocation_reason,
                delivered_before_coffer, signed_by_xcode\(currency == nil ? "" : ", credit_currency"))
            VALUES (\(marks))
            \(currency == nil ? receiptConflict : currencyReceiptConflict)
            """
        return PostgresQuery(unsafeSQL: sql, binds: binds)
    }
}
