import CofferCore
import Foundation

/// What a ledger write does to the lots (``CreditLot``), decided once for every engine: the wallets whose lots the
/// applied entries may change, with those entries in order, for ``CreditLots/update(_:applied:)``.
public enum CreditLotWrites {
    /// One wallet: a customer's, in one currency (`nil`: the default).
    public struct Wallet: Hashable, Sendable {
        /// The environment.
        public var environment: AppStoreEnvironment
        /// The customer.
        public var owner: UUID
        /// The currency.
        public var currency: Currency?

        /// The wallet.
        public init(environment: AppStoreEnvironment, owner: UUID, currency: Currency?) {
            self.environment = environment
            self.owner = owner
            self.currency = currency
        }
    }

    /// The wallets the applied entries of `requests` (`results`, one each) may change the lots of, each with its
    /// entries in order: a grant or an allowance that makes a lot, an expiry, a refund (which ends its period's
    /// allowance), or anything that took from the balance. A wallet
    /// without lots is changed only by a grant that makes one, so the engines read lots only for these.
    public static func touched(_ requests: [LedgerRequest], _ results: [Result<LedgerResult, LedgerError>])
        -> [(wallet: Wallet, applied: [(request: LedgerRequest, entry: LedgerEntry)])]
    {
        var order: [Wallet] = []
        var applied: [Wallet: [(request: LedgerRequest, entry: LedgerEntry)]] = [:]
        var matters: Set<Wallet> = []
        for (request, result) in zip(requests, results) {
            guard case .success(let done) = result, done.outcome == .applied, let entry = done.entry else { continue }
            let wallet = Wallet(environment: request.environment, owner: request.owner, currency: request.currency)
            if applied[wallet] == nil { order.append(wallet) }
            applied[wallet, default: []].append((request, entry))
            if makesLot(request, entry) || entry.balanceDelta < 0 || entry.key.kind == .expiry
                || entry.key.kind == .revocation
            {
                matters.insert(wallet)
            }
        }
        return order.filter(matters.contains).map { ($0, applied[$0] ?? []) }
    }

    /// Whether an entry makes a lot: a grant with an end, or a period's allowance, that brought credits to the
    /// balance.
    public static func makesLot(_ request: LedgerRequest, _ entry: LedgerEntry) -> Bool {
        [.grant, .allowance].contains(entry.key.kind) && request.expiresAt != nil && entry.balanceDelta > 0
    }

    /// The requests that end the lots of `lots` due at `now` (``CreditLots/due(_:at:)``), each keyed by its lot.
    public static func expiries(
        _ lots: [(environment: AppStoreEnvironment, owner: UUID, lot: CreditLot)], at now: Date
    ) -> [LedgerRequest] {
        lots.filter { $0.lot.expiresAt <= now && $0.lot.remaining > 0 }.map { due in
            LedgerRequest(
                owner: due.owner, environment: due.environment,
                event: .expiry(id: due.lot.id, amount: due.lot.remaining), at: now, currency: due.lot.currency)
        }
    }
}
