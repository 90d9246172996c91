// swift-format-ignore-file: AllPublicDeclarationsHaveDocumentation

// The public methods here are the store protocols' requirements, documented there (`CofferStore/Stores`).
import CofferCore
import CofferStore
import Foundation
import Logging
import PostgresNIO

/// Credits that expire (``CreditLot``) on PostgreSQL: a row per lot, `credit_currency` empty for the default
/// currency's (as the SQLite store's).
enum PostgresCreditLotTables {
    static let sql = """
        CREATE TABLE credit_lots (
            environment TEXT NOT NULL,
            owner TEXT NOT NULL REFERENCES users (id),
            credit_currency TEXT NOT NULL,
            id TEXT NOT NULL,
            granted BIGINT NOT NULL,
            remaining BIGINT NOT NULL CHECK (remaining > 0),
            expires_at BIGINT NOT NULL,
            PRIMARY KEY (environment, owner, credit_currency, id)
        );
        CREATE INDEX credit_lots_due ON credit_lots (expires_at);
        ALTER TABLE grants ADD COLUMN expires_in_days BIGINT
        """

    /// A period's allowance's subscription and start (migration v36).
    static let allowances = """
        ALTER TABLE credit_lots ADD COLUMN subscription TEXT;
        ALTER TABLE credit_lots ADD COLUMN period_start BIGINT
        """
}

extension PostgresStore {
    public func creditLots(owner: UUID, environment: AppStoreEnvironment) async throws -> [CreditLot] {
        // By the key's first columns; a customer's few lots are put in order here.
        try await all(
            """
            SELECT * FROM credit_lots WHERE environment = \(environment.rawValue) AND owner = \(owner.uuidString)
            """, Self.lot
        ).sorted { ($0.expiresAt, $0.id) < ($1.expiresAt, $1.id) }
    }

    public func expireCredits(environment: AppStoreEnvironment, owner: UUID?, at now: Date, limit: Int) async throws
        -> Int
    {
        try await write { connection in
            // The owners of the lots due, then their wallets locked in the order every writer locks them (every
            // write of lots holds its wallet's lock), then the lots read again: stable now, never locked first.
            let dueQuery: PostgresQuery = """
                SELECT * FROM credit_lots WHERE environment = \(environment.rawValue)
                    AND expires_at <= \(Millis.from(now))
                    AND (\(owner?.uuidString)::text IS NULL OR owner = \(owner?.uuidString))
                ORDER BY expires_at, id COLLATE "C" LIMIT \(max(0, limit))
                """
            var owners: Set<String> = []
            for try await row in try await connection.query(dueQuery, logger: self.logger) {
                owners.insert(try Rows.value(row.makeRandomAccess(), "owner"))
            }
            guard !owners.isEmpty else { return 0 }
            try await connection.query(
                """
                SELECT 1 FROM wallets WHERE user_id = ANY(\(owners.sorted())) ORDER BY user_id COLLATE "C" FOR UPDATE
                """, logger: self.logger)
            var due: [(AppStoreEnvironment, UUID, CreditLot)] = []
            for try await row in try await connection.query(dueQuery, logger: self.logger) {
                // A lot of a customer the first read did not name waits for the next sweep, unlocked.
                let lotOwner: String = try Rows.value(row.makeRandomAccess(), "owner")
                guard owners.contains(lotOwner) else { continue }
                due.append((environment, try Rows.uuid(row.makeRandomAccess(), "owner"), try Self.lot(row)))
            }
            let requests = CreditLotWrites.expiries(due, at: now)
            let context = PostgresLedgerContext(connection: connection, logger: self.logger)
            var results: [Result<LedgerResult, LedgerError>] = []
            for request in requests { results.append(try await LedgerWriter.apply(request, in: context)) }
            try await self.updateLots(connection, requests, results)
            // A lot whose customer the ledger no longer finds ends with nothing to take.
            for (request, result) in zip(requests, results) {
                guard case .failure = result else { continue }
                try await connection.query(
                    """
                    DELETE FROM credit_lots WHERE environment = \(environment.rawValue)
                        AND owner = \(request.owner.uuidString) AND credit_currency = \(request.currency?.rawValue ?? "")
                        AND id = \(request.event.key.id)
                    """, logger: self.logger)
            }
            return results.count { if case .success = $0 { true } else { false } }
        }
    }

    /// Keeps the lots true to what `requests` did (`results`), in the write's transaction: one read of the lots of
    /// every wallet that may change, and writes only where they did.
    func updateLots(
        _ connection: PostgresConnection, _ requests: [LedgerRequest], _ results: [Result<LedgerResult, LedgerError>]
    ) async throws {
        let touched = CreditLotWrites.touched(requests, results)
        guard !touched.isEmpty else { return }
        var lots: [CreditLotWrites.Wallet: [CreditLot]] = [:]
        for try await row in try await connection.query(
            """
            SELECT * FROM credit_lots
            WHERE environment = ANY(\(Set(touched.map(\.wallet.environment.rawValue)).sorted()))
                AND owner = ANY(\(Set(touched.map(\.wallet.owner.uuidString)).sorted()))
            """, logger: logger)
        {
            let random = row.makeRandomAccess()
            let wallet = CreditLotWrites.Wallet(
                environment: try Rows.environment(random), owner: try Rows.uuid(random, "owner"),
                currency: try Self.lot(row).currency)
            lots[wallet, default: []].append(try Self.lot(row))
        }
        for (wallet, applied) in touched {
            let before = lots[wallet] ?? []
            let updated = CreditLots.update(before, applied: applied)
            guard Set(updated) != Set(before) else { continue }
            let currency = wallet.currency?.rawValue ?? ""
            try await connection.query(
                """
                DELETE FROM credit_lots WHERE environment = \(wallet.environment.rawValue)
                    AND owner = \(wallet.owner.uuidString) AND credit_currency = \(currency)
                """, logger: logger)
            for lot in updated {
                try await connection.query(
                    """
                    INSERT INTO credit_lots (
                        environment, owner, credit_currency, id, granted, remaining, expires_at, subscription,
                        period_start)
                    VALUES (\(wallet.environment.rawValue), \(wallet.owner.uuidString), \(currency), \(lot.id),
                        \(lot.granted), \(lot.remaining), \(Millis.from(lot.expiresAt)), \(lot.subscription),
                        \(lot.periodStart.map(Millis.from)))
                    """, logger: logger)
            }
        }
    }

    /// A lot from a `credit_lots` row.
    static func lot(_ postgresRow: PostgresRow) throws -> CreditLot {
        let row = postgresRow.makeRandomAccess()
        let currency: String = try Rows.value(row, "credit_currency")
        return CreditLot(
            id: try Rows.value(row, "id"), currency: currency.isEmpty ? nil : try Rows.currency(currency),
            granted: try Rows.value(row, "granted"), remaining: try Rows.value(row, "remaining"),
            expiresAt: Millis.date(try Rows.value(row, "expires_at")),
            subscription: try Rows.value(row, "subscription"),
            periodStart: (try Rows.value(row, "period_start") as Int64?).map(Millis.date))
    }
}
