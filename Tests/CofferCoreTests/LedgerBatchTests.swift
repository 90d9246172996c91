import CofferCore
import CofferTestSupport
import Foundation
import PropertyBased
import Testing

/// Several users' ledgers in memory, each user's in two currencies (the default, `nil`, and gems), written
/// through ``LedgerWriteContext`` as SQLite writes them: one request after another.
private struct Books: LedgerWriteContext, Equatable {
    struct Account: Hashable {
        var owner: UUID
        var currency: Currency?
    }
    struct Transaction: Hashable {
        var id: String
        var currency: Currency?
    }
    var users: Set<UUID> = []
    var wallets: [Account: Wallet] = [:]
    var receipts: [Transaction: Receipt] = [:]
    var entries: [LedgerEntry] = []

    func wallet(owner: UUID, environment: AppStoreEnvironment, currency: Currency?) -> Wallet? {
        users.contains(owner) ? wallets[Account(owner: owner, currency: currency)] ?? .empty : nil
    }
    func receipt(transactionId: String, environment: AppStoreEnvironment, currency: Currency?) -> Receipt? {
        receipts[Transaction(id: transactionId, currency: currency)]
    }
    func entry(owner: UUID, environment: AppStoreEnvironment, key: IdempotencyKey, currency: Currency?)
        -> LedgerEntry?
    {
        entries.first { $0.owner == owner && $0.key == key && $0.currency == currency }
    }

    mutating func save(
        _ decision: LedgerDecision, owner: UUID, environment: AppStoreEnvironment, currency: Currency?
    ) {
        wallets[Account(owner: owner, currency: currency)] = decision.wallet
        if let receipt = decision.receipt {
            receipts[Transaction(id: receipt.transaction.transactionId, currency: currency)] = receipt
        }
        if decision.appendsEntry, let entry = decision.entry { entries.append(entry) }
    }

    /// The state each request needs, as it stands before the batch (what PostgreSQL's one read returns).
    func states(_ requests: [LedgerRequest]) -> [LedgerWriter.State?] {
        requests.map { request in
            wallet(owner: request.owner, environment: request.environment, currency: request.currency).map { wallet in
                LedgerWriter.State(
                    wallet: wallet,
                    receipt: request.event.transaction.flatMap {
                        receipt(
                            transactionId: $0.transactionId, environment: request.environment,
                            currency: request.currency)
                    },
                    existing: entry(
                        owner: request.owner, environment: request.environment, key: request.event.key,
                        currency: request.currency))
            }
        }
    }

    /// Writes what a batch decided (what PostgreSQL's one write does).
    mutating func write(_ batch: LedgerWriter.BatchWrite) {
        for (owner, currency, wallet) in batch.wallets { wallets[Account(owner: owner, currency: currency)] = wallet }
        for (_, currency, receipt) in batch.receipts {
            receipts[Transaction(id: receipt.transaction.transactionId, currency: currency)] = receipt
        }
        entries += batch.entries.map(\.entry)
    }
}

@Suite("Ledger batches")
struct LedgerBatchTests {
    static let users = (0..<3).map { UUID(uuidString: "00000000-0000-0000-0000-00000000000\($0)")! }
    static let gems = Currency(rawValue: "gems")!

    @Test("a batch decided from the state before it equals its requests applied one after another")
    func batchEqualsSequence() async {
        await propertyCheck(
            count: 500, input: Gen.int(in: 0...Int(Int32.max)).array(of: 1...40), Gen.int(in: 0...Int(Int32.max))
        ) { codes, split in
            var sequential = Books()
            var batched = Books()
            for user in Self.users.prefix(2) {
                sequential.users.insert(user)
                batched.users.insert(user)
            }
            // Each request by one of three users (the third unknown), in the default currency or gems, the codes
            // cut into batches.
            let requests = codes.enumerated().map { position, code in
                LedgerRequest(
                    owner: Self.users[(code >> 13) % 3], environment: .sandbox, event: RandomEvent(code).event,
                    policy: position % 5 == 0 ? .forgive : .collect, at: Fixture.start,
                    currency: (code >> 17) % 3 == 0 ? Self.gems : nil)
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
                for currency in [nil, Self.gems] {
                    let entries = batched.entries.filter { $0.owner == user && $0.currency == currency }
                    let wallet = batched.wallets[Books.Account(owner: user, currency: currency)] ?? .empty
                    #expect(LedgerAudit.discrepancies(entries: entries, wallet: wallet) == [])
                }
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
