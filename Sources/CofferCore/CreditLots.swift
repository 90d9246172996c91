import Foundation

/// Credits that expire (a grant's with an end, ``LedgerRequest/expiresAt``): a lot of one customer's wallet of one
/// currency, what is left of it and when it ends. Lots are a record kept beside the ledger in the same transaction:
/// the balance counts their credits, and a lot says how much of the balance ends when. Purchased credits never
/// expire (Apple's guideline 3.1.1), so a lot is only ever made by a grant or a subscription period's allowance.
public struct CreditLot: Sendable, Hashable, Codable {
    /// The lot's id: the grant's id, or `allowance:<transaction id>` (``CreditLots/allowanceLot(_:)``); also its
    /// expiry entry's (`expiry:<id>`).
    public var id: String
    /// The currency, `nil` for the default (``LedgerRequest/currency``).
    public var currency: Currency?
    /// What the grant brought to the balance (after any deficit it settled).
    public var granted: Int64
    /// What is left of it.
    public var remaining: Int64
    /// When what is left ends.
    public var expiresAt: Date
    /// For a period's allowance: the subscription (Apple's original transaction id), so a later period of it ends
    /// this one's (``CreditLots/update(_:applied:)``); `nil` for a grant's.
    public var subscription: String?
    /// For a period's allowance: when the period began.
    public var periodStart: Date?

    /// Creates a lot.
    public init(
        id: String, currency: Currency?, granted: Int64, remaining: Int64, expiresAt: Date,
        subscription: String? = nil, periodStart: Date? = nil
    ) {
        self.subscription = subscription
        self.periodStart = periodStart
        self.id = id
        self.currency = currency
        self.granted = granted
        self.remaining = remaining
        self.expiresAt = expiresAt
    }
}

/// The rules that keep a wallet's lots (``CreditLot``) true to its entries, as pure functions: every engine runs
/// them in the write's own transaction over the entries it applied.
public enum CreditLots {
    /// The lots after `applied`, the entries one wallet (one owner, one currency) took in order with the requests
    /// that made them, from `lots` as they stood: a grant with an end (``LedgerRequest/expiresAt``) or a period's
    /// allowance makes a lot of what it brought to the balance (never a second lot of one id); a period's allowance
    /// ends, at the period's start, what is left of the allowances of the subscription's periods that began before it
    /// (an upgrade's old period); a refund of the period ends its allowance's lot at the refund (the next expiry takes
    /// what is left); a spend takes from the lots soonest to end first; an expiry empties its lot;
    /// any other debit (a refund, an adjustment) takes from the credits that do not expire first, so only what the
    /// balance no longer holds leaves the lots (those ending last first). Lots emptied are left out.
    ///
    /// - Returns: Every lot of the wallet after, soonest to end first, ties by id.
    public static func update(_ lots: [CreditLot], applied: [(request: LedgerRequest, entry: LedgerEntry)])
        -> [CreditLot]
    {
        var lots = lots
        for (request, entry) in applied {
            switch entry.key.kind {
            case .grant:
                if let expiresAt = request.expiresAt, entry.balanceDelta > 0,
                    !lots.contains(where: { $0.id == entry.key.id })
                {
                    lots.append(
                        CreditLot(
                            id: entry.key.id, currency: request.currency, granted: entry.balanceDelta,
                            remaining: entry.balanceDelta, expiresAt: expiresAt))
                }
            case .allowance:
                guard let expiresAt = request.expiresAt, entry.balanceDelta > 0, let fact = request.event.transaction
                else { break }
                // A period of the subscription ends what is left of the allowances of those that began before it
                // when it begins: a renewal at their end anyway, an upgrade Apple makes at once at once.
                for index in lots.indices
                where lots[index].subscription == fact.originalTransactionId
                    && (lots[index].periodStart ?? .distantPast) < fact.purchaseDate
                {
                    lots[index].expiresAt = min(lots[index].expiresAt, fact.purchaseDate)
                }
                let id = allowanceLot(entry.key.id)
                guard !lots.contains(where: { $0.id == id }) else { break }
                lots.append(
                    CreditLot(
                        id: id, currency: request.currency, granted: entry.balanceDelta,
                        remaining: entry.balanceDelta, expiresAt: expiresAt, subscription: fact.originalTransactionId,
                        periodStart: fact.purchaseDate))
            case .revocation:
                // A refund of a period ends what is left of its allowance now: the next expiry takes it.
                if let transactionId = entry.transactionId {
                    for index in lots.indices where lots[index].id == allowanceLot(transactionId) {
                        lots[index].expiresAt = min(lots[index].expiresAt, entry.createdAt)
                    }
                }
            case .expiry:
                lots.removeAll { $0.id == entry.key.id }
            case .spend:
                lots = take(-entry.balanceDelta, from: ordered(lots))
            default:
                break
            }
            // What the balance holds bounds what can end: a debit beyond the credits that do not expire comes out
            // of the lots ending last.
            var excess = lots.reduce(0) { $0 + $1.remaining } - entry.walletAfter.balance
            if excess > 0 {
                var latestFirst = ordered(lots).reversed().map { $0 }
                for index in latestFirst.indices where excess > 0 {
                    let cut = min(excess, latestFirst[index].remaining)
                    latestFirst[index].remaining -= cut
                    excess -= cut
                }
                lots = latestFirst
            }
            lots.removeAll { $0.remaining <= 0 }
        }
        return ordered(lots)
    }

    /// The id of the lot of a period's allowance (``LedgerEntryKind/allowance``), by the period's transaction id:
    /// `allowance:<transaction id>`, so its expiry is `expiry:allowance:<transaction id>`.
    public static func allowanceLot(_ transactionId: String) -> String { "allowance:\(transactionId)" }

    /// The period's transaction id of an allowance's lot id (``allowanceLot(_:)``), or `nil` for a grant's lot.
    public static func allowanceTransaction(ofLot id: String) -> String? {
        let prefix = allowanceLot("")
        return id.hasPrefix(prefix) ? String(id.dropFirst(prefix.count)) : nil
    }

    /// The lots of `lots` that have ended at `now` with credits left: what an expiry takes.
    public static func due(_ lots: [CreditLot], at now: Date) -> [CreditLot] {
        ordered(lots).filter { $0.expiresAt <= now && $0.remaining > 0 }
    }

    /// Soonest to end first, ties by id.
    static func ordered(_ lots: [CreditLot]) -> [CreditLot] {
        lots.sorted { ($0.expiresAt, $0.id) < ($1.expiresAt, $1.id) }
    }

    /// `amount` taken from `lots` in their order.
    private static func take(_ amount: Int64, from lots: [CreditLot]) -> [CreditLot] {
        var left = max(0, amount)
        return lots.map { lot in
            var lot = lot
            let cut = min(left, lot.remaining)
            lot.remaining -= cut
            left -= cut
            return lot
        }
    }
}
