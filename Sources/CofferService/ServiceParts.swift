import CofferAppStore
import CofferCore
import CofferStore
import Synchronization

/// What the application layer's services are built from, shared by all of them in one server: its settings,
/// its dependencies, the users' event streams and the ledger's group commit.
public struct ServiceParts: Sendable {
    /// How the server runs.
    public let configuration: ServiceConfiguration
    /// What it is made of.
    public let dependencies: ServerDependencies
    /// The users' event streams, told what changed.
    public let events: EventHub
    /// Group commit: every ledger write goes through it.
    public let ledger: LedgerBatcher
    /// The calls to Apple beside the answers under way (Finish Transaction, Set App Account Token), bounded.
    let appleCalls = InFlight(limit: 8)

    /// The parts of a server with `configuration` over `dependencies`.
    public init(
        configuration: ServiceConfiguration, dependencies: ServerDependencies, events: EventHub, ledger: LedgerBatcher
    ) {
        self.configuration = configuration
        self.dependencies = dependencies
        self.events = events
        self.ledger = ledger
    }
}

/// A service built from ``ServiceParts``.
public protocol ServiceOnParts: Sendable {
    /// What it is built from.
    var parts: ServiceParts { get }
}

extension ServiceOnParts {
    /// How the server runs.
    public var configuration: ServiceConfiguration { parts.configuration }
    /// What it is made of.
    public var dependencies: ServerDependencies { parts.dependencies }
    /// The users' event streams.
    public var events: EventHub { parts.events }
    /// Group commit.
    public var ledger: LedgerBatcher { parts.ledger }
    /// Where users and the ledger live.
    public var store: any CofferStore { parts.dependencies.store }
}

extension ServiceOnParts {
    /// Applies requests about transactions in every currency their products give (``Catalog/inEveryCurrency(_:allowances:)``),
    /// all in one commit: one result per request, the default currency's, or the first refusal among its
    /// currencies. Every delivery, refund and reversal goes through it; a single-currency catalog applies exactly
    /// the requests given. `allowances` off, a paid period earns no allowance (a legacy receipt's: its data says
    /// neither the price nor Family Sharing).
    func applyInEveryCurrency(_ requests: [LedgerRequest], allowances: Bool = true) async throws -> [Result<
        LedgerResult, LedgerError
    >] {
        var expanded: [LedgerRequest] = []
        var counts: [Int] = []
        var refused: [Int: LedgerError] = [:]
        for (index, request) in requests.enumerated() {
            var each: [LedgerRequest]
            do {
                each = try dependencies.catalog.inEveryCurrency(request, allowances: allowances)
            } catch {
                refused[index] = error
                counts.append(0)
                continue
            }
            // A refund or a reversal reaches every currency that delivered the transaction, whatever the catalog
            // says now (a product changed, a currency dropped).
            if request.currency == nil, request.event.isWord, let fact = request.event.transaction {
                each = Catalog.reaching(
                    each, of: request,
                    delivered: try await store.receiptCurrencies(
                        transactionId: fact.transactionId, environment: request.environment))
            }
            expanded += each
            counts.append(each.count)
        }
        let results = Catalog.folded(
            try await ledger.apply(expanded), requests: expanded, counts: counts.filter { $0 > 0 })
        var answered = results.makeIterator()
        return requests.indices.map { index in
            refused[index].map { .failure($0) } ?? answered.next() ?? .failure(.unknownUser(requests[index].owner))
        }
    }

    /// In the server wallet, tells Apple a purchase whose delivery is now durable is finished (Finish
    /// Transaction), so a device that died before finishing it is not handed it again. Runs beside the answer
    /// (Apple's latency never holds a delivery up); a failure is logged: the app still finishes it when it can.
    func finishOnApple(_ fact: TransactionFact, user: User) {
        guard configuration.wallet == .server, let client = dependencies.appStoreAPI,
            (fact.environment ?? user.environment) == user.environment
        else { return }
        let (id, logger, finishing) = (fact.transactionId, dependencies.logger, parts.appleCalls)
        // At most a few at once, beside Apple's other calls and their rate limit: past that one is skipped (the
        // app finishes it when it next runs), never queued without bound.
        guard finishing.enter() else {
            logger.info("Finish Transaction skipped for \(id): \(finishing.limit) calls under way")
            return
        }
        Task {
            defer { finishing.leave() }
            do {
                try await client.finishTransaction(id)
            } catch {
                logger.warning("Finish Transaction failed for \(id): \(error)")
            }
        }
    }
}

extension ServiceOnParts {
    /// In the server wallet, the customer of the Apple account a purchase without the app's token names (an offer
    /// code, a promoted purchase, another device): theirs, never whoever presents it first. In the device wallet
    /// the credits live on the device that delivers them, so the first presenter keeps it (`nil`).
    func accountOwner(of fact: TransactionFact, transaction: JWSTransactionDecodedPayload) async throws -> User? {
        guard configuration.wallet == .server, transaction.appAccountToken == nil, !fact.isFamilyShared,
            let appTransactionId = transaction.appTransactionId
        else { return nil }
        return try await accountCustomer(of: fact, appTransactionId: appTransactionId)
    }

    /// The customer of the Apple account a transaction's `appTransactionId` names (in the transaction's data
    /// environment), while live and not merged into another.
    func accountCustomer(of fact: TransactionFact, appTransactionId: String) async throws -> User? {
        let environment = configuration.environment
        let account = AppleAccount(appTransactionId: appTransactionId, environment: fact.environment ?? environment)
        return try await store.user(appleAccount: account, environment: environment).flatMap {
            $0.isOwnCustomer ? $0 : nil
        }
    }

    /// Writes the customer's `appAccountToken` on a purchase that came without one (Set App Account Token), so
    /// Apple's later notifications about it and its renewals name the customer. Beside the answer, bounded with
    /// the other calls to Apple; a failure is logged (the Apple account still finds the customer).
    func writeTokenBack(_ fact: TransactionFact, user: User) {
        guard let client = dependencies.appStoreAPI, !fact.isFamilyShared,
            (fact.environment ?? user.environment) == user.environment
        else { return }
        let (original, token, logger, calls) = (
            fact.originalTransactionId, user.appAccountToken, dependencies.logger, parts.appleCalls
        )
        guard calls.enter() else {
            logger.info("Set App Account Token skipped for \(original): \(calls.limit) calls under way")
            return
        }
        Task {
            defer { calls.leave() }
            do {
                try await client.setAppAccountToken(original, token)
            } catch {
                logger.warning("Set App Account Token failed for \(original): \(error)")
            }
        }
    }
}

/// A count of calls under way, refused past `limit`.
final class InFlight: Sendable {
    let limit: Int
    private let count = Mutex(0)

    init(limit: Int) { self.limit = limit }

    /// Takes a place, or answers `false` when all are taken.
    func enter() -> Bool {
        count.withLock { count in
            guard count < limit else { return false }
            count += 1
            return true
        }
    }

    /// Gives a place back.
    func leave() { count.withLock { $0 -= 1 } }
}
