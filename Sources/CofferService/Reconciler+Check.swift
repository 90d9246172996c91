import CofferAppStore
import CofferCore
import CofferStore
import Foundation
import Logging
import ServiceLifecycle

/// A customer whose books could not be read: their previous discrepancies stay, and the next run tries again.
/// `transient` when Apple or the network may answer later (a 5xx, a timeout, a rate limit that did not lift); a run
/// stops after a few of those in a row, at the last customer it could read.
struct CheckFailure: Error, CustomStringConvertible {
    var reason: String
    var transient = false
    var description: String { reason }
}

/// What Apple's history says of one customer's accounts.
struct AppleBooks {
    /// Each transaction once, in its newest signed state.
    var facts: [TransactionFact] = []
    /// The appAccountToken Apple signed on each, where it has one.
    var tokens: [String: UUID] = [:]
    /// Those signed with the customer's own Apple account's app transaction id.
    var ownAccount: Set<String> = []
    /// When Apple signed each state kept.
    var signedDates: [String: Date] = [:]
    /// Ledger transactions whose account was not read.
    var unread: Set<String> = []
}

extension Reconciler {
    /// Most Apple accounts one customer's receipts are read under (two installs' accounts, a family's).
    static let accountsPerCustomer = 5
    /// Most lookups of one customer, those Apple does not know included.
    static let lookupsPerCustomer = 10
    /// Most pages of one history (20 transactions a page).
    static let pagesPerHistory = 500
    /// Apple's answers that it does not know the transaction asked by.
    static let notFound: [APIErrorCode?] = [
        .transactionIdNotFound, .invalidTransactionId, .originalTransactionIdNotFound,
    ]

    /// Checks one customer: reads Apple's books, compares, repairs when asked, and keeps what was found.
    ///
    /// - Parameter keepAlive: Renews the run's claim during long waits.
    func check(
        _ user: User, since: Date?, repair: Bool, progress: (@Sendable (String) -> Void)?,
        keepAlive: @escaping @Sendable () async throws -> Void = {}
    ) async throws -> (records: [DiscrepancyRecord], repairable: [Bool], appleCount: Int) {
        let receipts = try await store.receipts(owner: user.id, environment: environment)
        guard !receipts.isEmpty else { return ([], [], 0) }
        let apple = try await appleBooks(of: receipts, user: user, progress: progress, keepAlive: keepAlive)
        var heldElsewhere = Set<String>()
        let own = Set(receipts.map(\.transaction.transactionId))
        for fact in apple.facts where !own.contains(fact.transactionId) {
            if let receipt = try await store.receipt(transactionId: fact.transactionId, environment: environment),
                receipt.owner != user.id
            {
                heldElsewhere.insert(fact.transactionId)
            }
        }
        let catalog = intake.dependencies.catalog
        let books = LedgerReconciliation.Books(
            apple: apple.facts, ledger: receipts, heldElsewhere: heldElsewhere, appAccountToken: user.appAccountToken,
            appleTokens: apple.tokens, ownAccount: apple.ownAccount, customerSince: user.createdAt,
            unread: apple.unread, isLive: user.isLive, customerEnvironment: user.appleAccount?.environment)
        let found = LedgerReconciliation.discrepancies(books, sells: { catalog.product(id: $0) != nil }, since: since)
        var records: [DiscrepancyRecord] = []
        for discrepancy in found {
            var record = DiscrepancyRecord(
                owner: user.id, environment: environment, kind: discrepancy.kind,
                transactionId: discrepancy.transactionId, productId: discrepancy.productId,
                detail: discrepancy.detail, foundAt: now)
            if repair, discrepancy.repairable, let fact = discrepancy.apple,
                try await apply(
                    discrepancy.kind, fact, signedAt: apple.signedDates[fact.transactionId] ?? now, to: user)
            {
                record.repairedAt = now
            }
            records.append(record)
        }
        try await store.replaceDiscrepancies(owner: user.id, environment: environment, records)
        return (records, found.map(\.repairable), apple.facts.count)
    }

