import Foundation

/// What happens to a deficit (credits a refund could not take back because they were already spent).
public enum DeficitPolicy: String, Codable, Sendable, CaseIterable {
    /// Credits delivered later (purchases, grants) settle the deficit before they reach the balance.
    case collect
    /// The deficit stays as a record for support; later credits go straight to the balance.
    case forgive
}

/// A user's credit position: the spendable balance, never negative, and the deficit, what refunds could
/// not take back.
public struct Wallet: Sendable, Hashable, Codable {
    /// Spendable credits; never below zero.
    public var balance: Int64
    /// Credits owed: the part of refunded purchases that had already been spent.
    public var deficit: Int64

    /// Creates a wallet.
    public init(balance: Int64 = 0, deficit: Int64 = 0) {
        self.balance = balance
        self.deficit = deficit
    }

    /// A new user's wallet.
    public static let empty = Wallet()
}

/// The kinds of ledger entry, each with its own idempotency key space.
public enum LedgerEntryKind: String, Codable, Sendable, CaseIterable {
    /// Delivery of a purchase, keyed by Apple's transaction id.
    case purchase
    /// A refund or revocation taking back what its purchase delivered, keyed by transaction id.
    case revocation
    /// Apple reversing a refund (`REFUND_REVERSED`), keyed by transaction id.
    case reversal
    /// Credits granted by support, keyed by the grant id.
    case grant
    /// An admin change to the balance, keyed by the adjustment id.
    case adjustment
    /// Credits spent by the app (server wallet), keyed by the client's idempotency key.
    case spend
    /// Support merged an anonymous user into an account user: on each of the two, keyed by the merged
    /// (anonymous) user's Support ID.
    case merge
    /// Credits that expired: what was left of a grant's lot (``CreditLot``) at its end, keyed by the lot's id.
    case expiry
    /// A subscription's allowance for one paid period (the catalog's ``CatalogProduct/allowance``), keyed by the
    /// period's transaction id: credits that end with the period (a lot, ``CreditLot``).
    case allowance
}

/// A natural idempotency key such as `purchase:2000000123456789`: an entry with a given key is applied
/// at most once per user.
public struct IdempotencyKey: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The entry kind, the key's prefix.
    public var kind: LedgerEntryKind
    /// The natural identifier: a transaction id, grant id, adjustment id or client key.
    public var id: String

    /// Creates a key.
    public init(_ kind: LedgerEntryKind, _ id: String) {
        self.kind = kind
        self.id = id
    }

    /// Parses `kind:id`.
    ///
    /// - Parameter rawValue: A key as printed by ``description``.
    public init?(rawValue: String) {
        guard let colon = rawValue.firstIndex(of: ":"),
            let kind = LedgerEntryKind(rawValue: String(rawValue[..<colon]))
        else { return nil }
        let id = String(rawValue[rawValue.index(after: colon)...])
        guard !id.isEmpty else { return nil }
        self.init(kind, id)
    }

    /// The key as stored: `kind:id`.
    public var rawValue: String { "\(kind.rawValue):\(id)" }
    /// A one-line, human-readable explanation.
    public var description: String { rawValue }
}

/// A change to a user's wallet. Each event names its idempotency key.
public enum LedgerEvent: Sendable, Hashable {
    /// Deliver a purchase: `credits` is what the catalog says it is worth (see ``Catalog/credits(productId:quantity:familyShared:)``).
    case purchase(TransactionFact, credits: Int64)
    /// Record a purchase the app delivered before it used Coffer: on the ledger as delivered, worth `credits` (what
    /// a refund takes back, as the old app would have), with the balance unchanged. Keyed as its purchase, so
    /// presenting it again credits nothing.
    case deliveredBeforeCoffer(TransactionFact, credits: Int64)
    /// Apple refunded or revoked the transaction: take back what its purchase delivered.
    case revocation(TransactionFact)
    /// Apple reversed the refund: restore what the revocation took. `at` is when Apple reversed it (the
    /// notification's `signedDate`); without it, the reversal answers the refund on record.
    case reversal(TransactionFact, at: Date?)
    /// Support granted credits.
    case grant(id: String, credits: Int64, reason: String)
    /// An admin changed the balance by `delta`.
    case adjustment(id: String, delta: Int64, reason: String)
    /// The app spent credits (server wallet).
    case spend(key: String, amount: Int64)
    /// The device wallet took its backup (a reinstall, an admin edit): the wallet becomes `wallet`, balance
    /// and deficit, keyed as an adjustment.
    case restore(id: String, wallet: Wallet, reason: String)
    /// A lot ended (``CreditLot``): `amount`, what was left of it as the store found it in the write's own
    /// transaction, leaves the balance (never more than the balance holds). Made by the store's expiry
    /// (``CreditLots/due(_:at:)``), never by a caller.
    case expiry(id: String, amount: Int64)
    /// Credit a subscription's allowance for the paid period `fact` (``Catalog/inEveryCurrency(_:allowances:)`` makes it, after
    /// the period's purchase in the same currency): `credits`, only when that purchase is delivered to this user and
    /// not refunded; once per transaction.
    case allowance(TransactionFact, credits: Int64)

