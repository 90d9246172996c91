import CofferCore
import CofferStore
import CofferTestSupport
import Foundation
import PropertyBased
import Synchronization
import Testing

@Suite("Store properties", .tags(.sweep))
struct StorePropertyTests {
    @Test("every engine answers a random event sequence identically and keeps sound books")
    func enginesAgree() async throws {
        // A store that fails (PostgreSQL past its deadline on a busy machine) is no counterexample to shrink: it is
        // recorded once, after the check, and the run goes on (shrinking it reran the check for twenty minutes).
        let failures = Mutex<[String]>([])
        await propertyCheck(count: 40, input: Gen.int(in: 0...Int(Int32.max)).array(of: 1...40), Gen.bool) {
            codes, forgive in
            do {
                var engines: [any CofferStore] = []
                for engine in StoreEngine.allCases { engines.append(try await engine.makeStore()) }
                let user = Make.user("_abcdef012345")
                for store in engines { try await store.createUser(user) }
                let policy: DeficitPolicy = forgive ? .forgive : .collect
                for code in codes {
                    let request = LedgerRequest(
                        owner: user.id, environment: .sandbox, event: RandomEvent(code).event, policy: policy,
                        at: Make.start)
                    var answers: [String] = []
                    for store in engines {
                        let result = try await store.apply([request])
                        answers.append(String(describing: result))
                    }
                    #expect(Set(answers).count == 1, "engines disagree on \(request.event): \(answers)")
                }
                var books: [String] = []
                for store in engines {
                    let wallet = try await store.wallet(owner: user.id, environment: .sandbox)
                    let entries = try await store.entries(owner: user.id, environment: .sandbox)
                    let receipts = try await store.receipts(owner: user.id, environment: .sandbox)
                    #expect(LedgerAudit.discrepancies(entries: entries, wallet: wallet).isEmpty)
                    books.append(
                        String(
                            describing: (
                                wallet, entries,
                                receipts.sorted { $0.transaction.transactionId < $1.transaction.transactionId }
                            )))
                }
                #expect(Set(books).count == 1, "engines hold different books")
                // The SQL engines' rollups (kept by triggers, folded or not) give the in-memory store's counts.
                var dashboards: [DashboardFigures] = []
                for (index, store) in engines.enumerated() {
                    if index % 2 == 0 { _ = try await store.foldRollups() }
                    dashboards.append(try await store.dashboard(environment: .sandbox, days: 30, now: Make.start))
                }
                #expect(Set(dashboards).count == 1, "engines' dashboards differ: \(dashboards)")
            } catch {
                failures.withLock { $0.append("\(error)") }
            }
        }
        #expect(failures.withLock { $0 }.isEmpty, "storage failed: \(failures.withLock { $0 })")
    }
}
