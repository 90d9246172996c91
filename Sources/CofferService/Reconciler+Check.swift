import CofferAppStore
import CofferCore
import CofferStore
import Foundation
import Logging

/// A customer whose books could not be read (Apple did not answer, a signature did not verify): their previous
/// discrepancies stay, and the next run tries again.
struct CheckFailure: Error, CustomStringConvertible {
    var description: String { reason }
    var reason: String
}

extension Reconciler {
    /// Most Apple accounts one customer's receipts are looked up under (two installs' accounts, a family's).
    static let accountsPerCustomer = 5

    /// Checks one customer: reads Apple's books, compares, repairs when asked, and keeps what was found.
    func check(_ user: User, since: Date?, repair: Bool, progress: (@Sendable (String) -> Void)?) async throws
        -> (records: [DiscrepancyRecord], appleCount: Int)
    {
        let receipts = try await store.receipts(owner: user.id, environment: environment)
        guard !receipts.isEmpty else { return ([], 0) }
        let (apple, appleTokens) = try await appleBooks(of: receipts, progress: progress)
        var heldElsewhere = Set<String>()
        let own = Set(receipts.map(\.transaction.transactionId))
        for fact in apple where !own.contains(fact.transactionId) {
            if let receipt = try await store.receipt(transactionId: fact.transactionId, environment: environment),
                receipt.owner != user.id
            {
                heldElsewhere.insert(fact.transactionId)
            }
        }
        let catalog = intake.dependencies.catalog
        let books = LedgerReconciliation.Books(
            apple: apple, ledger: receipts, heldElsewhere: heldElsewhere, appAccountToken: user.appAccountToken,
            appleTokens: appleTokens, isLive: user.isLive, customerEnvironment: user.appleAccount?.environment)
        let found = LedgerReconciliation.discrepancies(books, sells: { catalog.product(id: $0) != nil }, since: since)
        var records: [DiscrepancyRecord] = []
        for discrepancy in found {
            var record = DiscrepancyRecord(
                owner: user.id, environment: environment, kind: discrepancy.kind,
                transactionId: discrepancy.transactionId, productId: discrepancy.productId,
                detail: discrepancy.detail, foundAt: now)
            if repair, discrepancy.kind.isRepairable, let fact = discrepancy.apple,
                try await apply(discrepancy.kind, fact, to: user)
            {
                record.repairedAt = now
            }
            records.append(record)
        }
        try await store.replaceDiscrepancies(owner: user.id, environment: environment, records)
        return (records, apple.count)
    }

    /// Applies a repairable discrepancy through the same ledger events Apple's notifications make.
    ///
    /// - Returns: Whether the ledger took it.
    private func apply(_ kind: DiscrepancyKind, _ fact: TransactionFact, to user: User) async throws -> Bool {
        switch kind {
        case .missingPurchase:
            return try await intake.deliver(fact, to: user, source: "reconcile", logger: logger)
        case .missingRefund:
            let word = Delivery.LaterWord(kind: .revocation, signedDate: fact.revocationDate ?? now)
            return try await intake.apply(word, on: fact, to: user, logger: logger) == .applied
        case .missingReversal:
            let word = Delivery.LaterWord(kind: .reversal, signedDate: now)
            return try await intake.apply(word, on: fact, to: user, logger: logger) == .applied
        case .unknownToApple, .differs:
            return false
        }
    }

    /// Apple's transactions of the accounts the customer's receipts name: Transaction History from one receipt,
    /// again from any receipt that history did not show (another Apple account), and Refund History of each
    /// account; each transaction once, the refunded state where Refund History has it.
    private func appleBooks(of receipts: [Receipt], progress: (@Sendable (String) -> Void)?) async throws
        -> ([TransactionFact], [String: UUID])
    {
        var facts: [String: TransactionFact] = [:]
        var tokens: [String: UUID] = [:]
        var order: [String] = []
        var lookedUp = 0
        // The newest receipt first: its account is the customer's current one.
        let pending = receipts.sorted { $0.transaction.purchaseDate > $1.transaction.purchaseDate }
        for receipt in pending where facts[receipt.transaction.transactionId] == nil {
            guard lookedUp < Self.accountsPerCustomer else { break }
            lookedUp += 1
            let id = receipt.transaction.transactionId
            guard
                let history = try await signed(
                    endpoint: "transaction-history", progress: progress,
                    { revision in
                        let page = try await client.getTransactionHistory(id, revision: revision)
                        return (page.signedTransactions ?? [], page.hasMore == true ? page.revision : nil)
                    })
            else { continue }  // Apple does not know this one: it stays in the ledger only
            let refunds =
                try await signed(endpoint: "refund-history", progress: progress) { revision in
                    let page = try await client.getRefundHistory(id, revision: revision)
                    return (page.signedTransactions ?? [], page.hasMore == true ? page.revision : nil)
                } ?? []
            for signed in history + refunds {
                let (fact, token) = try await verified(signed)
                tokens[fact.transactionId] = token ?? tokens[fact.transactionId]
                if facts.updateValue(latest(facts[fact.transactionId], fact), forKey: fact.transactionId) == nil {
                    order.append(fact.transactionId)
                }
            }
        }
        return (order.compactMap { facts[$0] }, tokens)
    }