    /// The event's idempotency key.
    public var key: IdempotencyKey {
        switch self {
        case .purchase(let fact, _), .deliveredBeforeCoffer(let fact, _): IdempotencyKey(.purchase, fact.transactionId)
        case .revocation(let fact): IdempotencyKey(.revocation, fact.transactionId)
        case .reversal(let fact, _): IdempotencyKey(.reversal, fact.transactionId)
        case .grant(let id, _, _): IdempotencyKey(.grant, id)
        case .adjustment(let id, _, _): IdempotencyKey(.adjustment, id)
        case .spend(let key, _): IdempotencyKey(.spend, key)
        case .restore(let id, _, _): IdempotencyKey(.adjustment, id)
        case .expiry(let id, _): IdempotencyKey(.expiry, id)
        case .allowance(let fact, _): IdempotencyKey(.allowance, fact.transactionId)
        }
    }

    /// The App Store transaction the event is about, for purchases, revocations, reversals and allowances.
    public var transaction: TransactionFact? {
        switch self {
        case .purchase(let fact, _), .deliveredBeforeCoffer(let fact, _): fact
        case .revocation(let fact): fact
        case .reversal(let fact, _), .allowance(let fact, _): fact
        case .grant, .adjustment, .spend, .restore, .expiry: nil
        }
    }

    /// Whether the event is Apple's word on a transaction: a refund or a reversal.
    public var isWord: Bool {
        switch self {
        case .revocation, .reversal: true
        default: false
        }
    }
}

/// One applied change, as the ledger records it.
public struct LedgerEntry: Sendable, Hashable, Codable {
    /// The user whose wallet changed.
    public var owner: UUID
    /// The idempotency key.
    public var key: IdempotencyKey
    /// The nominal amount: `+credits` for purchases, grants and reversals, `-credits` for revocations and
    /// spends, the delta for adjustments. Summed over a user's entries it equals `balance - deficit`.
    public var amount: Int64
    /// How the balance changed.
    public var balanceDelta: Int64
    /// How the deficit changed.
    public var deficitDelta: Int64
    /// The wallet after the entry.
    public var walletAfter: Wallet
    /// The transaction, for purchases, revocations and reversals.
    public var transactionId: String?
    /// The product, for purchases, revocations and reversals.
    public var productId: String?
    /// Why: the grant or adjustment reason.
    public var reason: String?
    /// When the entry was applied.
    public var createdAt: Date
    /// The environment the transaction's data came from, for purchases, revocations and reversals whose source
    /// said (``TransactionFact/environment``): Sandbox on a Production server marks App Review and TestFlight.
    public var dataEnvironment: AppStoreEnvironment?
    /// Whether Xcode's StoreKit testing signed the transaction's data (``TransactionFact/signedByXcode``).
    public var signedByXcode = false
    /// The currency whose ledger the entry is in; `nil` for the default currency's (``LedgerRequest/currency``).
    public var currency: Currency?

    /// The environment the entry's data is marked with (Xcode for Xcode's StoreKit testing).
    public var dataMark: DataEnvironment? { dataEnvironment.map { DataEnvironment($0, signedByXcode: signedByXcode) } }

