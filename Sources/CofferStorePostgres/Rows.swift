import CofferCore
import CofferStore
import Foundation
import PostgresNIO

/// Dates are stored as whole milliseconds since 1970, as in the SQLite store.
enum Millis {
    static func from(_ date: Date) -> Int64 { Milliseconds.from(date) }
    static func date(_ millis: Int64) -> Date { Milliseconds.date(millis) }
}

/// Decoding of each table's rows into Coffer's records.
enum Rows {
    /// A cell by column name.
    static func value<T: PostgresDecodable>(_ row: PostgresRandomAccessRow, _ column: String, as type: T.Type = T.self)
        throws -> T
    {
        try row[column].decode(T.self)
    }

    static func uuid(_ row: PostgresRandomAccessRow, _ column: String) throws -> UUID {
        guard let uuid = UUID(uuidString: try value(row, column, as: String.self)) else {
            throw StoreError.storage("corrupt \(column): not a UUID")
        }
        return uuid
    }

    static func date(_ row: PostgresRandomAccessRow, _ column: String) throws -> Date? {
        try value(row, column, as: Int64?.self).map(Millis.date)
    }

    static func environment(_ row: PostgresRandomAccessRow) throws -> AppStoreEnvironment {
        guard let environment = AppStoreEnvironment(rawValue: try value(row, "environment", as: String.self)) else {
            throw StoreError.storage("corrupt environment column")
        }
        return environment
    }

    /// A `data_environment` column: the environment Apple's data named, `nil` where not marked.
    static func dataEnvironment(_ row: PostgresRandomAccessRow, _ column: String) throws -> AppStoreEnvironment? {
        guard let text = try value(row, column, as: String?.self) else { return nil }
        guard let environment = AppStoreEnvironment(rawValue: text) else {
            throw StoreError.storage("corrupt \(column) column")
        }
        return environment
    }

    static func user(_ postgresRow: PostgresRow) throws -> User {
        let row = postgresRow.makeRandomAccess()
        guard let supportId = SupportID(try value(row, "support_id", as: String.self)) else {
            throw StoreError.storage("corrupt support_id in users")
        }
        return User(
            id: try uuid(row, "id"), environment: try environment(row), supportId: supportId,
            tokenHash: try value(row, "token_hash"), appAccountToken: try uuid(row, "app_account_token"),
            createdAt: Millis.date(try value(row, "created_at")), appleAccount: try appleAccount(row),
            mergedInto: try value(row, "merged_into", as: String?.self) == nil ? nil : try uuid(row, "merged_into"),
            deletedAt: try date(row, "deleted_at"))
    }

    /// The `app_transaction_id` and `app_transaction_environment` columns.
    static func appleAccount(_ row: PostgresRandomAccessRow) throws -> AppleAccount? {
        guard let id = try value(row, "app_transaction_id", as: String?.self) else { return nil }
        guard
            let environment = AppStoreEnvironment(
                rawValue: try value(row, "app_transaction_environment", as: String.self))
        else { throw StoreError.storage("corrupt app_transaction_environment in users") }
        return AppleAccount(appTransactionId: id, environment: environment)
    }

    static func receipt(_ postgresRow: PostgresRow) throws -> Receipt {
        try receipt(postgresRow.makeRandomAccess(), prefix: "")
    }

    /// A receipt from columns named with `prefix` (`r_transaction_id`, ... in a joined row).
    static func receipt(_ row: PostgresRandomAccessRow, prefix: String) throws -> Receipt {
        let fact = TransactionFact(
            transactionId: try value(row, prefix + "transaction_id"),
            originalTransactionId: try value(row, prefix + "original_transaction_id", as: String.self),
            productId: try value(row, prefix + "product_id"),
            quantity: Int(try value(row, prefix + "quantity", as: Int64.self)),
            purchaseDate: Millis.date(try value(row, prefix + "purchase_date")),
            expiresDate: try date(row, prefix + "expires_date"),
            revocationDate: try date(row, prefix + "revocation_date"),
            isFamilyShared: try value(row, prefix + "family_shared"), isTrial: try value(row, prefix + "trial"),
            isUpgraded: try value(row, prefix + "upgraded"),
            environment: try dataEnvironment(row, prefix + "data_environment"),
            price: try value(row, prefix + "price"), currency: try value(row, prefix + "currency"),
            storefront: try value(row, prefix + "storefront"),
            revocationReason: try value(row, prefix + "revocation_reason", as: Int64?.self).map {
                Int(clamping: $0)
            }, signedByXcode: try value(row, prefix + "signed_by_xcode"))
        var receipt = Receipt(owner: try uuid(row, prefix + "owner"), transaction: fact)
        receipt.deliveredCredits = try value(row, prefix + "delivered_credits")
        receipt.deliveredAt = try date(row, prefix + "delivered_at")
        receipt.revokedAt = try date(row, prefix + "revoked_at")
        receipt.takenFromBalance = try value(row, prefix + "taken_from_balance")
        receipt.addedToDeficit = try value(row, prefix + "added_to_deficit")
        receipt.reversedAt = try date(row, prefix + "reversed_at")
        receipt.deliveredBeforeCoffer = try value(row, prefix + "delivered_before_coffer")
        return receipt
    }

