import Foundation

/// An independent model of Coffer's money rules, in the spirit of a bank test: written apart from `CofferCore`'s
/// ledger (it uses none of its types or functions), small enough to be obviously right, and asked before every
/// reply the system gives in the model simulation what that reply must be.
///
/// The rules, as the design states them for the server wallet, each currency (coins, the default, and gems) a
/// ledger of its own:
/// - A purchase is credited once: the catalog's credits in each currency (100 coins and 5 gems per unit of the
///   consumable, none for the others).
/// - Credits added (a purchase, a grant, an allowance, a reversal under `collect`) first pay off the currency's
///   deficit under `collect`; under `forgive` they go to the balance and the deficit stays a record.
/// - A refund takes back what its purchase credited in each currency: from the balance down to zero, the rest
///   becomes that currency's deficit. A purchase refunded before it was credited is never credited (presenting it
///   answers `revoked`).
/// - A reversal of a refund gives back what the refund took: under `collect` as credits added; under `forgive`
///   it cancels the deficit that refund recorded (as far as the deficit still holds it) and gives back the rest
///   to the balance. A purchase refunded before it was credited is credited by the reversal (its first delivery,
///   with its period's allowance while the period runs).
/// - A spend takes credits of one currency from its balance, never below zero; the same key again in that currency
///   changes nothing and answers the balance, with another amount it is refused.
/// - A grant claimed is credited once, in its currency. Support setting a currency's balance sets it; the deficit
///   stays.
/// - Credits that expire: a grant with an end, and each paid subscription period's allowance (50 coins and 2 gems,
///   credited with the period's first delivery while it runs), are a lot of what reached the balance. Spends take
///   the lots ending soonest first; any other debit takes the credits that never expire first (the lots keep at
///   most what the balance holds, the latest ending cut first). At its end what is left of a lot leaves the
///   balance. A refund of a period ends its allowance's lot at the refund; a later period of the same subscription
///   ends the lots of the periods that began before it when it begins.
/// - Entitlements: per product, the latest purchase the server knows of (by purchase date, then id) decides;
///   it must not be refunded; the non-consumable unlocks `adFree`, the subscription unlocks `premium` until it
///   expires by the server's clock.
struct MoneyModel {
    static let coins = "coins"
    static let gems = "gems"
    static let currencies = [coins, gems]

    /// What happens to a deficit.
    enum Policy: String {
        case collect, forgive
    }

    /// One customer's wallet of one currency.
    struct Account: Equatable, CustomStringConvertible {
        var balance: Int64 = 0
        var deficit: Int64 = 0
        var description: String { "balance \(balance), deficit \(deficit)" }
    }

    /// Credits that end: what is left of a grant's or an allowance's.
    struct Lot {
        var id: String
        var customer: Int
        var currency: String
        var remaining: Int64
        var ends: Date
        /// An allowance's subscription and period start.
        var subscription: String?
        var start: Date?
    }

    /// A purchase the server has heard of.
    struct Purchase {
        var customer: Int
        var product: String
        var credits: [String: Int64]
        var purchaseDate: Date
        var expires: Date?
        var original = ""
        var credited = false
        var refunded = false
        /// What the refund recorded as deficit, by currency.
        var refundDeficit: [String: Int64] = [:]
    }

    /// What presenting a transaction answers (the default currency's credits and balance).
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
    /// Each currency's wallets, by customer.
    var wallets: [String: [Account]]
    var lots: [Lot] = []
    /// What the server has heard of, by transaction id.
    var purchases: [String: Purchase] = [:]
    /// Spends applied, by currency and key: (customer, amount).
    var spends: [String: (customer: Int, amount: Int64)] = [:]
    /// Grants claimed.
    var claimed: Set<UUID> = []

    init(policy: Policy, customers: Int) {
        self.policy = policy
        wallets = Dictionary(
            uniqueKeysWithValues: Self.currencies.map { ($0, Array(repeating: Account(), count: customers)) })
    }

    /// The default currency's wallets.
    var accounts: [Account] { wallets[Self.coins] ?? [] }