    /// Of two signed states of one transaction, the refunded one (Refund History's) or else the newer.
    private func latest(_ held: TransactionFact?, _ new: TransactionFact) -> TransactionFact {
        guard let held else { return new }
        if held.revocationDate != nil, new.revocationDate == nil { return held }
        return new
    }

    /// A signed transaction verified with Apple's full chain policy, as every other one Coffer takes.
    private func verified(_ signed: String) async throws -> (TransactionFact, UUID?) {
        let payload: JWSTransactionDecodedPayload
        do {
            payload = try await intake.dependencies.verifier.verifyTransaction(signed)
        } catch {
            throw CheckFailure(reason: "a signed transaction from Apple did not verify: \(error)")
        }
        guard let fact = TransactionFact(payload) else {
            throw CheckFailure(reason: "a signed transaction from Apple lacks its ids or dates")
        }
        return (fact, payload.appAccountToken)
    }

    /// Every page of a paged history: `nil` when Apple does not know the transaction it is asked by.
    private func signed(
        endpoint: String, progress: (@Sendable (String) -> Void)?,
        _ page: @Sendable (String?) async throws -> ([String], String?)
    ) async throws -> [String]? {
        var all: [String] = []
        var revision: String?
        while true {
            let (items, next): ([String], String?)
            do {
                let current = revision
                (items, next) = try await paced(endpoint, progress: progress) { try await page(current) }
            } catch let error as AppStoreAPIError
                where [.transactionIdNotFound, .invalidTransactionId, .originalTransactionIdNotFound].contains(
                    error.apiErrorCode)
            {
                return nil
            }
            all += items
            guard let next, all.count < 100_000 else { return all }
            revision = next
        }
    }

    /// One call, paced below Apple's limit for `endpoint`, waiting out a 429 until its `Retry-After`.
    func paced<T: Sendable>(
        _ endpoint: String, progress: (@Sendable (String) -> Void)?,
        _ call: @Sendable () async throws -> T
    ) async throws -> T {
        var waited: TimeInterval = 0
        while true {
            try await pacer.take(endpoint)
            do {
                return try await call()
            } catch let error as AppStoreAPIError where error.httpStatus == 429 {
                let until = error.retryAfter ?? now.addingTimeInterval(60)
                let wait = max(1, until.timeIntervalSince(now))
                guard waited + wait <= Self.longestRateLimitWait else {
                    throw CheckFailure(reason: "Apple's rate limit did not lift within an hour: \(error)")
                }
                waited += wait
                progress?("Apple's rate limit on \(endpoint): waiting until \(until)")
                logger.notice(
                    "Apple's rate limit; waiting", metadata: ["endpoint": "\(endpoint)", "until": "\(until)"])
                try await intake.dependencies.timerClock.sleep(for: .milliseconds(Int64(wait * 1_000)))
            } catch let error as AppStoreAPIError where error.isRetryable {
                // Apple or the network failing (after the client's own retries): this customer waits for the next run.
                throw CheckFailure(reason: "\(error)")
            }
        }
    }
}

extension AppStoreAPIError {
    /// The HTTP status Apple answered, `nil` for a failure before an answer.
    var httpStatus: Int? {
        guard case .api(let status, _, _, _) = self else { return nil }
        return status
    }
}

/// Paces calls to the App Store Server API below Apple's documented limits (Identifying rate limits: per second,
/// enforced per hour; the sandbox has a tenth): a bucket per endpoint holding a minute's worth of calls, refilled at
/// the endpoint's rate, on the server's timer clock.
actor ApplePacer {
    private struct Bucket {
        var tokens: Double
        var at: Duration
    }

    private let rates: [String: Double]
    private let clock: any TimerClock
    private var buckets: [String: Bucket] = [:]

    init(environment: CofferCore.AppStoreEnvironment, clock: any TimerClock) {
        let share = environment == .production ? 1.0 : 0.1
        rates = ["transaction-history": 50 * share, "refund-history": 10 * share]
        self.clock = clock
    }

    /// Waits until a call to `endpoint` keeps within its limit, and counts it.
    func take(_ endpoint: String) async throws {
        guard let rate = rates[endpoint] else { return }
        let capacity = rate * 60
        while true {
            let at = clock.elapsed
            var bucket = buckets[endpoint] ?? Bucket(tokens: capacity, at: at)
            let seconds =
                Double((at - bucket.at).components.seconds) + Double((at - bucket.at).components.attoseconds) / 1e18
            bucket.tokens = min(capacity, bucket.tokens + seconds * rate)
            bucket.at = at
            if bucket.tokens >= 1 {
                bucket.tokens -= 1
                buckets[endpoint] = bucket
                return
            }
            buckets[endpoint] = bucket
            try await clock.sleep(for: .milliseconds(Int64(((1 - bucket.tokens) / rate * 1_000).rounded(.up))))
        }
    }
}