    static func entry(_ postgresRow: PostgresRow) throws -> LedgerEntry {
        try entry(postgresRow.makeRandomAccess(), prefix: "")
    }

    /// A ledger entry from columns named with `prefix` (`e_key`, ... in a joined row).
    static func entry(_ row: PostgresRandomAccessRow, prefix: String) throws -> LedgerEntry {
        guard let key = IdempotencyKey(rawValue: try value(row, prefix + "key")) else {
            throw StoreError.storage("corrupt ledger key")
        }
        return LedgerEntry(
            owner: try uuid(row, prefix + "owner"), key: key, amount: try value(row, prefix + "amount"),
            balanceDelta: try value(row, prefix + "balance_delta"),
            deficitDelta: try value(row, prefix + "deficit_delta"),
            walletAfter: Wallet(
                balance: try value(row, prefix + "balance_after"), deficit: try value(row, prefix + "deficit_after")),
            transactionId: try value(row, prefix + "transaction_id"), productId: try value(row, prefix + "product_id"),
            reason: try value(row, prefix + "reason"), createdAt: Millis.date(try value(row, prefix + "created_at")),
            dataEnvironment: try dataEnvironment(row, prefix + "data_environment"),
            signedByXcode: try value(row, prefix + "signed_by_xcode"),
            currency: row.contains(prefix + "credit_currency")
                ? try currency(try value(row, prefix + "credit_currency")) : nil)
    }

    /// Another currency's id from its column, refusing a corrupt one.
    static func currency(_ id: String) throws -> Currency {
        guard let currency = Currency(rawValue: id) else { throw StoreError.storage("corrupt credit_currency column") }
        return currency
    }

    static func backup(_ postgresRow: PostgresRow) throws -> BackupRecord {
        let row = postgresRow.makeRandomAccess()
        let name: String = try value(row, "writer_name")
        let writer: BackupWriter =
            try value(row, "writer_kind", as: String.self) == "admin" ? .admin(name) : .device(name)
        return BackupRecord(
            value: try value(row, "value"), lastUpdated: Millis.date(try value(row, "last_updated")),
            version: try value(row, "version"), writer: writer,
            deficit: row.contains("deficit") ? try value(row, "deficit") : 0,
            applied: row.contains("applied") ? try BackupApplied.keys(try value(row, "applied")) : [],
            currencies: row.contains("currencies")
                ? try BackupCurrencies.wallets(try value(row, "currencies", as: String?.self)) : [:])
    }

    static func backupHistoryItem(_ postgresRow: PostgresRow) throws -> BackupHistoryItem {
        BackupHistoryItem(
            record: try backup(postgresRow),
            previousValue: try value(postgresRow.makeRandomAccess(), "previous_value", as: Int64?.self))
    }

    static func admin(_ postgresRow: PostgresRow) throws -> Admin {
        let row = postgresRow.makeRandomAccess()
        return Admin(
            id: try uuid(row, "id"), name: try value(row, "name"), passwordHash: try value(row, "password_hash"),
            createdAt: Millis.date(try value(row, "created_at")),
            passwordChangedAt: Millis.date(try value(row, "password_changed_at")),
            timeZone: try value(row, "time_zone"), role: AdminRole(rawValue: try value(row, "role")) ?? .support,
            grantLimit: try value(row, "grant_limit"), twoFactorSecret: try value(row, "two_factor_secret"),
            twoFactorLastStep: try value(row, "two_factor_last_step"),
            recoveryCodeHashes: AdminColumns.codes(try value(row, "recovery_codes")),
            disabledAt: try value(row, "disabled_at", as: Int64?.self).map(Millis.date))
    }