    /// Creates an entry.
    public init(
        owner: UUID, key: IdempotencyKey, amount: Int64, balanceDelta: Int64, deficitDelta: Int64, walletAfter: Wallet,
        transactionId: String? = nil, productId: String? = nil, reason: String? = nil, createdAt: Date,
        dataEnvironment: AppStoreEnvironment? = nil, signedByXcode: Bool = false, currency: Currency? = nil
    ) {
        self.signedByXcode = signedByXcode
        self.currency = currency
        self.owner = owner
        self.key = key
        self.amount = amount
        self.balanceDelta = balanceDelta
        self.deficitDelta = deficitDelta
        self.walletAfter = walletAfter
        self.transactionId = transactionId
        self.productId = productId
        self.reason = reason
        self.createdAt = createdAt
        self.dataEnvironment = dataEnvironment
    }
}

/// What applying an event did.
public enum LedgerOutcome: String, Codable, Sendable {
    /// The event changed the ledger.
    case applied
    /// The key was applied before; nothing changed.
    case duplicate
    /// A purchase of a transaction Apple has revoked: nothing is credited.
    case revoked
    /// A revocation or reversal older (by Apple's dates) than Apple's latest word on the transaction: nothing
    /// changed.
    case superseded
}

/// Why the ledger refused an event. Nothing changes when an event is refused.
public enum LedgerError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The catalog does not sell this product.
    case unknownProduct(String)
    /// An amount or quantity is zero, negative or too large.
    case invalidAmount(Int64)
    /// A spend or a negative adjustment asks for more than the balance holds.
    case insufficientBalance(balance: Int64, requested: Int64)
    /// The transaction belongs to another user.
    case wrongUser(transactionId: String)
    /// The same key was used before for a different change (another amount, say).
    case keyReused(IdempotencyKey)
    /// The event names a different product (or Apple environment) than the transaction already on record.
    case transactionMismatch(transactionId: String)
    /// No user with this id exists in the event's environment.
    case unknownUser(UUID)

    /// A one-line, human-readable explanation.
    public var description: String {
        switch self {
        case .unknownProduct(let id): "unknown product \(id)"
        case .invalidAmount(let amount): "invalid amount \(amount)"
        case .insufficientBalance(let balance, let requested):
            "insufficient balance: \(requested) requested, \(balance) available"
        case .wrongUser(let id): "transaction \(id) belongs to another user"
        case .keyReused(let key): "idempotency key \(key) was already used for a different change"
        case .transactionMismatch(let id): "transaction \(id) does not match the one on record"
        case .unknownUser(let id): "no user \(id) in this environment"
        }
    }
}

/// The result of deciding an event: what to store. Apply all of it in one database transaction.
public struct LedgerDecision: Sendable, Hashable {
    /// What the event did.
    public var outcome: LedgerOutcome
    /// The wallet after the event.
    public var wallet: Wallet
    /// The receipt to save (for transaction events), or `nil` when no receipt changed.
    public var receipt: Receipt?
    /// The entry to append, or, for a duplicate, the entry already on record under the key.
    public var entry: LedgerEntry?
    /// Whether `entry` is new and must be appended.
    public var appendsEntry: Bool { outcome != .duplicate && entry != nil }
}

/// The ledger's rules, as pure functions: stores load the current state, call ``decide(_:owner:wallet:receipt:existing:policy:at:)``
/// and save the decision in one transaction.
public enum Ledger {
    /// The largest amount a single event may carry, so sums never overflow.
    public static let maximumAmount: Int64 = 1 << 52

