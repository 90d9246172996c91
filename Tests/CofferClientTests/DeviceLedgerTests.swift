import CofferCore
import CofferLedgerSQLite
import CofferStore
import CofferStoreSQLite
import Foundation
import GRDB
import Testing

@testable import CofferClient

/// The SDK's own ledger on the device, and what the SDK brings into an app.
@Suite("Device ledger")
struct DeviceLedgerTests {
    static let start = Date(timeIntervalSince1970: 1_767_225_600)

    static func temporaryFile() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("coffer-device-\(UUID().uuidString).sqlite").path
    }

    static func purchase(_ id: String, credits: Int64, owner: UUID) -> LedgerRequest {
        let fact = TransactionFact(
            transactionId: id, productId: "com.example.credits", quantity: 1, purchaseDate: start)
        return LedgerRequest(owner: owner, environment: .sandbox, event: .purchase(fact, credits: credits), at: start)
    }

    @Test("the core's rules on the device's own schema: delivered once, refunds taken back with a deficit")
    func rules() async throws {
        let ledger = try DeviceLedger(path: Self.temporaryFile())
        let user = LocalUser(id: UUID(), supportId: try #require(SupportID("_abc123def456")), appAccountToken: UUID())
        try await ledger.createUser(user, environment: .sandbox, at: Self.start)
        #expect(try await ledger.user(supportId: user.supportId, environment: .sandbox) == user)
        #expect(try await ledger.user(supportId: user.supportId, environment: .production) == nil)
        #expect(try await ledger.apply(Self.purchase("t1", credits: 100, owner: user.id)).outcome == .applied)
        #expect(try await ledger.apply(Self.purchase("t1", credits: 100, owner: user.id)).outcome == .duplicate)
        try await ledger.apply(
            LedgerRequest(owner: user.id, environment: .sandbox, event: .spend(key: "s", amount: 60), at: Self.start))
        var refunded = try #require(try await ledger.receipt(transactionId: "t1", environment: .sandbox)).transaction
        refunded.revocationDate = Self.start
        try await ledger.apply(
            LedgerRequest(owner: user.id, environment: .sandbox, event: .revocation(refunded), at: Self.start))
        #expect(try await ledger.wallet(owner: user.id, environment: .sandbox) == Wallet(balance: 0, deficit: 60))
        #expect(
            try await ledger.entries(owner: user.id, environment: .sandbox).map(\.key.kind) == [
                .purchase, .spend, .revocation,
            ])
        #expect(try await ledger.receipts(owner: user.id, environment: .sandbox).map(\.status) == [.revoked])
        // An overdraft is refused and changes nothing.
        await #expect(throws: LedgerError.self) {
            try await ledger.apply(
                LedgerRequest(owner: user.id, environment: .sandbox, event: .spend(key: "x", amount: 1), at: Self.start)
            )
        }
    }

    @Test("a ledger file an earlier SDK wrote in the server's schema is read as it is, and takes a new user")
    func earlierFile() async throws {
        let path = Self.temporaryFile()
        let supportId = try #require(SupportID("_0123456789ab"))
        let earlier = User(
            environment: .sandbox, supportId: supportId, tokenHash: "device:_0123456789ab", createdAt: Self.start)
        do {
            let store = try SQLiteStore(path: path)
            try await store.createUser(earlier)
            _ = try await store.apply(Self.purchase("t1", credits: 250, owner: earlier.id))
        }
        let ledger = try DeviceLedger(path: path)
        let found = try #require(try await ledger.user(supportId: supportId, environment: .sandbox))
        #expect(found.id == earlier.id)
        #expect(found.appAccountToken == earlier.appAccountToken)
        #expect(try await ledger.wallet(owner: earlier.id, environment: .sandbox).balance == 250)
        #expect(try await ledger.apply(Self.purchase("t1", credits: 250, owner: earlier.id)).outcome == .duplicate)
        let next = LocalUser(id: UUID(), supportId: try #require(SupportID("_fedcba987654")), appAccountToken: UUID())
        try await ledger.createUser(next, environment: .sandbox, at: Self.start)
        #expect(try await ledger.apply(Self.purchase("t2", credits: 5, owner: next.id)).wallet.balance == 5)
    }

    @Test(
        "a device file from before several currencies: its balance stays the default currency's, gems a ledger of their own; a group applies whole or not at all"
    )
    func severalCurrencies() async throws {
        let path = Self.temporaryFile()
        let user = LocalUser(id: UUID(), supportId: try #require(SupportID("_abc123def456")), appAccountToken: UUID())
        // The file as an SDK before several currencies left it: its five migrations, a user holding 70.
        do {
            let queue = try DatabaseQueue(path: path)
            try await queue.write { db in
                try db.execute(
                    sql: DeviceLedger.users + LedgerTables.v1 + LedgerTables.v2 + LedgerTables.v3 + LedgerTables.v4
                        + LedgerTables.v5)
                try db.execute(sql: "CREATE TABLE grdb_migrations (identifier TEXT NOT NULL PRIMARY KEY)")
                for name in [
                    "device v1 users, ledger", "device v2 data environment", "device v3 payment",
                    "device v4 delivered before Coffer", "device v5 Xcode's data",
                ] {
                    try db.execute(sql: "INSERT INTO grdb_migrations (identifier) VALUES (?)", arguments: [name])
                }
                try db.execute(
                    sql: """
                        INSERT INTO users (id, environment, support_id, app_account_token, created_at)
                        VALUES (?, 'Sandbox', ?, ?, 0)
                        """, arguments: [user.id.uuidString, user.supportId.rawValue, user.appAccountToken.uuidString])
                try db.execute(
                    sql: "INSERT INTO wallets (user_id, balance, deficit) VALUES (?, 70, 0)",
                    arguments: [user.id.uuidString])
            }
        }
        let ledger = try DeviceLedger(path: path)
        #expect(try await ledger.wallet(owner: user.id, environment: .sandbox) == Wallet(balance: 70))
        let gems = try #require(Currency(rawValue: "gems"))
        var coins = Self.purchase("t1", credits: 100, owner: user.id)
        var gemPart = coins
        gemPart.currency = gems
        gemPart.event = .purchase(try #require(coins.event.transaction), credits: 5)
        #expect(try await ledger.apply([coins, gemPart]).map(\.outcome) == [.applied, .applied])
        #expect(try await ledger.wallet(owner: user.id, environment: .sandbox) == Wallet(balance: 170))
        #expect(try await ledger.currencyWallets(owner: user.id, environment: .sandbox) == [gems: Wallet(balance: 5)])
        #expect(try await ledger.entries(owner: user.id, environment: .sandbox, currency: gems).count == 1)
        #expect(try await ledger.receipt(transactionId: "t1", environment: .sandbox, currency: gems) != nil)
        // A group the ledger refuses one of changes nothing: the coins' part is rolled back with it.
        coins = Self.purchase("t2", credits: 100, owner: user.id)
        let overdraft = LedgerRequest(
            owner: user.id, environment: .sandbox, event: .spend(key: "s", amount: 6), at: Self.start, currency: gems)
        await #expect(throws: LedgerError.insufficientBalance(balance: 5, requested: 6)) {
            try await ledger.apply([coins, overdraft])
        }
        #expect(try await ledger.wallet(owner: user.id, environment: .sandbox) == Wallet(balance: 170))
        // Checked against its own currency's balance.
        let spend = LedgerRequest(
            owner: user.id, environment: .sandbox, event: .spend(key: "s", amount: 2), at: Self.start, currency: gems)
        #expect(try await ledger.apply(spend, ifBalanceIs: 5).wallet == Wallet(balance: 3))
        // Opened again: migrated once.
        _ = try DeviceLedger(path: path)
        #expect(try await ledger.currencyWallets(owner: user.id, environment: .sandbox) == [gems: Wallet(balance: 3)])
    }
}