    func account(_ customer: Int, _ currency: String) -> Account { wallets[currency]?[customer] ?? Account() }

    /// The credits a product's purchase is worth, by currency.
    static func credits(product: String, quantity: Int) -> [String: Int64] {
        product == ModelRun.credits ? [coins: 100 * Int64(quantity), gems: 5 * Int64(quantity)] : [:]
    }

    /// What each paid period of a product gives, ending with the period.
    static func allowance(product: String) -> [String: Int64] {
        product == ModelRun.pro ? [coins: 50, gems: 2] : [:]
    }

    /// Adds `amount`; returns what reached the balance.
    @discardableResult
    private mutating func add(_ amount: Int64, _ currency: String, to customer: Int) -> Int64 {
        var account = account(customer, currency)
        let paid = policy == .collect ? min(account.deficit, amount) : 0
        account.deficit -= paid
        account.balance += amount - paid
        wallets[currency]?[customer] = account
        return amount - paid
    }

    /// Takes `amount` back; returns what became deficit.
    private mutating func takeBack(_ amount: Int64, _ currency: String, from customer: Int) -> Int64 {
        var account = account(customer, currency)
        let fromBalance = min(account.balance, amount)
        account.balance -= fromBalance
        account.deficit += amount - fromBalance
        wallets[currency]?[customer] = account
        trim(customer, currency)
        return amount - fromBalance
    }

    /// The lots of one wallet, ending soonest first.
    private func indices(_ customer: Int, _ currency: String) -> [Int] {
        lots.indices.filter { lots[$0].customer == customer && lots[$0].currency == currency }
            .sorted { (lots[$0].ends, lots[$0].id) < (lots[$1].ends, lots[$1].id) }
    }

    /// The lots hold at most what the balance holds: the latest ending give up the rest.
    private mutating func trim(_ customer: Int, _ currency: String) {
        var excess =
            indices(customer, currency).reduce(0) { $0 + lots[$1].remaining }
            - account(customer, currency).balance
        for index in indices(customer, currency).reversed() where excess > 0 {
            let cut = min(excess, lots[index].remaining)
            lots[index].remaining -= cut
            excess -= cut
        }
        lots.removeAll { $0.remaining <= 0 }
    }

    /// Credits that end at `ends` reach the balance: a lot of what did.
    private mutating func addLot(
        _ id: String, _ amount: Int64, _ currency: String, to customer: Int, ends: Date, subscription: String? = nil,
        start: Date? = nil
    ) {
        let reached = add(amount, currency, to: customer)
        guard reached > 0 else { return }
        if let subscription, let start {
            for index in lots.indices
            where lots[index].subscription == subscription && lots[index].currency == currency
                && lots[index].customer == customer && (lots[index].start ?? .distantPast) < start
            {
                lots[index].ends = min(lots[index].ends, start)
            }
        }
        lots.append(
            Lot(
                id: id, customer: customer, currency: currency, remaining: reached, ends: ends,
                subscription: subscription, start: start))
    }

    /// Credits a purchase first delivered at `now`, and its period's allowance while the period runs.
    private mutating func credit(_ id: String, _ known: Purchase, at now: Date) {
        for (currency, amount) in known.credits where amount > 0 { add(amount, currency, to: known.customer) }
        guard let expires = known.expires, expires > now else { return }
        for (currency, amount) in Self.allowance(product: known.product) {
            addLot(
                "allowance:\(id)", amount, currency, to: known.customer, ends: expires, subscription: known.original,
                start: known.purchaseDate)
        }
    }

    /// Takes a refunded purchase's credits back and ends its period's allowance.
    private mutating func takeBack(_ id: String, _ known: inout Purchase, at now: Date) {
        for (currency, amount) in known.credits where amount > 0 {
            known.refundDeficit[currency] = takeBack(amount, currency, from: known.customer)
        }
        for index in lots.indices where lots[index].id == "allowance:\(id)" {
            lots[index].ends = min(lots[index].ends, now)
        }
    }