    /// Decides what an event does to a user's wallet.
    ///
    /// - Parameters:
    ///   - event: The change.
    ///   - owner: The user it is for.
    ///   - wallet: The user's current wallet.
    ///   - receipt: The receipt on record for the event's transaction, if any (any owner).
    ///   - existing: The entry on record for this user under the event's key, if any.
    ///   - policy: The app's deficit policy.
    ///   - now: The current time.
    /// - Returns: What to store.
    /// - Throws: ``LedgerError``; nothing must be stored then.
    public static func decide(
        _ event: LedgerEvent,
        owner: UUID,
        wallet: Wallet,
        receipt: Receipt?,
        existing: LedgerEntry?,
        policy: DeficitPolicy,
        at now: Date
    ) throws(LedgerError) -> LedgerDecision {
        if let fact = event.transaction, let receipt {
            guard receipt.owner == owner else { throw .wrongUser(transactionId: fact.transactionId) }
            guard receipt.transaction.productId == fact.productId,
                receipt.transaction.environment == nil || fact.environment == nil
                    || receipt.transaction.environment == fact.environment
            else { throw .transactionMismatch(transactionId: fact.transactionId) }
        }
        let key = event.key
        switch event {
        case .purchase(let fact, let credits):
            return try purchase(
                fact, credits: credits, key: key, owner: owner, wallet: wallet, receipt: receipt, existing: existing,
                policy: policy, now: now)
        case .deliveredBeforeCoffer(let fact, let credits):
            return try purchase(
                fact, credits: credits, key: key, owner: owner, wallet: wallet, receipt: receipt, existing: existing,
                policy: policy, now: now, credited: false)
        case .revocation(let fact):
            return revocation(fact, owner: owner, wallet: wallet, receipt: receipt, now: now)
        case .reversal(let fact, let reversedAt):
            // Without Apple's date, a reversal reverses the refund on record: never older than it.
            let date = reversedAt ?? max(now, receipt?.revokedAt ?? now)
            return reversal(fact, at: date, owner: owner, wallet: wallet, receipt: receipt, policy: policy, now: now)
        case .grant(_, let credits, let reason):
            try checkAmount(credits)
            if let existing { return try duplicate(existing, amount: credits, key: key, wallet: wallet) }
            let after = credit(credits, to: wallet, policy: policy)
            return applied(
                key: key, owner: owner, amount: credits, before: wallet, after: after, reason: reason, now: now)
        case .adjustment(_, let delta, let reason):
            guard delta != 0, delta.magnitude <= maximumAmount.magnitude else { throw .invalidAmount(delta) }
            if let existing { return try duplicate(existing, amount: delta, key: key, wallet: wallet) }
            guard wallet.balance + delta >= 0 else {
                throw .insufficientBalance(balance: wallet.balance, requested: -delta)
            }
            var after = wallet
            after.balance += delta
            return applied(
                key: key, owner: owner, amount: delta, before: wallet, after: after, reason: reason, now: now)
        case .restore(_, let target, let reason):
            guard target.balance >= 0, target.deficit >= 0, target.balance <= maximumAmount,
                target.deficit <= maximumAmount
            else { throw .invalidAmount(target.balance < 0 ? target.balance : target.deficit) }
            if let existing {
                return LedgerDecision(outcome: .duplicate, wallet: wallet, receipt: nil, entry: existing)
            }
            return applied(
                key: key, owner: owner, amount: (target.balance - target.deficit) - (wallet.balance - wallet.deficit),
                before: wallet, after: target, reason: reason, now: now)
        case .spend(_, let amount):
            try checkAmount(amount)
            if let existing { return try duplicate(existing, amount: -amount, key: key, wallet: wallet) }
            guard amount <= wallet.balance else {
                throw .insufficientBalance(balance: wallet.balance, requested: amount)
            }
            var after = wallet
            after.balance -= amount
            return applied(key: key, owner: owner, amount: -amount, before: wallet, after: after, reason: nil, now: now)
        case .expiry(_, let amount):
            try checkAmount(amount)
            if let existing {
                return LedgerDecision(outcome: .duplicate, wallet: wallet, receipt: nil, entry: existing)
            }
            var after = wallet
            after.balance -= min(amount, wallet.balance)
            return applied(
                key: key, owner: owner, amount: after.balance - wallet.balance, before: wallet, after: after,
                reason: "expired", now: now)
        case .allowance(let fact, let credits):
            try checkAmount(credits)
            if let existing {
                return LedgerDecision(outcome: .duplicate, wallet: wallet, receipt: nil, entry: existing)
            }
            // Only with its period's delivery (the purchase in the same write, to this user: the check above), by
            // Coffer, standing: the same transaction presented again later (after a merge moved its receipt to
            // another customer, say) gives nothing.
            guard let receipt, let deliveredAt = receipt.deliveredAt, receipt.deliveredCredits != nil,
                Milliseconds.from(deliveredAt) >= Milliseconds.from(now), !receipt.deliveredBeforeCoffer,
                !receipt.isRevoked
            else {
                return unchanged(.revoked, wallet)
            }
            let after = credit(credits, to: wallet, policy: policy)
            return applied(
                key: key, owner: owner, amount: credits, before: wallet, after: after, fact: fact,
                reason: "allowance", now: now)
        }
    }

