// swift-format-ignore-file: AllPublicDeclarationsHaveDocumentation

// The public methods here are the store protocols' requirements, documented there (`CofferStore/Stores`).
import CofferCore
import CofferStore
import Foundation
import Logging
import PostgresNIO

extension PostgresStore {
    public func reconciledCustomers(environment: AppStoreEnvironment, after: UUID?, limit: Int) async throws -> [UUID] {
        try await all(
            """
            SELECT DISTINCT owner FROM receipts
            WHERE environment = \(environment.rawValue) AND owner > \(after?.uuidString ?? "")
            ORDER BY owner LIMIT \(max(0, limit))
            """
        ) { row in
            let text = try row.decode(String.self)
            guard let id = UUID(uuidString: text) else { throw StoreError.storage("a receipt's owner is not a UUID") }
            return id
        }
    }

    public func replaceDiscrepancies(
        owner: UUID, environment: AppStoreEnvironment, _ records: [DiscrepancyRecord]
    ) async throws {
        try Self.checkDiscrepancies(records, owner: owner, environment: environment)
        try await write { connection in
            try await connection.query(
                """
                DELETE FROM discrepancies WHERE environment = \(environment.rawValue) AND owner = \(owner.uuidString)
                """, logger: self.logger)
            for record in records {
                try await connection.query(
                    """
                    INSERT INTO discrepancies (environment, owner, transaction_id, kind, product_id, detail, found_at,
                        repaired_at)
                    VALUES (\(environment.rawValue), \(owner.uuidString), \(record.transactionId),
                        \(record.kind.rawValue), \(record.productId), \(record.detail), \(Millis.from(record.foundAt)),
                        \(record.repairedAt.map(Millis.from)))
                    ON CONFLICT (environment, owner, transaction_id, kind) DO UPDATE
                        SET product_id = excluded.product_id, detail = excluded.detail,
                            found_at = excluded.found_at, repaired_at = excluded.repaired_at
                    """, logger: self.logger)
            }
        }
    }

    public func discrepancies(owner: UUID, environment: AppStoreEnvironment) async throws -> [DiscrepancyRecord] {
        try await all(
            """
            SELECT * FROM discrepancies
            WHERE environment = \(environment.rawValue) AND owner = \(owner.uuidString)
            ORDER BY transaction_id, kind LIMIT 200
            """, Self.discrepancy)
    }

    public func swapCursor(_ name: String, environment: AppStoreEnvironment, expected: String?, value: String)
        async throws -> Bool
    {
        try await write { connection in
            let rows: PostgresRowSequence
            if let expected {
                rows = try await connection.query(
                    """
                    UPDATE cursors SET value = \(value)
                    WHERE environment = \(environment.rawValue) AND name = \(name) AND value = \(expected)
                    RETURNING name
                    """, logger: self.logger)
            } else {
                rows = try await connection.query(
                    """
                    INSERT INTO cursors (environment, name, value) VALUES (\(environment.rawValue), \(name), \(value))
                    ON CONFLICT (environment, name) DO NOTHING
                    RETURNING name
                    """, logger: self.logger)
            }
            var changed = false
            for try await _ in rows { changed = true }
            return changed
        }
    }

    static func discrepancy(_ postgresRow: PostgresRow) throws -> DiscrepancyRecord {
        let row = postgresRow.makeRandomAccess()
        let kindText: String = try Rows.value(row, "kind")
        guard let kind = DiscrepancyKind(rawValue: kindText) else {
            throw StoreError.storage("a discrepancy of an unknown kind: \(kindText)")
        }
        return DiscrepancyRecord(
            owner: try Rows.uuid(row, "owner"), environment: try Rows.environment(row), kind: kind,
            transactionId: try Rows.value(row, "transaction_id"), productId: try Rows.value(row, "product_id"),
            detail: try Rows.value(row, "detail"), foundAt: Millis.date(try Rows.value(row, "found_at")),
            repairedAt: try Rows.date(row, "repaired_at"))
    }
}