    /// The app presents a transaction (or a purchase notification brings it) at `now`: `refunded` when Apple's
    /// signed data says it was refunded.
    mutating func present(_ id: String, _ purchase: Purchase, refunded: Bool, at now: Date) -> Presented {
        var known = purchases[id] ?? purchase
        defer { purchases[id] = known }
        let customer = known.customer
        let credits = known.credits[Self.coins] ?? 0
        if known.refunded { return .revoked(balance: accounts[customer].balance) }
        if refunded {
            known.refunded = true
            if known.credited { takeBack(id, &known, at: now) }
            return .revoked(balance: accounts[customer].balance)
        }
        if known.credited { return .duplicate(credits: credits, balance: accounts[customer].balance) }
        known.credited = true
        credit(id, known, at: now)
        return .delivered(credits: credits, balance: accounts[customer].balance)
    }

    /// Apple's refund reaches the server at `now`.
    mutating func refund(_ id: String, _ purchase: Purchase, at now: Date) {
        var known = purchases[id] ?? purchase
        defer { purchases[id] = known }
        guard !known.refunded else { return }
        known.refunded = true
        if known.credited { takeBack(id, &known, at: now) }
    }

    /// Apple's reversal of a refund reaches the server at `now`.
    mutating func reverse(_ id: String, at now: Date) {
        guard var known = purchases[id], known.refunded else { return }
        defer { purchases[id] = known }
        known.refunded = false
        guard known.credited else {
            known.credited = true
            credit(id, known, at: now)
            return
        }
        for (currency, amount) in known.credits where amount > 0 {
            switch policy {
            case .collect:
                add(amount, currency, to: known.customer)
            case .forgive:
                var account = account(known.customer, currency)
                let cancelled = min(account.deficit, known.refundDeficit[currency] ?? 0)
                account.deficit -= cancelled
                account.balance += amount - cancelled
                wallets[currency]?[known.customer] = account
            }
        }
    }

    mutating func spend(_ amount: Int64, key: String, customer: Int, currency: String = coins) -> Spent {
        if let done = spends["\(currency) \(key)"] {
            return done.amount == amount ? .balance(account(customer, currency).balance) : .keyReused
        }
        guard amount <= account(customer, currency).balance else { return .insufficient }
        wallets[currency]?[customer].balance -= amount
        var left = amount
        for index in indices(customer, currency) where left > 0 {
            let cut = min(left, lots[index].remaining)
            lots[index].remaining -= cut
            left -= cut
        }
        trim(customer, currency)
        spends["\(currency) \(key)"] = (customer, amount)
        return .balance(account(customer, currency).balance)
    }

    /// A grant is claimed at `now` (again, it changes nothing); answers the default currency's balance.
    mutating func claim(
        _ grant: UUID, credits: Int64, customer: Int, currency: String = coins, days: Int? = nil, at now: Date
    ) -> Int64 {
        if claimed.insert(grant).inserted {
            if let days {
                addLot(
                    grant.uuidString.lowercased(), credits, currency, to: customer,
                    ends: now.addingTimeInterval(TimeInterval(days) * 86_400))
            } else {
                add(credits, currency, to: customer)
            }
        }
        return accounts[customer].balance
    }

    mutating func setBalance(_ balance: Int64, customer: Int, currency: String = coins) {
        wallets[currency]?[customer].balance = balance
        trim(customer, currency)
    }

    /// Every lot whose end has come at `now` leaves the balance.
    mutating func expire(at now: Date) {
        for index in lots.indices where lots[index].ends <= now {
            let lot = lots[index]
            let taken = min(lot.remaining, account(lot.customer, lot.currency).balance)
            wallets[lot.currency]?[lot.customer].balance -= taken
            lots[index].remaining = 0
        }
        lots.removeAll { $0.remaining <= 0 }
    }

    /// What is left of a customer's credits that end, by currency (none left out).
    func expiring(of customer: Int) -> [String: Int64] {
        var sums: [String: Int64] = [:]
        for lot in lots where lot.customer == customer { sums[lot.currency, default: 0] += lot.remaining }
        return sums
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
