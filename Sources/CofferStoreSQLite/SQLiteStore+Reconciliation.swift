// swift-format-ignore-file: AllPublicDeclarationsHaveDocumentation

// The public methods here are the store protocols' requirements, documented there (`CofferStore/Stores`).
import CofferCore
import CofferLedgerSQLite
import CofferStore
import Foundation
import GRDB

/// What the reconciliation with Apple's history keeps.
enum ReconciliationTables {
    static let sql = """
        CREATE TABLE discrepancies (
            environment TEXT NOT NULL,
            owner TEXT NOT NULL REFERENCES users (id),
            transaction_id TEXT NOT NULL,
            kind TEXT NOT NULL,
            product_id TEXT NOT NULL,
            detail TEXT NOT NULL,
            found_at INTEGER NOT NULL,
            repaired_at INTEGER,
            PRIMARY KEY (environment, owner, transaction_id, kind)
        );
        CREATE INDEX receipts_by_environment_owner ON receipts (environment, owner);
        """
}

extension SQLiteStore {
    public func reconciledCustomers(environment: AppStoreEnvironment, after: UUID?, limit: Int) async throws -> [UUID] {
        try await all(
            """
            SELECT DISTINCT owner FROM receipts WHERE environment = ? AND owner > ? ORDER BY owner LIMIT ?
            """, [environment.rawValue, after?.uuidString ?? "", max(0, limit)]
        ) { try RowValue.uuid($0, "owner") }
    }

    public func replaceDiscrepancies(
        owner: UUID, environment: AppStoreEnvironment, _ records: [DiscrepancyRecord]
    ) async throws {
        try Self.checkDiscrepancies(records, owner: owner, environment: environment)
        try await write { db in
            try db.execute(
                cached: "DELETE FROM discrepancies WHERE environment = ? AND owner = ?",
                arguments: [environment.rawValue, owner.uuidString])
            for record in records {
                try db.execute(
                    cached: """
                        INSERT OR REPLACE INTO discrepancies (environment, owner, transaction_id, kind, product_id,
                            detail, found_at, repaired_at)
                        VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                        """,
                    arguments: [
                        environment.rawValue, owner.uuidString, record.transactionId, record.kind.rawValue,
                        record.productId, record.detail, Millis.from(record.foundAt),
                        record.repairedAt.map(Millis.from),
                    ])
            }
        }
    }

    public func discrepancies(owner: UUID, environment: AppStoreEnvironment) async throws -> [DiscrepancyRecord] {
        try await all(
            """
            SELECT * FROM discrepancies WHERE environment = ? AND owner = ?
            ORDER BY transaction_id, kind LIMIT 200
            """, [environment.rawValue, owner.uuidString], Self.discrepancy)
    }

    public func swapCursor(_ name: String, environment: AppStoreEnvironment, expected: String?, value: String)
        async throws -> Bool
    {
        try await write { db in
            let current = try String.fetchOne(
                db, cached: "SELECT value FROM cursors WHERE environment = ? AND name = ?",
                arguments: [environment.rawValue, name])
            guard current == expected else { return false }
            try db.execute(
                cached: """
                    INSERT INTO cursors (environment, name, value) VALUES (?, ?, ?)
                    ON CONFLICT (environment, name) DO UPDATE SET value = excluded.value
                    """,
                arguments: [environment.rawValue, name, value])
            return true
        }
    }

    static func discrepancy(_ row: Row) throws -> DiscrepancyRecord {
        guard let kind = DiscrepancyKind(rawValue: row["kind"]) else {
            throw StoreError.storage("a discrepancy of an unknown kind: \(row["kind"] ?? "")")
        }
        return DiscrepancyRecord(
            owner: try RowValue.uuid(row, "owner"), environment: try RowValue.environment(row), kind: kind,
            transactionId: row["transaction_id"], productId: row["product_id"], detail: row["detail"],
            foundAt: Millis.date(row["found_at"]), repairedAt: (row["repaired_at"] as Int64?).map(Millis.date))
    }
}
