import ArgumentParser
import CofferCore
import CofferStore
import CofferStoreSQLite
import Foundation

/// `coffer ledger ...`: read a user's ledger in a local database.
struct LedgerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ledger",
        abstract: "Show and check ledgers in a local database.",
        subcommands: [Show.self, Check.self]
    )

    /// `coffer ledger show SUPPORT_ID`: a user's wallet and every entry.
    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show a user's balance, deficit and entries.")

        @Argument(help: "The user's Support ID, e.g. _abc123def456.")
        var supportId: String

        @OptionGroup var options: DatabaseOptions

        @Flag(help: "Print JSON instead of a table.")
        var json = false

        func run() async throws {
            let (store, environment) = try LedgerCommand.open(options)
            guard let id = SupportID(supportId) else { throw CommandFailure("not a Support ID: \(supportId)") }
            guard let user = try await store.user(supportId: id, environment: environment) else {
                throw CommandFailure("no user \(id) in \(environment.rawValue)")
            }
            let wallet = try await store.wallet(owner: user.id, environment: environment)
            var entries = try await store.entries(owner: user.id, environment: environment)
            // Each other currency's ledger after the default's, its entries saying their currency.
            var others: [LedgerReport.Other] = []
            for (currency, wallet) in try await store.currencyWallets(owner: user.id, environment: environment)
                .sorted(by: { $0.key < $1.key })
            {
                let own = try await store.entries(owner: user.id, environment: environment, currency: currency)
                others.append(LedgerReport.Other(currency: currency, wallet: wallet, entries: own))
                entries += own
            }
            if json {
                let report = LedgerReport(
                    supportId: id, environment: environment, wallet: wallet,
                    entries: entries.filter { $0.currency == nil }, otherCurrencies: others.isEmpty ? nil : others)
                return print(try JSONText.encode(report))
            }
            print("\(id)  \(environment.rawValue)  balance \(wallet.balance)  deficit \(wallet.deficit)")
            for other in others {
                print("\(other.currency)  balance \(other.wallet.balance)  deficit \(other.wallet.deficit)")
            }
            var columns = ["when (UTC)", "key", "amount", "balance", "deficit", "data", "reason"]
            if !others.isEmpty { columns.insert("currency", at: 2) }
            var table = TextTable(columns)
            for entry in entries {
                var row = [
                    JSONText.timestamp(entry.createdAt), entry.key.rawValue, String(entry.amount),
                    String(entry.walletAfter.balance), String(entry.walletAfter.deficit),
                    entry.dataMark?.rawValue ?? "", entry.reason ?? "",
                ]
                if !others.isEmpty { row.insert(entry.currency?.rawValue ?? "default", at: 2) }
                table.add(row)
            }
            print(entries.isEmpty ? "no entries" : table.render())
        }
    }

    /// `coffer ledger check`: audit every user's ledger.
    struct Check: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Check every user's ledger: no key twice, wallets follow from entries, sums add up.")

        @OptionGroup var options: DatabaseOptions

        func run() async throws {
            let (store, environment) = try LedgerCommand.open(options)
            let pageSize = 500
            var offset = 0
            var checked = 0
            var problems = 0
            while true {
                let users = try await store.users(
                    environment: environment, supportIdPrefix: nil, limit: pageSize, offset: offset)
                for user in users {
                    let wallet = try await store.wallet(owner: user.id, environment: environment)
                    let entries = try await store.entries(owner: user.id, environment: environment)
                    for problem in LedgerAudit.discrepancies(entries: entries, wallet: wallet) {
                        print("\(user.supportId): \(problem)")
                        problems += 1
                    }
                    // Each other currency is a ledger of its own, checked the same way.
                    for (currency, wallet) in try await store.currencyWallets(owner: user.id, environment: environment)
                    {
                        let entries = try await store.entries(
                            owner: user.id, environment: environment, currency: currency)
                        for problem in LedgerAudit.discrepancies(entries: entries, wallet: wallet) {
                            print("\(user.supportId) \(currency): \(problem)")
                            problems += 1
                        }
                    }
                    checked += 1
                }
                guard users.count == pageSize else { break }
                offset += pageSize
            }
            print("checked \(checked) users in \(environment.rawValue): \(problems) problems")
            if problems > 0 { throw ExitCode(1) }
        }
    }

    static func open(_ options: DatabaseOptions) throws -> (SQLiteStore, AppStoreEnvironment) {
        guard let environment = AppStoreEnvironment(name: options.environment) else {
            throw CommandFailure("unknown environment \(options.environment): use Sandbox or Production")
        }
        guard FileManager.default.fileExists(atPath: options.database) else {
            throw CommandFailure("no database at \(options.database)")
        }
        return (try SQLiteStore(path: options.database), environment)
    }
}

private struct LedgerReport: Encodable {
    /// Another currency's ledger.
    struct Other: Encodable {
        var currency: Currency
        var wallet: Wallet
        var entries: [LedgerEntry]
    }

    var supportId: SupportID
    var environment: AppStoreEnvironment
    var wallet: Wallet
    var entries: [LedgerEntry]
    var otherCurrencies: [Other]?
}

/// `coffer migrate`: create or upgrade a local database.
struct MigrateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate", abstract: "Create or upgrade the SQLite database and list its migrations.")

    @Option(help: "The SQLite database file.")
    var database: String = "coffer.sqlite"

    func run() async throws {
        let store = try SQLiteStore(path: database)
        for name in try store.appliedMigrations() { print("applied: \(name)") }
        print("\(database) is up to date")
    }
}
