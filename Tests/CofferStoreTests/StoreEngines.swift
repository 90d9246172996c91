import CofferCore
import CofferStore
import CofferStorePostgres
import CofferStoreSQLite
import CofferTestSupport
import Foundation
import Testing

/// The store engines the contract suite runs against. Each test gets a fresh, empty store.
enum StoreEngine: String, CaseIterable, CustomTestStringConvertible, Sendable {
    case memory
    case sqlite
    case postgres

    var testDescription: String { rawValue }

    /// The engines to run: PostgreSQL when `scripts/test` started a server or CI requires one (then a
    /// missing server fails each PostgreSQL case); otherwise left out, loudly.
    static var allCases: [StoreEngine] {
        if TestPostgres.url != nil || TestPostgres.required { return [.memory, .sqlite, .postgres] }
        FileHandle.standardError.write(Data("warning: \(TestPostgres.missing)\n".utf8))
        return [.memory, .sqlite]
    }

    /// A fresh database with every migration: a copy of one migrated once per test process.
    static func migratedDatabase() async throws -> String {
        try await TestPostgres.migratedDatabase { url in
            let store = try await PostgresStore(url: url, maximumConnections: 1)
            store.close()
        }
    }

    func makeStore() async throws -> any CofferStore {
        switch self {
        case .memory: return InMemoryStore()
        case .sqlite: return try TestSQLite.store(at: TemporaryDirectory.file("store.sqlite"))
        case .postgres:
            return try await PostgresStore(url: try await Self.migratedDatabase(), maximumConnections: 8)
        }
    }
}

/// A fresh temporary folder per call, under the system's temporary directory.
enum TemporaryDirectory {
    static func file(_ name: String) throws -> String {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("coffer-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return folder.appendingPathComponent(name).path
    }
}

/// Builders for the records the contract suite stores.
enum Make {
    /// 2026-01-01T00:00:00Z; every date in the suite is a whole second so all engines keep it exactly.
    static let start = Date(timeIntervalSince1970: 1_767_225_600)

    static func user(
        _ supportId: String, in environment: AppStoreEnvironment = .sandbox, createdAt offset: TimeInterval = 0
    )
        -> User
    {
        User(
            environment: environment, supportId: SupportID(supportId)!, tokenHash: "hash-\(UUID().uuidString)",
            createdAt: start.addingTimeInterval(offset))
    }

    static func fact(_ id: String, quantity: Int = 1, revoked: Bool = false) -> TransactionFact {
        TransactionFact(
            transactionId: id, originalTransactionId: "orig-\(id)", productId: "com.example.credits.400k",
            quantity: quantity,
            purchaseDate: start, expiresDate: start.addingTimeInterval(3_600),
            revocationDate: revoked ? start.addingTimeInterval(60) : nil, isFamilyShared: false, isTrial: true,
            isUpgraded: true)
    }

    /// What the ledger audit finds wrong in every currency's ledger of `user` (none for sound books).
    static func discrepancies(_ store: any CofferStore, _ user: User) async throws -> [String] {
        var found = LedgerAudit.discrepancies(
            entries: try await store.entries(owner: user.id, environment: user.environment),
            wallet: try await store.wallet(owner: user.id, environment: user.environment)
        )
        for (currency, wallet) in try await store.currencyWallets(owner: user.id, environment: user.environment) {
            let entries = try await store.entries(owner: user.id, environment: user.environment, currency: currency)
            found += LedgerAudit.discrepancies(entries: entries, wallet: wallet).map { "\(currency): \($0)" }
        }
        return found
    }

    static func purchase(_ id: String, for user: User, credits: Int64 = 400) -> LedgerRequest {
        LedgerRequest(
            owner: user.id, environment: user.environment, event: .purchase(fact(id), credits: credits), at: start)
    }
}
