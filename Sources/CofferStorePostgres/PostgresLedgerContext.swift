import CofferCore
import CofferStore
import Foundation
import Logging
import PostgresNIO

/// The ledger's read and write steps inside one PostgreSQL transaction.
struct PostgresLedgerContext: AsyncLedgerWriteContext {
    let connection: PostgresConnection
    let logger: Logger

    func wallet(owner: UUID, environment: Environment) async throws -> Wallet? {
        // Locks the user's wallet row: this user's ledger writes run one at a time, on every instance.
        try await PostgresStore.first(
            connection,
            """
            SELECT w.balance, w.deficit FROM users u JOIN wallets w ON w.user_id = u.id
            WHERE u.id = \(owner.uuidString) AND u.environment = \(environment.rawValue) FOR UPDATE OF w
            """, logger: logger
        ) { row in
            let (balance, deficit) = try row.decode((Int64, Int64).self)
            return Wallet(balance: balance, deficit: deficit)
        }
    }

    func receipt(transactionId: String, environment: Environment) async throws -> Receipt? {
        try await PostgresStore.first(
            connection,
            """
            SELECT * FROM receipts WHERE environment = \(environment.rawValue) AND transaction_id = \(transactionId)
            """, logger: logger, Rows.receipt)
    }

    func entry(owner: UUID, environment: Environment, key: IdempotencyKey) async throws -> LedgerEntry? {
        try await PostgresStore.first(
            connection,
            """
            SELECT * FROM ledger_entries WHERE environment = \(environment.rawValue) AND owner = \(owner.uuidString)
            AND key = \(key.rawValue)
            """, logger: logger, Rows.entry)
    }

    func save(_ decision: LedgerDecision, owner: UUID, environment: Environment) async throws {
        try await connection.query(
            """
            UPDATE wallets SET balance = \(decision.wallet.balance), deficit = \(decision.wallet.deficit)
            WHERE user_id = \(owner.uuidString)
            """, logger: logger)
        if let receipt = decision.receipt {
            let fact = receipt.transaction
            // A receipt another user's transaction committed since it was read is not overwritten: the
            // insert does nothing, the update matches no row of this owner, and the write runs again.
            let written = try await PostgresStore.exists(
                connection,
                """
                INSERT INTO receipts (environment, transaction_id, owner, original_transaction_id, product_id,
                    quantity, purchase_date, expires_date, revocation_date, family_shared, trial, upgraded,
                    delivered_credits, delivered_at, revoked_at, taken_from_balance, added_to_deficit, reversed_at)
                VALUES (\(environment.rawValue), \(fact.transactionId), \(receipt.owner.uuidString),
                    \(fact.originalTransactionId), \(fact.productId), \(fact.quantity),
                    \(Millis.from(fact.purchaseDate)), \(fact.expiresDate.map(Millis.from)),
                    \(fact.revocationDate.map(Millis.from)), \(fact.isFamilyShared), \(fact.isTrial),
                    \(fact.isUpgraded), \(receipt.deliveredCredits), \(receipt.deliveredAt.map(Millis.from)),
                    \(receipt.revokedAt.map(Millis.from)), \(receipt.takenFromBalance), \(receipt.addedToDeficit),
                    \(receipt.reversedAt.map(Millis.from)))
                ON CONFLICT (environment, transaction_id) DO UPDATE SET
                    original_transaction_id = excluded.original_transaction_id, quantity = excluded.quantity,
                    purchase_date = excluded.purchase_date, expires_date = excluded.expires_date,
                    revocation_date = excluded.revocation_date, family_shared = excluded.family_shared,
                    trial = excluded.trial, upgraded = excluded.upgraded,
                    delivered_credits = excluded.delivered_credits, delivered_at = excluded.delivered_at,
                    revoked_at = excluded.revoked_at, taken_from_balance = excluded.taken_from_balance,
                    added_to_deficit = excluded.added_to_deficit, reversed_at = excluded.reversed_at
                WHERE receipts.owner = excluded.owner
                RETURNING 1
                """, logger: logger)
            guard written else { throw LostRace() }
        }
        if decision.appendsEntry, let entry = decision.entry {
            try await connection.query(
                """
                INSERT INTO ledger_entries (environment, owner, key, kind, amount, balance_delta, deficit_delta,
                    balance_after, deficit_after, transaction_id, product_id, reason, created_at)
                VALUES (\(environment.rawValue), \(owner.uuidString), \(entry.key.rawValue), \(entry.key.kind.rawValue),
                    \(entry.amount), \(entry.balanceDelta), \(entry.deficitDelta), \(entry.walletAfter.balance),
                    \(entry.walletAfter.deficit), \(entry.transactionId), \(entry.productId), \(entry.reason),
                    \(Millis.from(entry.createdAt)))
                """, logger: logger)
        }
    }
}