    /// Applies a repairable discrepancy through the same ledger events Apple's notifications make.
    ///
    /// - Returns: Whether the ledger agrees with Apple now (a change the ledger answered as a duplicate or
    ///   superseded, which left it as it was, is not a repair).
    private func apply(_ kind: DiscrepancyKind, _ fact: TransactionFact, signedAt: Date, to user: User)
        async throws -> Bool
    {
        switch kind {
        case .missingPurchase:
            _ = try await intake.deliver(fact, to: user, source: "reconcile", logger: logger)
        case .missingRefund:
            let word = Delivery.LaterWord(kind: .revocation, signedDate: fact.revocationDate ?? signedAt)
            _ = try await intake.apply(word, on: fact, to: user, logger: logger)
        case .missingReversal:
            // Dated when Apple signed the paid state: a refund Apple makes after it still comes after it.
            _ = try await intake.apply(
                Delivery.LaterWord(kind: .reversal, signedDate: signedAt), on: fact, to: user, logger: logger)
        case .unknownToApple, .differs:
            return false
        }
        guard let receipt = try await store.receipt(transactionId: fact.transactionId, environment: environment),
            receipt.owner == user.id
        else { return false }
        return receipt.isRevoked == (fact.revocationDate != nil)
    }

    /// Apple's transactions of the accounts the customer's receipts name: Transaction History from the newest
    /// receipt, again from any receipt that history did not show (another Apple account), and Refund History of each
    /// account. Receipts of another environment's data, Xcode's and those delivered before Coffer are not looked up.
    private func appleBooks(
        of receipts: [Receipt], user: User, progress: (@Sendable (String) -> Void)?,
        keepAlive: @escaping @Sendable () async throws -> Void
    ) async throws -> AppleBooks {
        var books = AppleBooks()
        var order: [String] = []
        var (accounts, lookups) = (0, 0)
        let ownAccount = user.appleAccount?.appTransactionId
        let candidates = receipts.filter {
            !$0.deliveredBeforeCoffer && !$0.transaction.signedByXcode
                && ($0.transaction.environment ?? environment) == environment
        }.sorted { $0.transaction.purchaseDate > $1.transaction.purchaseDate }
        books.unread = Set(receipts.map(\.transaction.transactionId)).subtracting(
            candidates.map(\.transaction.transactionId))
        for receipt in candidates where books.signedDates[receipt.transaction.transactionId] == nil {
            guard accounts < Self.accountsPerCustomer, lookups < Self.lookupsPerCustomer else {
                books.unread.insert(receipt.transaction.transactionId)
                continue
            }
            lookups += 1
            let id = receipt.transaction.transactionId
            guard
                let history = try await signed(
                    endpoint: "transaction-history", progress: progress, keepAlive: keepAlive,
                    { revision in
                        let page = try await client.getTransactionHistory(id, revision: revision)
                        return (page.signedTransactions ?? [], page.hasMore == true ? page.revision : nil)
                    })
            else { continue }  // Apple does not know this one: it stays in the ledger only
            accounts += 1
            let refunds =
                try await signed(
                    endpoint: "refund-history", progress: progress, keepAlive: keepAlive,
                    { revision in
                        let page = try await client.getRefundHistory(id, revision: revision)
                        return (page.signedTransactions ?? [], page.hasMore == true ? page.revision : nil)
                    }) ?? []
            for signed in history + refunds {
                let payload = try await verified(signed)
                guard let fact = TransactionFact(payload) else {
                    throw CheckFailure(reason: "a signed transaction from Apple lacks its ids or dates")
                }
                let id = fact.transactionId
                let signedAt = payload.signedDate ?? .distantPast
                if let kept = books.signedDates[id], kept > signedAt { continue }  // an older state
                if books.signedDates.updateValue(signedAt, forKey: id) == nil { order.append(id) }
                books.facts.removeAll { $0.transactionId == id }
                books.facts.append(fact)
                books.tokens[id] = payload.appAccountToken ?? books.tokens[id]
                if let ownAccount, payload.appTransactionId == ownAccount { books.ownAccount.insert(id) }
            }
        }
        let position = Dictionary(uniqueKeysWithValues: order.enumerated().map { ($1, $0) })
        books.facts.sort { position[$0.transactionId, default: 0] < position[$1.transactionId, default: 0] }
        return books
    }

    /// A signed transaction verified with Apple's full chain policy, as every other one Coffer takes.
    private func verified(_ signed: String) async throws -> JWSTransactionDecodedPayload {
        do {
            return try await intake.dependencies.verifier.verifyTransaction(signed)
        } catch {
            throw CheckFailure(reason: "a signed transaction from Apple did not verify: \(error)")
        }
    }

