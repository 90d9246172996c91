// swift-format-ignore-file: AllPublicDeclarationsHaveDocumentation

// The public methods here are the store protocols' requirements, documented there (`CofferStore/Stores`).
import CofferCore
import CofferLedgerSQLite
import CofferStore
import Foundation
import GRDB

extension SQLiteStore {
    public func linkAppleAccount(_ account: AppleAccount, to user: UUID) async throws -> Bool {
        try await write { db in
            do {
                try db.execute(
                    cached: """
                        UPDATE users SET app_transaction_id = ?, app_transaction_environment = ?
                        WHERE id = ?3 AND id IN (SELECT id FROM live_users WHERE id = ?3)
                            AND app_transaction_id IS NULL AND merged_into IS NULL
                        """,
                    arguments: [account.appTransactionId, account.environment.rawValue, user.uuidString])
                return db.changesCount > 0
            } catch let error as DatabaseError where error.resultCode == .SQLITE_CONSTRAINT {
                throw StoreError.alreadyExists("user of Apple account \(account.appTransactionId)")
            }
        }
    }

    public func recordImport(_ customer: ImportedCustomer) async throws -> ImportedCustomer {
        try await write { db in
            try db.execute(
                cached: """
                    INSERT INTO imported_customers (environment, source, external_id, user_id, imported_at)
                    VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING
                    """,
                arguments: [
                    customer.environment.rawValue, customer.source, customer.externalId, customer.user.uuidString,
                    Millis.from(customer.importedAt),
                ])
            guard let found = try Self.importedCustomer(db, customer.source, customer.externalId, customer.environment)
            else { throw StoreError.storage("the imported customer just written is not on file") }
            return found
        }
    }

    public func importedCustomer(source: String, externalId: String, environment: AppStoreEnvironment) async throws
        -> ImportedCustomer?
    {
        try await read { db in try Self.importedCustomer(db, source, externalId, environment) }
    }

    public func claimImport(
        source: String, externalId: String, environment: AppStoreEnvironment, keyHash: String, at date: Date
    ) async throws -> ImportedCustomer? {
        try await write { db in
            try db.execute(
                cached: """
                    UPDATE imported_customers SET claimed_at = ?, claim_key_hash = ?
                    WHERE environment = ? AND source = ? AND external_id = ? AND claim_key_hash IS NULL
                    """,
                arguments: [Millis.from(date), keyHash, environment.rawValue, source, externalId])
            guard let found = try Self.importedCustomer(db, source, externalId, environment),
                found.claimKeyHash == keyHash
            else { return nil }
            return found
        }
    }

    static func importedCustomer(
        _ db: Database, _ source: String, _ externalId: String, _ environment: AppStoreEnvironment
    )
        throws -> ImportedCustomer?
    {
        guard
            let row = try Row.fetchOne(
                db,
                cached: "SELECT * FROM imported_customers WHERE environment = ? AND source = ? AND external_id = ?",
                arguments: [environment.rawValue, source, externalId])
        else { return nil }
        guard let user = UUID(uuidString: row["user_id"]) else {
            throw StoreError.storage("corrupt user_id in imported_customers")
        }
        return ImportedCustomer(
            environment: environment, source: row["source"], externalId: row["external_id"], user: user,
            importedAt: Millis.date(row["imported_at"]),
            claimedAt: (row["claimed_at"] as Int64?).map(Millis.date), claimKeyHash: row["claim_key_hash"])
    }
}