    static func session(_ postgresRow: PostgresRow) throws -> AdminSession {
        let row = postgresRow.makeRandomAccess()
        return AdminSession(
            tokenHash: try value(row, "token_hash"), adminId: try uuid(row, "admin_id"),
            adminName: try value(row, "admin_name"), csrfToken: try value(row, "csrf_token"),
            environment: try environment(row), createdAt: Millis.date(try value(row, "created_at")),
            expiresAt: Millis.date(try value(row, "expires_at")),
            twoFactorPending: try value(row, "two_factor_pending"))
    }

    static func adminKey(_ postgresRow: PostgresRow) throws -> AdminKey {
        let row = postgresRow.makeRandomAccess()
        return AdminKey(
            id: try value(row, "id"), name: try value(row, "name"), publicKeyPEM: try value(row, "public_key_pem"),
            createdAt: Millis.date(try value(row, "created_at")), revokedAt: try date(row, "revoked_at"),
            role: AdminRole(rawValue: try value(row, "role")) ?? .support,
            grantLimit: try value(row, "grant_limit", as: Int64?.self))
    }

    static func columns(_ writer: BackupWriter) -> (String, String) {
        switch writer {
        case .device(let name): ("device", name)
        case .admin(let name): ("admin", name)
        }
    }

    static func grant(_ postgresRow: PostgresRow) throws -> Grant {
        let row = postgresRow.makeRandomAccess()
        return Grant(
            id: try uuid(row, "id"), environment: try environment(row), recipient: try uuid(row, "recipient"),
            credits: try value(row, "credits"), reason: try value(row, "reason"),
            createdBy: try value(row, "created_by"),
            createdAt: Millis.date(try value(row, "created_at")), claimedAt: try date(row, "claimed_at"),
            cancelledAt: try date(row, "cancelled_at"), cancelledBy: try value(row, "cancelled_by"),
            currency: try value(row, "credit_currency", as: String?.self).map(currency),
            expiresInDays: try value(row, "expires_in_days", as: Int64?.self).map { Int(clamping: $0) })
    }

    static func audit(_ postgresRow: PostgresRow) throws -> AuditEvent {
        let row = postgresRow.makeRandomAccess()
        return AuditEvent(
            id: try uuid(row, "id"), environment: try environment(row), actor: try value(row, "actor"),
            action: try value(row, "action"), subject: try value(row, "subject"), before: try value(row, "before"),
            after: try value(row, "after"), at: Millis.date(try value(row, "at")))
    }

    static func notification(_ postgresRow: PostgresRow) throws -> NotificationRecord {
        let row = postgresRow.makeRandomAccess()
        guard let outcome = NotificationOutcome(rawValue: try value(row, "outcome")) else {
            throw StoreError.storage("corrupt outcome in notifications")
        }
        let owner: String? = try value(row, "owner")
        return NotificationRecord(
            uuid: try value(row, "uuid"), environment: try environment(row), type: try value(row, "type"),
            subtype: try value(row, "subtype"), transactionId: try value(row, "transaction_id"),
            originalTransactionId: try value(row, "original_transaction_id"),
            owner: try owner.map { _ in try uuid(row, "owner") },
            signedDate: Millis.date(try value(row, "signed_date")),
            receivedAt: Millis.date(try value(row, "received_at")), outcome: outcome, source: try value(row, "source"))
    }

    static func renewalState(_ postgresRow: PostgresRow) throws -> RenewalState {
        let row = postgresRow.makeRandomAccess()
        return RenewalState(
            originalTransactionId: try value(row, "original_transaction_id"), environment: try environment(row),
            owner: try uuid(row, "owner"), autoRenewProductId: try value(row, "auto_renew_product_id"),
            autoRenews: try value(row, "auto_renews"), inBillingRetry: try value(row, "in_billing_retry"),
            gracePeriodExpiresDate: try date(row, "grace_period_expires_date"),
            signedDate: Millis.date(try value(row, "signed_date")))
    }
}
