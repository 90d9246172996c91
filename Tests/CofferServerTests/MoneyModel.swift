import Foundation

/// An independent model of Coffer's money rules, in the spirit of a bank test: written apart from `CofferCore`'s
/// ledger (it uses none of its types or functions), small enough to be obviously right, and asked before every
/// reply the system gives in the model simulation what that reply must be.
///
/// The rules, as the design states them for the server wallet:
/// - A purchase is credited once: the catalog's credits (100 per unit of the consumable, none for the others).
/// - Credits added (a purchase, a grant, a reversal under `collect`) first pay off the deficit under `collect`;
///   under `forgive` they go to the balance and the deficit stays a record.
/// - A refund takes back what its purchase credited: from the balance down to zero, the rest becomes deficit.
///   A purchase refunded before it was credited is never credited (presenting it answers `revoked`).
/// - A reversal of a refund gives back what the refund took: under `collect` as credits added; under `forgive`
///   it cancels the deficit that refund recorded (as far as the deficit still holds it) and gives back the rest
///   to the balance. A purchase refunded before it was credited is credited by the reversal.
/// - A spend takes credits from the balance, never below zero; the same key again changes nothing and answers
///   the balance, with another amount it is refused.
/// - A grant claimed is credited once. Support setting the balance sets the balance; the deficit stays.
/// - Entitlements: per product, the latest purchase the server knows of (by purchase date, then id) decides;
///   it must not be refunded; the non-consumable unlocks `adFree`, the subscription unlocks `premium` until it
///   expires by the server's clock.
struct MoneyModel {
    /// What happens to a deficit.
    enum Policy: String {
        case collect, forgive
    }

    /// One customer's wallet.
    struct Account: Equatable, CustomStringConvertible {
        var balance: Int64 = 0
        var deficit: Int64 = 0
        var description: String { "balance \(balance), deficit \(deficit)" }
    }

    /// A purchase the server has heard of.
    struct Purchase {
        var customer: Int
        var product: String
        var credits: Int64
        var purchaseDate: Date
        var expires: Date?
        var credited = false
        var refunded = false
        /// What the refund recorded as deficit.
        var refundDeficit: Int64 = 0
    }

    /// What presenting a transaction answers.
    enum Presented: Equatable, CustomStringConvertible {
        case delivered(credits: Int64, balance: Int64)
        case duplicate(credits: Int64, balance: Int64)
        case revoked(balance: Int64)

        var description: String {
            switch self {
            case .delivered(let credits, let balance): "delivered \(credits), balance \(balance)"
            case .duplicate(let credits, let balance): "duplicate \(credits), balance \(balance)"
            case .revoked(let balance): "revoked, balance \(balance)"
            }
        }
    }

    /// What a spend answers.
    enum Spent: Equatable, CustomStringConvertible {
        case balance(Int64)
        case insufficient
        case keyReused

        var description: String {
            switch self {
            case .balance(let balance): "balance \(balance)"
            case .insufficient: "insufficient balance"
            case .keyReused: "key reused"
            }
        }
    }

    let policy: Policy
    var accounts: [Account]
    /// What the server has heard of, by transaction id.
    var purchases: [String: Purchase] = [:]
    /// Spends applied: key to (customer, amount).
    var spends: [String: (customer: Int, amount: Int64)] = [:]
    /// Grants claimed.
    var claimed: Set<UUID> = []

    init(policy: Policy, customers: Int) {
        self.policy = policy
        accounts = Array(repeating: Account(), count: customers)
    }

    /// The credits a product's purchase is worth.
    static func credits(product: String, quantity: Int) -> Int64 {
        product == ModelRun.credits ? 100 * Int64(quantity) : 0
    }

    private mutating func add(_ amount: Int64, to customer: Int) {
        var account = accounts[customer]
        let paid = policy == .collect ? min(account.deficit, amount) : 0
        account.deficit -= paid
        account.balance += amount - paid
        accounts[customer] = account
    }

    /// Takes `amount` back; returns what became deficit.
    private mutating func takeBack(_ amount: Int64, from customer: Int) -> Int64 {
        let fromBalance = min(accounts[customer].balance, amount)
        accounts[customer].balance -= fromBalance
        accounts[customer].deficit += amount - fromBalance
        return amount - fromBalance
    }

    /// The app presents a transaction (or a purchase notification brings it): `refunded` when Apple's signed
    /// data says it was refunded.
    mutating func present(_ id: String, _ purchase: Purchase, refunded: Bool) -> Presented {
        var known = purchases[id] ?? purchase
        defer { purchases[id] = known }
        let customer = known.customer
        if known.refunded { return .revoked(balance: accounts[customer].balance) }
        if refunded {
            known.refunded = true
            known.refundDeficit = known.credited ? takeBack(known.credits, from: customer) : 0
            return .revoked(balance: accounts[customer].balance)
        }
        if known.credited { return .duplicate(credits: known.credits, balance: accounts[customer].balance) }
        known.credited = true
        add(known.credits, to: customer)
        return .delivered(credits: known.credits, balance: accounts[customer].balance)
    }

    /// Apple's refund reaches the server.
    mutating func refund(_ id: String, _ purchase: Purchase) {
        var known = purchases[id] ?? purchase
        defer { purchases[id] = known }
        guard !known.refunded else { return }
        known.refunded = true
        known.refundDeficit = known.credited ? takeBack(known.credits, from: known.customer) : 0
    }

    /// Apple's reversal of a refund reaches the server.
    mutating func reverse(_ id: String) {
        guard var known = purchases[id], known.refunded else { return }
        defer { purchases[id] = known }
        known.refunded = false
        guard known.credited else {
            known.credited = true
            add(known.credits, to: known.customer)
            return
        }
        switch policy {
        case .collect:
            add(known.credits, to: known.customer)
        case .forgive:
            let cancelled = min(accounts[known.customer].deficit, known.refundDeficit)
            accounts[known.customer].deficit -= cancelled
            accounts[known.customer].balance += known.credits - cancelled
        }
    }

    mutating func spend(_ amount: Int64, key: String, customer: Int) -> Spent {
        if let done = spends[key] {
            return done.amount == amount ? .balance(accounts[customer].balance) : .keyReused
        }
        guard amount <= accounts[customer].balance else { return .insufficient }
        accounts[customer].balance -= amount
        spends[key] = (customer, amount)
        return .balance(accounts[customer].balance)
    }

    /// A grant is claimed (again, it changes nothing); answers the balance.
    mutating func claim(_ grant: UUID, credits: Int64, customer: Int) -> Int64 {
        if claimed.insert(grant).inserted { add(credits, to: customer) }
        return accounts[customer].balance
    }

    mutating func setBalance(_ balance: Int64, customer: Int) {
        accounts[customer].balance = balance
    }

    /// The customer's entitlements at `now` (the server's clock).
    func entitlements(of customer: Int, at now: Date) -> [String] {
        var latest: [String: (date: Date, id: String, purchase: Purchase)] = [:]
        for (id, purchase) in purchases where purchase.customer == customer {
            if let current = latest[purchase.product], (current.date, current.id) > (purchase.purchaseDate, id) {
                continue
            }
            latest[purchase.product] = (purchase.purchaseDate, id, purchase)
        }
        var names: Set<String> = []
        for (product, found) in latest where !found.purchase.refunded {
            if product == ModelRun.noAds { names.insert("adFree") }
            if product == ModelRun.pro, let expires = found.purchase.expires, now < expires { names.insert("premium") }
        }
        return names.sorted()
    }
}
