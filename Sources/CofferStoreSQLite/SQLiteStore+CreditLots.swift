// swift-format-ignore-file: AllPublicDeclarationsHaveDocumentation

// The public methods here are the store protocols' requirements, documented there (`CofferStore/Stores`).
import CofferCore
import CofferLedgerSQLite
import CofferStore
import Foundation
import GRDB

/// Credits that expire (``CreditLot``): a row per lot, `credit_currency` empty for the default currency's.
enum CreditLotTables {
    static let sql = """
        CREATE TABLE credit_lots (
            environment TEXT NOT NULL,
            owner TEXT NOT NULL REFERENCES users (id),
            credit_currency TEXT NOT NULL,
            id TEXT NOT NULL,
            granted INTEGER NOT NULL,
            remaining INTEGER NOT NULL CHECK (remaining > 0),
            expires_at INTEGER NOT NULL,
            PRIMARY KEY (environment, owner, credit_currency, id)
        ) WITHOUT ROWID;
        CREATE INDEX credit_lots_due ON credit_lots (environment, expires_at);
        ALTER TABLE grants ADD COLUMN expires_in_days INTEGER;
        """

    /// A period's allowance's subscription and start (migration v34).
    static let allowances = """
        ALTER TABLE credit_lots ADD COLUMN subscription TEXT;
        ALTER TABLE credit_lots ADD COLUMN period_start INTEGER;
        """
}

extension SQLiteStore {
    public func creditLots(owner: UUID, environment: AppStoreEnvironment) async throws -> [CreditLot] {
        try await read { db in
            // By the key's first columns; a customer's few lots are put in order here.
            try Row.fetchAll(
                db, cached: "SELECT * FROM credit_lots WHERE environment = ? AND owner = ?",
                arguments: [environment.rawValue, owner.uuidString]
            ).map(Self.lot).sorted { ($0.expiresAt, $0.id) < ($1.expiresAt, $1.id) }
        }
    }

    public func expireCredits(environment: AppStoreEnvironment, owner: UUID?, at now: Date, limit: Int) async throws
        -> Int
    {
        try await write { db in
            let rows = try Row.fetchAll(
                db,
                cached: """
                    SELECT * FROM credit_lots WHERE environment = ?1 AND expires_at <= ?2 AND (?3 IS NULL OR owner = ?3)
                    ORDER BY expires_at, id LIMIT ?4
                    """, arguments: [environment.rawValue, Millis.from(now), owner?.uuidString, max(0, limit)])
            let due = try rows.map { (environment, try RowValue.uuid($0, "owner"), try Self.lot($0)) }
            let requests = CreditLotWrites.expiries(due, at: now)
            var context = SQLiteLedgerContext(db: db, excludingMerged: true)
            let results = try requests.map { try LedgerWriter.apply($0, in: &context) }
            try Self.updateLots(db, requests, results)
            // A lot whose customer the ledger no longer finds ends with nothing to take.
            for (request, result) in zip(requests, results) {
                guard case .failure = result else { continue }
                try db.execute(
                    cached: """
                        DELETE FROM credit_lots WHERE environment = ? AND owner = ? AND credit_currency = ? AND id = ?
                        """,
                    arguments: [
                        environment.rawValue, request.owner.uuidString, request.currency?.rawValue ?? "",
                        request.event.key.id,
                    ])
            }
            return results.count { if case .success = $0 { true } else { false } }
        }
    }

    /// Keeps the lots true to what `requests` did (`results`), in the write's transaction.
    static func updateLots(_ db: Database, _ requests: [LedgerRequest], _ results: [Result<LedgerResult, LedgerError>])
        throws
    {
        for (wallet, applied) in CreditLotWrites.touched(requests, results) {
            let arguments: StatementArguments = [
                wallet.environment.rawValue, wallet.owner.uuidString, wallet.currency?.rawValue ?? "",
            ]
            let lots = try Row.fetchAll(
                db,
                cached: "SELECT * FROM credit_lots WHERE environment = ? AND owner = ? AND credit_currency = ?",
                arguments: arguments
            ).map(lot)
            let updated = CreditLots.update(lots, applied: applied)
            guard Set(updated) != Set(lots) else { continue }
            try db.execute(
                cached: "DELETE FROM credit_lots WHERE environment = ? AND owner = ? AND credit_currency = ?",
                arguments: arguments)
            for lot in updated {
                try db.execute(
                    cached: """
                        INSERT INTO credit_lots (
                            environment, owner, credit_currency, id, granted, remaining, expires_at, subscription,
                            period_start)
                        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                        """,
                    arguments: arguments + [
                        lot.id, lot.granted, lot.remaining, Millis.from(lot.expiresAt), lot.subscription,
                        lot.periodStart.map(Millis.from),
                    ])
            }
        }
    }

    /// A lot from a `credit_lots` row.
    static func lot(_ row: Row) throws -> CreditLot {
        let currency = row["credit_currency"] as String? ?? ""
        return CreditLot(
            id: row["id"], currency: currency.isEmpty ? nil : try Self.currency(currency), granted: row["granted"],
            remaining: row["remaining"], expiresAt: Millis.date(row["expires_at"]), subscription: row["subscription"],
            periodStart: (row["period_start"] as Int64?).map(Millis.date))
    }
}
