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
    static let receiptConflict = """
        ON CONFLICT (environment, transaction_id) DO UPDATE SET (original_transaction_id, quantity,
            purchase_date, expires_date, revocation_date, family_shared, trial, upgraded, delivered_credits,
            delivered_at, revoked_at, taken_from_balance, added_to_deficit, reversed_at)
            = (excluded.original_transaction_id, excluded.quantity, excluded.purchase_date,
            excluded.expires_date, excluded.revocation_date, excluded.family_shared, excluded.trial,
            excluded.upgraded, excluded.delivered_credits, excluded.delivered_at, excluded.revoked_at,
            excluded.taken_from_balance, excluded.added_to_deficit, excluded.reversed_at),
            signed_by_xcode = CASE WHEN excluded.data_environment IS NULL THEN receipts.signed_by_xcode
                ELSE excluded.signed_by_xcode END,
            data_environment = COALESCE(excluded.data_environment, receipts.data_environment),
            price = excluded.price, currency = excluded.currency, storefront = excluded.storefront,
            revocation_reason = excluded.revocation_reason,
            delivered_before_coffer = excluded.delivered_before_coffer
        WHERE receipts.owner = excluded.owner
        RETURNING 1
        """

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
    func load(owner: UUID, environment: AppStoreEnvironment, transactionId: String?, key: IdempotencyKey) async throws
        -> (wallet: Wallet, receipt: Receipt?, existing: LedgerEntry?)?
    {
        try await PostgresStore.first(
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

    func save(_ decision: LedgerDecision, owner: UUID, environment: AppStoreEnvironment) async throws {
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
            let fact = receipt.transaction
            // A receipt another user's transaction committed since it was read is not overwritten: the
            // insert does nothing, the update matches no row of this owner, and the write runs again.
            let written = try await PostgresStore.exists(
                connection,
                """
                INSERT INTO receipts (environment, transaction_id, owner, original_transaction_id, product_id,
                    quantity, purchase_date, expires_date, revocation_date, family_shared, trial, upgraded,
                    delivered_credits, delivered_at, revoked_at, taken_from_balance, added_to_deficit, reversed_at,
                    data_environment, price, currency, storefront, revocation_reason, delivered_before_coffer,
                    signed_by_xcode)
                VALUES (\(environment.rawValue), \(fact.transactionId), \(receipt.owner.uuidString),
                    \(fact.originalTransactionId), \(fact.productId), \(fact.quantity),
                    \(Millis.from(fact.purchaseDate)), \(fact.expiresDate.map(Millis.from)),
                    \(fact.revocationDate.map(Millis.from)), \(fact.isFamilyShared), \(fact.isTrial),
                    \(fact.isUpgraded), \(receipt.deliveredCredits), \(receipt.deliveredAt.map(Millis.from)),
                    \(receipt.revokedAt.map(Millis.from)), \(receipt.takenFromBalance), \(receipt.addedToDeficit),
                    \(receipt.reversedAt.map(Millis.from)), \(fact.environment?.rawValue), \(fact.price),
                    \(fact.currency), \(fact.storefront), \(fact.revocationReason.map(Int64.init)),
                    \(receipt.deliveredBeforeCoffer), \(fact.signedByXcode))
                \(unescaped: Self.receiptConflict)
                """, logger: logger)
            guard written else { throw LostRace() }
        }
    }
}
