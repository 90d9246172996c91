import CofferCore
import CofferTestSupport
import Foundation
import PropertyBased
import Testing

/// Several users' ledgers in memory, written through ``LedgerWriteContext`` as SQLite writes them: one request
/// after another.
private struct Books: LedgerWriteContext, Equatable {
    var wallets: [UUID: Wallet] = [:]
    var receipts: [String: Receipt] = [:]
    var entries: [LedgerEntry] = []

    func wallet(owner: UUID, environment: AppStoreEnvironment) -> Wallet? { wallets[owner] }
    func receipt(transactionId: String, environment: AppStoreEnvironment) -> Receipt? { receipts[transactionId] }
    func entry(owner: UUID, environment: AppStoreEnvironment, key: IdempotencyKey) -> LedgerEntry? {
        entries.first { $0.owner == owner && $0.key == key }
    }

    mutating func save(_ decision: LedgerDecision, owner: UUID, environment: AppStoreEnvironment) {
        wallets[owner] = decision.wallet
        if let receipt = decision.receipt { receipts[receipt.transaction.transactionId] = receipt }
        if decision.appendsEntry, let entry = decision.entry { entries.append(entry) }
    }

    /// The state each request needs, as it stands before the batch (what PostgreSQL's one read returns).
    func states(_ requests: [LedgerRequest]) -> [LedgerWriter.State?] {
        requests.map { request in
            wallets[request.owner].map { wallet in
                LedgerWriter.State(
                    wallet: wallet, receipt: request.event.transaction.flatMap { receipts[$0.transactionId] },
                    existing: entry(owner: request.owner, environment: request.environment, key: request.event.key))
            }
        }
    }

    /// Writes what a batch decided (what PostgreSQL's one write does).
    mutating func write(_ batch: LedgerWriter.BatchWrite) {
        for (owner, wallet) in batch.wallets { wallets[owner] = wallet }
        for (_, receipt) in batch.receipts { receipts[receipt.transaction.transactionId] = receipt }
        entries += batch.entries.map(\.entry)
    }
}

@Suite("Ledger batches")
struct LedgerBatchTests {
    static let users = (0..<3).map { UUID(uuidString: "00000000-0000-0000-0000-00000000000\($0)")! }

    @Test("a batch decided from the state before it equals its requests applied one after another")
    func batchEqualsSequence() async {
        await propertyCheck(
            count: 500, input: Gen.int(in: 0...Int(Int32.max)).array(of: 1...40), Gen.int(in: 0...Int(Int32.max))
        ) { codes, split in
            var sequential = Books()
            var batched = Books()
            for user in Self.users.prefix(2) {
                sequential.wallets[user] = .empty
                batched.wallets[user] = .empty
            }
            // Each request by one of three users (the third unknown), the codes cut into batches.
            let requests = codes.enumerated().map { position, code in
                LedgerRequest(
                    owner: Self.users[(code >> 13) % 3], environment: .sandbox, event: RandomEvent(code).event,
                    policy: position % 5 == 0 ? .forgive : .collect, at: Fixture.start)
            }
            var cursor = 0
            var cut = split
            while cursor < requests.count {
                let size = min(requests.count - cursor, cut % 9 + 1)
                cut /= 3
                if cut == 0 { cut = split }
                let batch = Array(requests[cursor..<(cursor + size)])
                cursor += size

                let expected = batch.map { request in
                    (try? LedgerWriter.apply(request, in: &sequential)) ?? .failure(.unknownUser(request.owner))
                }
                let (results, write) = LedgerWriter.decide(batch: batch, states: batched.states(batch))
                batched.write(write)
                #expect(results == expected)
                #expect(batched == sequential)
            }
            for user in Self.users.prefix(2) {
                #expect(
                    LedgerAudit.discrepancies(
                        entries: batched.entries.filter { $0.owner == user }, wallet: batched.wallets[user] ?? .empty)
                        == [])
            }
        }
    }

    @Test("a batch writes each wallet and receipt once, as it ends, and its entries in order")
    func writesOnce() throws {
        let user = Self.users[0]
        let fact = Fixture.consumable("t1")
        var refunded = fact
        refunded.revocationDate = Fixture.start.addingTimeInterval(60)
        let requests = [
            LedgerRequest(owner: user, environment: .sandbox, event: .purchase(fact, credits: 100), at: Fixture.start),
            LedgerRequest(owner: user, environment: .sandbox, event: .purchase(fact, credits: 100), at: Fixture.start),
            LedgerRequest(owner: user, environment: .sandbox, event: .revocation(refunded), at: Fixture.start),
            LedgerRequest(
                owner: user, environment: .sandbox, event: .grant(id: "g", credits: 5, reason: "r"), at: Fixture.start),
        ]
        let state = LedgerWriter.State(wallet: .empty, receipt: nil, existing: nil)
        let (results, write) = LedgerWriter.decide(batch: requests, states: Array(repeating: state, count: 4))
        #expect(try results.map { try $0.get().outcome } == [.applied, .duplicate, .applied, .applied])
        #expect(write.wallets.count == 1 && write.wallets.first?.wallet == Wallet(balance: 5, deficit: 0))
        #expect(write.receipts.count == 1 && write.receipts.first?.receipt.isRevoked == true)
        #expect(write.entries.map(\.entry.key.kind) == [.purchase, .revocation, .grant])
    }
}