    /// What merging an anonymous user into another user writes: on the merged user an entry taking its
    /// wallet to zero, on the other an entry adding `moving` (its wallet in the server wallet; in the device
    /// wallet the balance its install last backed up, and its deficit), both keyed `merge:<merged user's Support ID>` (so the
    /// merged install, which holds that balance already, knows the entry for its own and skips it).
    ///
    /// - Returns: The decision for the merged user and the one for the user it joins.
    public static func merge(
        from: UUID, fromSupportId: SupportID, fromWallet: Wallet, into: UUID, intoWallet: Wallet, moving: Wallet,
        at now: Date
    ) throws(LedgerError) -> (from: LedgerDecision, into: LedgerDecision) {
        guard moving.balance >= 0, moving.deficit >= 0, moving.balance <= maximumAmount,
            moving.deficit <= maximumAmount, intoWallet.balance <= maximumAmount, intoWallet.deficit <= maximumAmount
        else { throw .invalidAmount(moving.balance) }
        let key = IdempotencyKey(.merge, fromSupportId.rawValue)
        let after = Wallet(balance: intoWallet.balance + moving.balance, deficit: intoWallet.deficit + moving.deficit)
        return (
            applied(
                key: key, owner: from, amount: fromWallet.deficit - fromWallet.balance, before: fromWallet,
                after: .empty, reason: "merged into another user", now: now),
            applied(
                key: key, owner: into, amount: moving.balance - moving.deficit, before: intoWallet, after: after,
                reason: "merged from another user", now: now)
        )
    }

    /// Adds credits to a wallet. Under ``DeficitPolicy/collect`` they settle the deficit first.
    ///
    /// - Parameters:
    ///   - amount: Credits to add (not negative).
    ///   - wallet: The wallet before.
    ///   - policy: The deficit policy.
    /// - Returns: The wallet after.
    public static func credit(_ amount: Int64, to wallet: Wallet, policy: DeficitPolicy) -> Wallet {
        var after = wallet
        let settled = policy == .collect ? min(wallet.deficit, amount) : 0
        after.deficit -= settled
        after.balance += amount - settled
        return after
    }

    /// Takes credits back from a wallet: from the balance down to zero, the rest recorded as deficit.
    ///
    /// - Parameters:
    ///   - amount: Credits to take back (not negative).
    ///   - wallet: The wallet before.
    /// - Returns: The wallet after.
    public static func takeBack(_ amount: Int64, from wallet: Wallet) -> Wallet {
        var after = wallet
        let fromBalance = min(wallet.balance, amount)
        after.balance -= fromBalance
        after.deficit += amount - fromBalance
        return after
    }

    private static func checkAmount(_ amount: Int64) throws(LedgerError) {
        guard amount > 0, amount <= maximumAmount else { throw .invalidAmount(amount) }
    }

    /// A decision that changes nothing.
    static func unchanged(_ outcome: LedgerOutcome, _ wallet: Wallet) -> LedgerDecision {
        LedgerDecision(outcome: outcome, wallet: wallet, receipt: nil, entry: nil)
    }

    /// The key of Apple's word on a transaction: the first revocation (or reversal) is keyed by the transaction
    /// id; a later one, after the other word, by its date as well.
    static func wordKey(_ kind: LedgerEntryKind, _ fact: TransactionFact, first: Bool, at date: Date)
        -> IdempotencyKey
    {
        IdempotencyKey(kind, first ? fact.transactionId : "\(fact.transactionId)@\(Milliseconds.from(date))")
    }

    private static func duplicate(
        _ existing: LedgerEntry,
        amount: Int64,
        key: IdempotencyKey,
        wallet: Wallet
    ) throws(LedgerError) -> LedgerDecision {
        guard existing.amount == amount else { throw .keyReused(key) }
        return LedgerDecision(outcome: .duplicate, wallet: wallet, receipt: nil, entry: existing)
    }

