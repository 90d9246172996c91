import CofferCore
import CofferLedgerSQLite
import Foundation
import GRDB

/// The install's user as the device ledger knows it: the identity the server gave, kept in the credential store.
struct LocalUser: Sendable, Hashable {
    /// The ledger's id for the user.
    var id: UUID
    /// The Support ID shown in the app.
    var supportId: SupportID
    /// The `appAccountToken` the app passes to StoreKit.
    var appAccountToken: UUID
}

/// The device wallet's ledger: the core's rules over a small SQLite schema of the SDK's own (the install's
/// users and the ledger's tables, ``LedgerTables``), written through the same write context as the server's
/// store, so a purchase, a refund or a grant does on the device exactly what it does on the server.
///
/// A file written by an earlier SDK, which kept the server's whole schema here, is read as it is: its ledger
/// tables are the same.
final class DeviceLedger: Sendable {
    let queue: DatabaseQueue
    /// Whether `users` is the server's table (an earlier SDK's file), which also wants a token hash.
    private let legacyUsers: Bool

    /// Opens (creating and migrating if needed) the ledger at `path`.
    init(path: String) throws {
        var configuration = Configuration()
        configuration.busyMode = .timeout(10)
        // Write-ahead logging: a change commits with one flush of the log (a rollback journal flushed the journal
        // and the file, then deleted the journal: several flushes per hand of a game), durable all the same.
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA journal_mode = WAL")
            try db.execute(sql: "PRAGMA synchronous = FULL")
        }
        queue = try DatabaseQueue(path: path, configuration: configuration)
        var migrator = DatabaseMigrator()
        migrator.registerMigration("device v1 users, ledger") { db in
            // An earlier SDK's file has the ledger's tables already, in the server's schema.
            guard try !db.tableExists("users") else { return }
            try db.execute(sql: Self.users + LedgerTables.v1)
        }
        migrator.registerMigration("device v2 data environment") { db in
            guard try !db.columns(in: "receipts").contains(where: { $0.name == "data_environment" }) else { return }
            try db.execute(sql: LedgerTables.v2)
        }
        migrator.registerMigration("device v3 payment") { db in
            guard try !db.columns(in: "receipts").contains(where: { $0.name == "price" }) else { return }
            try db.execute(sql: LedgerTables.v3)
        }
        migrator.registerMigration("device v4 delivered before Coffer") { db in
            guard try !db.columns(in: "receipts").contains(where: { $0.name == "delivered_before_coffer" }) else {
                return
            }
            try db.execute(sql: LedgerTables.v4)
        }
        migrator.registerMigration("device v5 Xcode's data") { db in
            guard try !db.columns(in: "receipts").contains(where: { $0.name == "signed_by_xcode" }) else { return }
            try db.execute(sql: LedgerTables.v5)
        }
        migrator.registerMigration("device v6 several currencies") { db in
            // Each other currency a ledger of its own beside the default's, whose tables (and every balance kept
            // before) stay as they are.
            guard try !db.tableExists("currency_wallets") else { return }
            try db.execute(sql: LedgerTables.v6)
        }
        try migrator.migrate(queue)
        legacyUsers = try queue.read { db in try db.columns(in: "users").contains { $0.name == "token_hash" } }
    }

    /// The install's users: the one the credential store names (a new one if the item is lost).
    static let users = """
        CREATE TABLE users (
            id TEXT PRIMARY KEY NOT NULL,
            environment TEXT NOT NULL CHECK (environment IN ('Sandbox', 'Production')),
            support_id TEXT NOT NULL,
            app_account_token TEXT NOT NULL,
            created_at INTEGER NOT NULL,
            UNIQUE (environment, support_id)
        );

        """

    /// The user with this Support ID in `environment`.
    func user(supportId: SupportID, environment: AppStoreEnvironment) async throws -> LocalUser? {
        try await queue.read { db in
            try Row.fetchOne(
                db, sql: "SELECT id, app_account_token FROM users WHERE environment = ? AND support_id = ?",
                arguments: [environment.rawValue, supportId.rawValue]
            ).map { row in
                LocalUser(
                    id: try RowValue.uuid(row, "id"), supportId: supportId,
                    appAccountToken: try RowValue.uuid(row, "app_account_token"))
            }
        }
    }

    /// Records the install's user, with an empty wallet.
    func createUser(_ user: LocalUser, environment: AppStoreEnvironment, at date: Date) async throws {
        let legacy = legacyUsers
        try await queue.write { db in
            try db.execute(
                sql: """
                    INSERT INTO users (id, environment, support_id, app_account_token, created_at\(legacy ? ", token_hash" : ""))
                    VALUES (?, ?, ?, ?, ?\(legacy ? ", ?" : ""))
                    """,
                arguments: StatementArguments(
                    [
                        user.id.uuidString, environment.rawValue, user.supportId.rawValue,
                        user.appAccountToken.uuidString, Millis.from(date),
                    ] + (legacy ? ["device:" + user.supportId.rawValue] : []) as [any DatabaseValueConvertible]))
            try db.execute(
                sql: "INSERT INTO wallets (user_id, balance, deficit) VALUES (?, 0, 0)", arguments: [user.id.uuidString]
            )
        }
    }

    /// Gives an existing user (the provisional one of a first launch offline) the server's Support ID and
    /// account token.
    func adopt(_ user: LocalUser, environment: AppStoreEnvironment) async throws {
        try await queue.write { db in
            try db.execute(
                sql: "UPDATE users SET support_id = ?, app_account_token = ? WHERE id = ? AND environment = ?",
                arguments: [
                    user.supportId.rawValue, user.appAccountToken.uuidString, user.id.uuidString, environment.rawValue,
                ])
        }
    }

    /// Applies one ledger request in its own commit.
    ///
    /// - Returns: The result once durable.
    /// - Throws: ``LedgerError`` when the ledger refuses it (nothing changes then), or a storage failure.
    @discardableResult
    func apply(_ request: LedgerRequest) async throws -> LedgerResult {
        try await queue.write { db in
            var context = SQLiteLedgerContext(db: db)
            return try LedgerWriter.apply(request, in: &context)
        }.get()
    }

    /// Applies requests in one commit, in order (a purchase in every currency its product gives): every one, or,
    /// when the ledger refuses one, none. With `expected`, only while the requests' user's balance in each of its
    /// currencies (`nil`: the default's) is the one given, checked in the change's own transaction, so nothing applied
    /// in between is undone.
    ///
    /// - Returns: Each request's result once durable.
    /// - Throws: The first ``LedgerError``, or ``SDKError/balanceMoved(expected:actual:)`` for a currency whose
    ///   balance is another (nothing changes then); a storage failure.
    @discardableResult
    func apply(_ requests: [LedgerRequest], ifBalancesAre expected: [Currency?: Int64] = [:]) async throws
        -> [LedgerResult]
    {
        do {
            return try await queue.write { db in
                var context = SQLiteLedgerContext(db: db)
                if let first = requests.first {
                    for (currency, balance) in expected {
                        let actual =
                            try context.wallet(owner: first.owner, environment: first.environment, currency: currency)?
                            .balance ?? 0
                        guard actual == balance else { throw SDKError.balanceMoved(expected: balance, actual: actual) }
                    }
                }
                var results: [LedgerResult] = []
                for request in requests {
                    switch try LedgerWriter.apply(request, in: &context) {
                    case .success(let result): results.append(result)
                    case .failure(let refusal):
                        // Nothing of the group stays: the transaction rolls back.
                        throw DeviceLedgerRefusal(refusal: refusal)
                    }
                }
                return results
            }
        } catch let refused as DeviceLedgerRefusal {
            throw refused.refusal
        }
    }

    /// Applies a change only while the user's balance in the request's currency is `expected`, checked in the
    /// change's own transaction, so nothing applied in between (a grant, a refund, support's edit) is undone.
    ///
    /// - Throws: ``SDKError/balanceMoved(expected:actual:)`` when the balance is another, changing nothing.
    func apply(_ request: LedgerRequest, ifBalanceIs expected: Int64) async throws -> LedgerResult {
        try await apply([request], ifBalancesAre: [request.currency: expected])[0]
    }

    /// The user's wallet of a currency (`nil`: the default's; empty for an unknown user).
    func wallet(owner: UUID, environment: AppStoreEnvironment, currency: Currency? = nil) async throws -> Wallet {
        try await queue.read { db in
            try SQLiteLedgerContext(db: db).wallet(owner: owner, environment: environment, currency: currency)
                ?? .empty
        }
    }

    /// The user's wallets of the other currencies than the default, by currency (those it holds).
    func currencyWallets(owner: UUID, environment: AppStoreEnvironment) async throws -> [Currency: Wallet] {
        try await queue.read { db in
            try SQLiteLedgerContext(db: db).currencyWallets(owner: owner, environment: environment)
        }
    }

    /// The receipt of a transaction in a currency's ledger (`nil`: the default's).
    func receipt(transactionId: String, environment: AppStoreEnvironment, currency: Currency? = nil) async throws
        -> Receipt?
    {
        try await queue.read { db in
            try SQLiteLedgerContext(db: db).receipt(
                transactionId: transactionId, environment: environment, currency: currency)
        }
    }

    /// The currencies other than the default whose ledgers hold a receipt of the transaction.
    func receiptCurrencies(transactionId: String, environment: AppStoreEnvironment) async throws -> [Currency] {
        try await queue.read { db in
            try SQLiteLedgerContext(db: db).receiptCurrencies(transactionId: transactionId, environment: environment)
        }
    }

    /// The user's entries in a currency's ledger (`nil`: the default's), oldest first.
    func entries(owner: UUID, environment: AppStoreEnvironment, currency: Currency? = nil) async throws
        -> [LedgerEntry]
    {
        try await queue.read { db in
            try SQLiteLedgerContext(db: db).entries(owner: owner, environment: environment, currency: currency)
        }
    }

    /// The user's receipts, oldest purchase first.
    func receipts(owner: UUID, environment: AppStoreEnvironment) async throws -> [Receipt] {
        try await queue.read { db in try SQLiteLedgerContext(db: db).receipts(owner: owner, environment: environment) }
    }
}

/// A group of requests the ledger refused one of, rolling the group's transaction back.
private struct DeviceLedgerRefusal: Error {
    let refusal: LedgerError
}
