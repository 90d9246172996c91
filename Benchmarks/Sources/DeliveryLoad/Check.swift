// The check after a run, on the database the stopped servers left: every acknowledged delivery committed
// once, every customer's balance equal to their entries, and nothing credited that was never sent.
import CofferCore
import CofferStore
import CofferStorePostgres
import CofferStoreSQLite
import Foundation

/// What the database holds after a run, against what the load was told.
struct LedgerCheck {
    var customers = 0
    var purchases = 0
    var revocations = 0
    var spends = 0
    var grants = 0
    var balance: Int64 = 0
    var deficit: Int64 = 0
    /// Acknowledged deliveries that are not in the ledger: must be none.
    var missing: [String] = []
    /// Purchases in the ledger nobody was told of: requests in flight when the load stopped (at most one per
    /// connection).
    var unacknowledged = 0
    /// Customers whose wallet differs from the sum of their entries: must be none.
    var unsound: [String] = []

    var passed: Bool { missing.isEmpty && unsound.isEmpty }

    var summary: String {
        "\(purchases) purchases, \(revocations) refunds, \(spends) spends, \(grants) grants claimed over \(customers) "
            + "customers; balances \(balance) + deficits \(deficit); acknowledged but missing: \(missing.count); "
            + "committed but not acknowledged (in flight at the stop): \(unacknowledged); wallets unlike their "
            + "entries: \(unsound.count)"
    }

    /// Reads every customer's entries and wallet.
    ///
    /// - Parameters:
    ///   - databaseURL: `sqlite:PATH` or `postgres://...`.
    ///   - customers: Everyone the run created.
    ///   - acknowledged: Transaction ids the server answered `delivered`.
    static func run(databaseURL: String, customers: [Customer], acknowledged: Set<String>) async throws -> LedgerCheck {
        let store = try await openStore(databaseURL)
        defer { (store as? PostgresStore)?.close() }
        var check = LedgerCheck()
        var purchased = Set<String>()
        for customer in customers {
            guard let supportId = SupportID(customer.supportId),
                let user = try await store.user(supportId: supportId, environment: .sandbox)
            else { throw LoadFailure("customer \(customer.supportId) is not in the database") }
            let entries = try await store.entries(owner: user.id, environment: .sandbox)
            let wallet = try await store.wallet(owner: user.id, environment: .sandbox)
            if !LedgerAudit.discrepancies(entries: entries, wallet: wallet).isEmpty {
                check.unsound.append(customer.supportId)
            }
            check.customers += 1
            check.balance += wallet.balance
            check.deficit += wallet.deficit
            for entry in entries {
                switch entry.key.kind {
                case .purchase:
                    check.purchases += 1
                    purchased.insert(entry.key.id)
                case .revocation: check.revocations += 1
                case .spend: check.spends += 1
                case .grant: check.grants += 1
                default: break
                }
            }
        }
        check.missing = acknowledged.subtracting(purchased).sorted()
        check.unacknowledged = purchased.subtracting(acknowledged).count
        return check
    }
}

/// The store at `databaseURL` (`sqlite:PATH` or `postgres://...`), opened beside the running servers.
func openStore(_ databaseURL: String) async throws -> any CofferStore {
    if databaseURL.hasPrefix("sqlite:") {
        try SQLiteStore(path: String(databaseURL.dropFirst("sqlite:".count)))
    } else {
        try await PostgresStore(url: databaseURL, maximumConnections: 8)
    }
}