    static func applied(
        key: IdempotencyKey,
        owner: UUID,
        amount: Int64,
        before: Wallet,
        after: Wallet,
        fact: TransactionFact? = nil,
        receipt: Receipt? = nil,
        reason: String?,
        now: Date
    ) -> LedgerDecision {
        let entry = LedgerEntry(
            owner: owner,
            key: key,
            amount: amount,
            balanceDelta: after.balance - before.balance,
            deficitDelta: after.deficit - before.deficit,
            walletAfter: after,
            transactionId: fact?.transactionId,
            productId: fact?.productId,
            reason: reason,
            createdAt: now,
            dataEnvironment: fact?.environment,
            signedByXcode: fact?.signedByXcode ?? false
        )
        return LedgerDecision(outcome: .applied, wallet: after, receipt: receipt, entry: entry)
    }

    private static func purchase(
        _ fact: TransactionFact,
        credits: Int64,
        key: IdempotencyKey,
        owner: UUID,
        wallet: Wallet,
        receipt existing: Receipt?,
        existing existingEntry: LedgerEntry?,
        policy: DeficitPolicy,
        now: Date,
        credited: Bool = true
    ) throws(LedgerError) -> LedgerDecision {
        guard credits >= 0, credits <= maximumAmount else { throw .invalidAmount(credits) }
        guard fact.quantity >= 1 else { throw .invalidAmount(Int64(fact.quantity)) }
        if let existing, existing.isRevoked {
            guard !credited, existing.deliveredCredits == nil else { return unchanged(.revoked, wallet) }
            // Refunded on record before anything was delivered, and the app delivered it before Coffer: recorded
            // as delivered at 0, so a later reversal restores nothing and presenting it again credits nothing.
            var marked = existing
            marked.deliveredCredits = 0
            marked.deliveredBeforeCoffer = true
            return LedgerDecision(outcome: .revoked, wallet: wallet, receipt: marked, entry: nil)
        }
        if let existing, existing.deliveredCredits != nil {
            // Delivered before: credit nothing, but learn what the newer data says: the payment (the earlier data
            // was a legacy receipt's, without it) and a period Apple extended since.
            var learned = existing
            learned.transaction.keepPayment(of: fact)
            learned.transaction.learnExtension(from: fact)
            return LedgerDecision(
                outcome: .duplicate, wallet: wallet, receipt: learned == existing ? nil : learned, entry: existingEntry)
        }
        if let revoked = fact.revocationDate, existing?.reversedAt.map({ revoked > $0 }) ?? true {
            // Signed data that already says "refunded": record the revocation, credit nothing.
            var decision = revocation(fact, owner: owner, wallet: wallet, receipt: existing, now: now)
            decision.outcome = .revoked
            if !credited, existing?.deliveredCredits == nil {
                // Delivered by the app before Coffer and refunded before it too: what the old app gave or took is
                // its own. Recorded as delivered at 0, so a later reversal restores nothing and presenting it
                // again credits nothing.
                decision.receipt?.deliveredCredits = 0
                decision.receipt?.deliveredBeforeCoffer = true
            }
            return decision
        }
        var receipt = existing ?? Receipt(owner: owner, transaction: fact)
        receipt.transaction = fact
        receipt.transaction.environment = fact.environment ?? existing?.transaction.environment
        receipt.transaction.keepPayment(of: existing?.transaction)
        receipt.transaction.revocationDate = nil
        receipt.deliveredCredits = credits
        receipt.deliveredAt = now
        receipt.deliveredBeforeCoffer = !credited
        // Delivered before Coffer: the old app credited the balance (a backup or an import carries it) or it was
        // spent; the entry records the purchase at 0, and its credits are what a refund takes back.
        let after = credited ? credit(credits, to: wallet, policy: policy) : wallet
        return applied(
            key: key, owner: owner, amount: credited ? credits : 0, before: wallet, after: after, fact: fact,
            receipt: receipt, reason: credited ? nil : "delivered before Coffer", now: now)
    }
}
