import CofferCore
import CofferStore
import CofferStoreSQLite
import Foundation
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
}
