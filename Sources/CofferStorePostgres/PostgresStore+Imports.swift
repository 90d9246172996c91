// swift-format-ignore-file: AllPublicDeclarationsHaveDocumentation

// The public methods here are the store protocols' requirements, documented there (`CofferStore/Stores`).
import CofferCore
import CofferStore
import Foundation
import PostgresNIO

extension PostgresStore {
    public func linkAppleAccount(_ account: AppleAccount, to user: UUID) async throws -> Bool {
        try await write { connection in
            do {
                return try await Self.exists(
                    connection,
                    """
                    UPDATE live_users SET app_transaction_id = \(account.appTransactionId),
                        app_transaction_environment = \(account.environment.rawValue)
                    WHERE id = \(user.uuidString) AND app_transaction_id IS NULL AND merged_into IS NULL
                    RETURNING 1
                    """, logger: self.logger)
            } catch let error as PSQLError where error.sqlState == "23505" {
                throw StoreError.alreadyExists("user of Apple account \(account.appTransactionId)")
            }
        }
    }

    public func recordImport(_ customer: ImportedCustomer) async throws -> ImportedCustomer {
        try await write { connection in
            try await connection.query(
                """
                INSERT INTO imported_customers (environment, source, external_id, user_id, imported_at)
                VALUES (\(customer.environment.rawValue), \(customer.source), \(customer.externalId),
                    \(customer.user.uuidString), \(Millis.from(customer.importedAt)))
                ON CONFLICT DO NOTHING
                """, logger: self.logger)
            guard
                let found = try await Self.importedCustomer(
                    connection, customer.source, customer.externalId, customer.environment, logger: self.logger)
            else { throw StoreError.storage("the imported customer just written is not on file") }
            return found
        }
    }

    public func importedCustomer(source: String, externalId: String, environment: AppStoreEnvironment) async throws
        -> ImportedCustomer?
    {
        try await read { connection in
            try await Self.importedCustomer(connection, source, externalId, environment, logger: self.logger)
        }
    }

    public func claimImport(
        source: String, externalId: String, environment: AppStoreEnvironment, keyHash: String, at date: Date
    ) async throws -> ImportedCustomer? {
        try await write { connection in
            try await connection.query(
                """
                UPDATE imported_customers SET claimed_at = \(Millis.from(date)), claim_key_hash = \(keyHash)
                WHERE environment = \(environment.rawValue) AND source = \(source) AND external_id = \(externalId)
                    AND claim_key_hash IS NULL
                """, logger: self.logger)
            guard
                let found = try await Self.importedCustomer(
                    connection, source, externalId, environment, logger: self.logger),
                found.claimKeyHash == keyHash
            else { return nil }
            return found
        }
    }

    static func importedCustomer(
        _ connection: PostgresConnection, _ source: String, _ externalId: String, _ environment: AppStoreEnvironment,
        logger: Logger
    ) async throws -> ImportedCustomer? {
        try await first(
            connection,
            """
            SELECT * FROM imported_customers
            WHERE environment = \(environment.rawValue) AND source = \(source) AND external_id = \(externalId)
            """, logger: logger
        ) { postgresRow in
            let row = postgresRow.makeRandomAccess()
            return ImportedCustomer(
                environment: environment, source: try Rows.value(row, "source"),
                externalId: try Rows.value(row, "external_id"), user: try Rows.uuid(row, "user_id"),
                importedAt: Millis.date(try Rows.value(row, "imported_at")),
                claimedAt: try Rows.date(row, "claimed_at"),
                claimKeyHash: try Rows.value(row, "claim_key_hash", as: String?.self))
        }
    }
}