    /// Every page of a paged history, at most ``pagesPerHistory``, each revision new: `nil` when Apple does not know
    /// the transaction it is asked by.
    private func signed(
        endpoint: String, progress: (@Sendable (String) -> Void)?,
        keepAlive: @escaping @Sendable () async throws -> Void,
        _ page: @Sendable (String?) async throws -> ([String], String?)
    ) async throws -> [String]? {
        var all: [String] = []
        var revision: String?
        var revisions = Set<String>()
        for _ in 0..<Self.pagesPerHistory {
            try await keepAlive()
            let (items, next): ([String], String?)
            do {
                let current = revision
                (items, next) = try await paced(endpoint, progress: progress, keepAlive: keepAlive) {
                    try await page(current)
                }
            } catch let error as AppStoreAPIError where Self.notFound.contains(error.apiErrorCode) {
                return nil
            }
            all += items
            guard let next else { return all }
            guard revisions.insert(next).inserted else {
                throw CheckFailure(reason: "Apple's \(endpoint) answered the same page token twice")
            }
            revision = next
        }
        throw CheckFailure(reason: "Apple's \(endpoint) has more than \(Self.pagesPerHistory) pages for one customer")
    }

    /// One call, paced below Apple's limit for `endpoint`, waiting out a 429 until its `Retry-After` (renewing the
    /// run's claim meanwhile). Apple's refusal of the key (401, 403) ends the run; Apple or the network failing, or
    /// an answer that cannot be read, is this customer's ``CheckFailure``.
    func paced<T: Sendable>(
        _ endpoint: String, progress: (@Sendable (String) -> Void)?,
        keepAlive: @escaping @Sendable () async throws -> Void = {}, _ call: @Sendable () async throws -> T
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
                    throw CheckFailure(
                        reason: "Apple's rate limit did not lift within an hour: \(error)", transient: true)
                }
                waited += wait
                progress?("Apple's rate limit on \(endpoint): waiting until \(until)")
                logger.notice(
                    "Apple's rate limit; waiting", metadata: ["endpoint": "\(endpoint)", "until": "\(until)"])
                try await sleep(wait, keepAlive: keepAlive)
            } catch let error as AppStoreAPIError {
                // The key refused: every customer's would be; the run stops where it is.
                if case .api(let status, _, _, _) = error, status == 401 || status == 403 { throw error }
                if case .invalidRequest = error { throw error }
                if Self.notFound.contains(error.apiErrorCode) { throw error }  // the caller's to answer
                throw CheckFailure(reason: "\(error)", transient: error.isRetryable)
            }
        }
    }

    /// Sleeps `seconds` on the timer clock in steps shorter than the claim, renewing it at each; a graceful shutdown
    /// ends the wait.
    private func sleep(_ seconds: TimeInterval, keepAlive: @escaping @Sendable () async throws -> Void)
        async throws
    {
        var left = seconds
        while left > 0 {
            let step = min(left, Self.lease / 3)
            try await keepAlive()
            try await cancelWhenGracefulShutdown {
                try await self.intake.dependencies.timerClock.sleep(for: .milliseconds(Int64(step * 1_000)))
            }
            left -= step
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

/// Paces calls to the App Store Server API at half Apple's documented limits (Identifying rate limits: per second,
/// enforced per hour; the sandbox has a tenth), so the server's own calls on the same key (recovery, order lookups)
/// keep their share: a bucket per endpoint holding a minute's worth of calls, refilled at that rate, on the server's
/// timer clock.
actor ApplePacer {
    private struct Bucket {
        var tokens: Double
        var at: Duration
    }

    private let rates: [String: Double]
    private let clock: any TimerClock
    private var buckets: [String: Bucket] = [:]

    init(environment: CofferCore.AppStoreEnvironment, clock: any TimerClock) {
        let share = (environment == .production ? 1.0 : 0.1) / 2
        rates = ["transaction-history": 50 * share, "refund-history": 10 * share]
        self.clock = clock
    }

    /// Waits until a call to `endpoint` keeps within its pace, and counts it.
    func take(_ endpoint: String) async throws {
        guard let rate = rates[endpoint] else { return }
        let capacity = rate * 60
        while true {
            let at = clock.elapsed
            var bucket = buckets[endpoint] ?? Bucket(tokens: capacity, at: at)
            let elapsed = at - bucket.at
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
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
