import CofferCore
import CofferStore
import Foundation

/// Group commit for the server: ledger requests from concurrent HTTP requests are collected while the
/// previous batch commits, and applied together in one ``LedgerStore/apply(_:)`` call, one durable
/// commit. Each request is still decided on its own (a refusal changes nothing); a storage failure fails
/// the batch, and each caller answers 5xx so its client retries (every request is idempotent).
///
/// Requests are applied in a stable order by user, so concurrent batches on PostgreSQL take the users'
/// wallet locks in one order and do not deadlock; one user's requests keep the order they came in.
public actor LedgerBatcher {
    private typealias Results = [Result<LedgerResult, LedgerError>]

    private struct Submission {
        var requests: [LedgerRequest]
        var continuation: CheckedContinuation<Results, any Error>
    }

    private let store: any CofferStore
    private let maximumBatch: Int
    private let writers: Int
    private var waiting: [Submission] = []
    private var running = 0

    /// Creates a batcher.
    ///
    /// - Parameters:
    ///   - store: Where batches are applied.
    ///   - maximumBatch: The most requests one commit takes.
    ///   - writers: How many batches may commit at once (1 for SQLite's single writer; more for PostgreSQL).
    public init(store: any CofferStore, maximumBatch: Int = 256, writers: Int = 1) {
        self.store = store
        self.maximumBatch = max(1, maximumBatch)
        self.writers = max(1, writers)
    }

    /// Applies requests in a shared commit.
    ///
    /// - Returns: One result per request, in order, once durable.
    /// - Throws: A storage failure, in which case nothing of the batch was applied.
    public func apply(_ requests: [LedgerRequest]) async throws -> [Result<LedgerResult, LedgerError>] {
        guard !requests.isEmpty else { return [] }
        return try await withCheckedThrowingContinuation { continuation in
            waiting.append(Submission(requests: requests, continuation: continuation))
            if running < writers {
                running += 1
                Task { await drain() }
            }
        }
    }

    private func drain() async {
        while !waiting.isEmpty {
            var batch: [Submission] = []
            var count = 0
            while let next = waiting.first, batch.isEmpty || count + next.requests.count <= maximumBatch {
                batch.append(waiting.removeFirst())
                count += next.requests.count
            }
            let flat = batch.flatMap(\.requests)
            let order = flat.indices.sorted { (flat[$0].owner.uuidString, $0) < (flat[$1].owner.uuidString, $1) }
            do {
                let sortedResults = try await store.apply(order.map { flat[$0] })
                guard sortedResults.count == flat.count else {
                    throw StoreError.storage("the store answered \(sortedResults.count) of \(flat.count) requests")
                }
                var results = [Result<LedgerResult, LedgerError>?](repeating: nil, count: flat.count)
                for (position, index) in order.enumerated() { results[index] = sortedResults[position] }
                let answered = results.compactMap { $0 }  // `order` is a permutation: every slot is filled
                var start = 0
                for submission in batch {
                    let end = start + submission.requests.count
                    submission.continuation.resume(returning: Array(answered[start..<end]))
                    start = end
                }
            } catch {
                for submission in batch { submission.continuation.resume(throwing: error) }
            }
        }
        running -= 1
    }
}
