import CofferAPI
import CofferAdmin
import CofferAppStore
import CofferCore
import CofferServer
import CofferService
import CofferSimulator
import CofferStore
import CofferStoreKit
import CofferStoreSQLite
import CofferTestSupport
import Foundation
import Hummingbird
import Logging
import Synchronization
import Testing

/// Thousands of seeded schedules, fast: Apple (the simulator, signing every transaction and notification), two
/// server instances' services over one store (in memory, or SQLite on a RAM-backed file), three customers, and
/// support, in one process on virtual time with no sleeps. Customers buy, present, spend (again with the same
/// key), claim grants (support's grants and balance edits meet the faults too); Apple refunds, reverses refunds and renews subscriptions, and its notifications arrive
/// late, twice and out of order; support sets balances; Apple's clock moves forward and the server's clock
/// steps back and forward (NTP corrections) around it; the database goes away during requests, before an
/// operation or after a commit whose answer is lost. ``MoneyModel``, written apart from the ledger, predicts
/// every reply: the outcome, credits, balance, deficit and entitlements; a request a fault failed must answer
/// 503 `database-unavailable`, and asked again must answer as the model says given what committed.
///
/// A failing seed prints itself with its steps and its replay command; `COFFER_MODEL_SEEDS=SEED` replays it.
/// Long runs: `scripts/simulate 100000`.
@Suite("Model simulation", .timeLimit(.minutes(10)), .tags(.sweep))
struct ModelSimulationTests {
    /// The seeds to run: `COFFER_MODEL_SEEDS` as `N`, `A-B` or `A,B,C`; 1-1000 by default.
    static let seeds = SeedList.parse(ProcessInfo.processInfo.environment["COFFER_MODEL_SEEDS"], fallback: "1-1000")
    /// Steps per seed: `COFFER_MODEL_STEPS`, 100 by default.
    static let steps = Int(ProcessInfo.processInfo.environment["COFFER_MODEL_STEPS"] ?? "") ?? 100

    @Test("every reply of every seeded schedule agrees with the money model, through database faults and clock steps")
    func schedules() async throws {
        let pki = try ModelRun.makePKI()
        let started = ContinuousClock.now
        let steps = Self.steps
        // As many seeds at once as there are cores: each seed is sequential, and waits on nothing but the CPU.
        let width = max(2, ProcessInfo.processInfo.activeProcessorCount)
        var pending = Self.seeds[...]
        var totals = ModelRun.Totals()
        var failures: [(UInt64, String)] = []
        await withTaskGroup(of: (UInt64, Result<ModelRun.Totals, any Error>, String).self) { group in
            func start(_ seed: UInt64) {
                group.addTask {
                    let run = ModelRun(seed: seed, pki: pki)
                    do {
                        return (seed, .success(try await run.run(steps: steps)), "")
                    } catch {
                        return (seed, .failure(error), run.log.joined(separator: "\n"))
                    }
                }
            }
            for _ in 0..<width { if let seed = pending.popFirst() { start(seed) } }
            for await (seed, result, log) in group {
                switch result {
                case .success(let counted): totals.add(counted)
                case .failure(let error): failures.append((seed, "\(error)\n\(log)"))
                }
                if let next = pending.popFirst() { start(next) }
            }
        }
        for (seed, text) in failures.sorted(by: { $0.0 < $1.0 }) {
            Issue.record(
                Comment(
                    rawValue: "model simulation seed \(seed) failed: \(text)\nreplay: COFFER_MODEL_SEEDS=\(seed) "
                        + "COFFER_MODEL_STEPS=\(steps) swift test --filter ModelSimulationTests"))
        }
        let seconds = (ContinuousClock.now - started) / .seconds(1)
        // One line for the long-run script and BENCHMARKS.md.
        print(
            "model simulation: \(Self.seeds.count) seeds × \(steps) steps in \(String(format: "%.1f", seconds)) s "
                + "(\(String(format: "%.1f", Double(Self.seeds.count) / max(seconds, 0.001))) seeds/s, width \(width)); "
                + "\(totals.requests) requests, \(totals.faults) database faults answered 503 and asked again, "
                + "\(totals.lostCommits) of them after a commit; \(failures.count) failing seeds")
        #expect(totals.requests > Self.seeds.count * steps / 2)
        #expect(Self.seeds.count < 50 || totals.lostCommits > 0)
    }
}

/// One seed's run of the model simulation.
final class ModelRun {
    static let credits = "com.example.credits"
    static let noAds = "com.example.noads"
    static let pro = "com.example.pro"
    static let start = Date(timeIntervalSince1970: 1_780_000_000)
    static let bundleId = "com.example.coffer"
    static let customers = 3

    /// What a run counted.
    struct Totals {
        var requests = 0
        var faults = 0
        var lostCommits = 0

        mutating func add(_ other: Totals) {
            requests += other.requests
            faults += other.faults
            lostCommits += other.lostCommits
        }
    }

    /// Apple's signing chain, made once for every seed (its dates cover any run's clock).
    static func makePKI() throws -> SimulatorPKI {
        try SimulatorPKI(
            validFrom: start.addingTimeInterval(-86_400), leafValidUntil: start.addingTimeInterval(4_000 * 86_400))
    }

    /// A customer: their Apple account and their app's user on the server.
    struct Customer {
        let account: String
        let user: User
        let appAccountToken: UUID
        let supportId: String
    }

    /// A notification Apple sent that has not reached the server yet.
    struct InFlight {
        let notification: OutgoingNotification
        /// Whether the transaction it carries was refunded when Apple signed it.
        let refunded: Bool
        /// Whether the server acknowledged it already (a copy Apple sends again).
        var acknowledged = false
    }

    let seed: UInt64
    let pki: SimulatorPKI
    var random: SeededGenerator
    var log: [String] = []
    var totals = Totals()
    let policy: MoneyModel.Policy
    var model: MoneyModel
    let appleClock: SimulatorClock
    /// The server's clock is Apple's plus this offset: NTP steps it back and forward.
    let offset = ClockStep()
    var customers: [Customer] = []
    var inFlight: [InFlight] = []
    var sentCount = 0
    var spendKeys: [(key: String, amount: Int64, customer: Int, currency: String)] = []
    var grants: [(id: UUID, credits: Int64, customer: Int)] = []

    init(seed: UInt64, pki: SimulatorPKI) {
        self.seed = seed
        self.pki = pki
        random = SeededGenerator(state: seed)
        policy = seed % 2 == 0 ? .collect : .forgive
        model = MoneyModel(policy: policy, customers: Self.customers)
        appleClock = SimulatorClock(start: Self.start)
    }

    func note(_ line: String) { log.append(line) }
    func chance(_ percent: Int) -> Bool { Int.random(in: 0..<100, using: &random) < percent }
    func serverNow() -> Date { appleClock.now().addingTimeInterval(offset.seconds) }

    func run(steps: Int) async throws -> Totals {
        let engine = seed % 4 == 1 ? "sqlite" : "memory"
        note("seed \(seed): \(policy.rawValue) policy, \(engine) store")
        let (coins, gems) = (Currency(rawValue: MoneyModel.coins)!, Currency(rawValue: MoneyModel.gems)!)
        let catalog = try Catalog(
            products: [
                CatalogProduct(id: Self.credits, kind: .consumable, credits: 100, otherCredits: [gems: 5]),
                CatalogProduct(id: Self.noAds, kind: .nonConsumable, entitlements: ["adFree"]),
                CatalogProduct(
                    id: Self.pro, kind: .autoRenewable, entitlements: ["premium"], group: "pro",
                    allowance: [coins: 50, gems: 2]),
            ],
            currencies: [CurrencyDefinition(id: coins, name: "Coins"), CurrencyDefinition(id: gems, name: "Gems")])
        let apple = SimulatedAppStore(
            catalog: catalog, configuration: .init(bundleId: Self.bundleId, appAppleId: 1_234),
            signer: try pki.signer(), clock: appleClock)
        var file: String?
        let base: any CofferStore
        if engine == "sqlite" {
            let folder = FileManager.default.fileExists(atPath: "/dev/shm") ? "/dev/shm" : NSTemporaryDirectory()
            let path = "\(folder)/coffer-model-\(UUID().uuidString).sqlite"
            file = path
            base = try TestSQLite.store(at: path, durability: .normal)
        } else {
            base = InMemoryStore()
        }
        defer {
            if let file {
                for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: file + suffix) }
            }
        }
        let store = CountingStore(base: base)
        var configuration = ServerConfiguration(bundleId: Self.bundleId)
        configuration.wallet = .server
        configuration.deficitPolicy = policy == .collect ? .collect : .forgive
        let dependencies = try ServerDependencies(
            store: store,
            verifier: try SignedDataVerifier(
                rootCertificates: [pki.rootDER()], bundleId: Self.bundleId, appAppleId: 1_234, environment: .sandbox),
            catalog: catalog, now: { [offset, appleClock] in appleClock.now().addingTimeInterval(offset.seconds) })
        // Two instances of the server on one database: each request goes to either.
        func instance() -> (ClientService, NotificationIntake) {
            let parts = ServiceParts(
                configuration: configuration.service, dependencies: dependencies, events: EventHub(),
                ledger: LedgerBatcher(store: store))
            return (ClientService(parts), NotificationIntake(parts))
        }
        var instances = [instance(), instance()]
        let support = AdminService(
            store: store, catalog: catalog, walletMode: .server,
            now: { [offset, appleClock] in appleClock.now().addingTimeInterval(offset.seconds) })
        let logger = Logger(label: "coffer.model-simulation", factory: { _ in SwiftLogNoOpLogHandler() })

        for index in 0..<Self.customers {
            let created = try await instances[0].0.createUser()
            customers.append(
                Customer(
                    account: "customer\(index)", user: try await instances[0].0.authenticate(token: created.token),
                    appAccountToken: created.appAccountToken, supportId: created.supportId))
        }

        for step in 1...steps {
            let customer = Int.random(in: 0..<Self.customers, using: &random)
            let (client, intake) = instances[Int.random(in: 0..<2, using: &random)]
            try await act(
                step: step, customer: customer, client: client, intake: intake, apple: apple, support: support,
                store: store, logger: logger)
            if chance(2) {
                note("step \(step): an instance restarts")
                instances[Int.random(in: 0..<2, using: &random)] = instance()
            }
            try await check(after: "step \(step)", client: client, store: store)
        }
        // Apple's retries deliver everything still in flight; the books must be sound and as the model says.
        await takeSent(apple)
        while !inFlight.isEmpty {
            try await deliver(0, intake: instances[0].1, store: store, logger: logger, step: steps + 1)
        }
        try await check(after: "settled", client: instances[1].0, store: store)
        for customer in customers {
            var problems = LedgerAudit.discrepancies(
                entries: try await store.entries(owner: customer.user.id, environment: .sandbox),
                wallet: try await store.wallet(owner: customer.user.id, environment: .sandbox))
            for (currency, wallet) in try await store.currencyWallets(owner: customer.user.id, environment: .sandbox) {
                problems += LedgerAudit.discrepancies(
                    entries: try await store.entries(
                        owner: customer.user.id, environment: .sandbox, currency: currency),
                    wallet: wallet)
            }
            guard problems.isEmpty else { throw Broken(description: "\(customer.account)'s books: \(problems)") }
        }
        return totals
    }

    // MARK: The steps

    func act(
        step: Int, customer index: Int, client: ClientService, intake: NotificationIntake, apple: SimulatedAppStore,
        support: AdminService, store: CountingStore, logger: Logger
    ) async throws {
        let customer = customers[index]
        switch Int.random(in: 0..<100, using: &random) {
        case 0..<24:
            let product = [Self.credits, Self.credits, Self.credits, Self.noAds, Self.pro].randomElement(
                using: &random)!
            let quantity = product == Self.credits ? Int.random(in: 1...5, using: &random) : 1
            let bought: SimulatorReport
            do {
                bought = try await apple.purchase(
                    account: customer.account, productId: product, quantity: quantity,
                    appAccountToken: customer.appAccountToken)
            } catch {
                note("step \(step): \(customer.account) cannot buy \(product): \(error)")
                return
            }
            await takeSent(apple)
            guard let id = bought.transactionIds.first else { return }
            note("step \(step): \(customer.account) buys \(product) ×\(quantity): \(id)")
            // Sometimes the app dies before it presents: the notification delivers it, or a later launch.
            if chance(70) { try await present(id, customer: index, client: client, apple: apple, store: store) }
        case 24..<34:
            guard
                let transaction = await apple.accountTransactions(account: customer.account).randomElement(
                    using: &random)
            else { return }
            note("step \(step): \(customer.account)'s app presents \(transaction.id) again")
            try await present(transaction.id, customer: index, client: client, apple: apple, store: store)
        case 34..<50:
            await takeSent(apple)
            let count = Int.random(in: 1...4, using: &random)
            note("step \(step): \(min(count, inFlight.count)) of \(inFlight.count) notifications arrive")
            for _ in 0..<count {
                guard let next = nextDeliverable() else { break }
                try await deliver(next, intake: intake, store: store, logger: logger, step: step)
            }
        case 50..<57:
            let paid = await apple.accountTransactions(account: customer.account).filter {
                $0.revocationDate == nil && !refundedAtApple.contains($0.id)
            }
            guard let transaction = paid.randomElement(using: &random) else { return }
            note("step \(step): Apple refunds \(transaction.id) (\(transaction.productId))")
            refundedAtApple.insert(transaction.id)
            _ = try await apple.refund(transactionId: transaction.id)
            await takeSent(apple)
        case 57..<61:
            let refunded = await apple.accountTransactions(account: customer.account).filter {
                $0.revocationDate != nil
            }
            guard let transaction = refunded.randomElement(using: &random) else { return }
            note("step \(step): Apple reverses the refund of \(transaction.id)")
            _ = try await apple.reverseRefund(transactionId: transaction.id)
            await takeSent(apple)
        case 61..<76:
            let reuse = chance(15) ? spendKeys.filter({ $0.customer == index }).randomElement(using: &random) : nil
            let currency = reuse?.currency ?? (chance(30) ? MoneyModel.gems : MoneyModel.coins)
            let balance = model.account(index, currency).balance
            let key = reuse?.key ?? "spend-\(seed)-\(step)"
            let amount =
                reuse.map { chance(80) ? $0.amount : $0.amount + 1 }
                ?? Int64.random(in: 1...(balance + 30), using: &random)
            note("step \(step): \(customer.account) spends \(amount) of \(balance) \(currency) with \(key)")
            let expected = model.spend(amount, key: key, customer: index, currency: currency)
            if reuse == nil, case .balance = expected { spendKeys.append((key, amount, index, currency)) }
            do {
                let (balance, _) = try await request("spend", store: store) {
                    try await client.spend(amount, currency: currency, key: key, for: customer.user)
                }
                guard expected == .balance(balance) else {
                    throw Broken(
                        description: "step \(step): the spend answered balance \(balance), the model \(expected)")
                }
            } catch let error as ServiceError {
                let answered: MoneyModel.Spent =
                    switch error {
                    case .ledger(.insufficientBalance): .insufficient
                    case .ledger(.keyReused): .keyReused
                    default: throw error
                    }
                guard answered == expected else {
                    throw Broken(description: "step \(step): the spend answered \(answered), the model \(expected)")
                }
            }
        case 76..<84:
            let credits = Int64.random(in: 1...300, using: &random)
            let grant: GrantView
            if chance(25), let old = grants.filter({ $0.customer == index }).randomElement(using: &random) {
                note("step \(step): \(customer.account)'s app claims grant \(old.id) again")
                grant = try await support.grant(environment: .sandbox, id: old.id.uuidString)
            } else {
                // Support's grant, asked again with its id after a lost answer: one grant.
                let id = UUID(
                    uuidString: String(format: "00000000-0000-4000-8000-%012llx", seed &* 1_000 &+ UInt64(step)))
                let currency = chance(30) ? MoneyModel.gems : nil
                let days = chance(40) ? Int.random(in: 1...30, using: &random) : nil
                (grant, _) = try await request("grant", store: store) {
                    try await support.createGrant(
                        environment: .sandbox, supportId: customer.supportId, credits: credits,
                        reason: "model simulation", actor: "support", id: id, currency: currency, expiresInDays: days)
                }
                guard grant.id == id, grants.allSatisfy({ $0.id != grant.id }) else {
                    throw Broken(description: "step \(step): support's grant asked again made another")
                }
                grants.append((grant.id, credits, index))
                note(
                    "step \(step): support grants \(credits) \(currency ?? MoneyModel.coins) to \(customer.account)"
                        + "\(days.map { ", ending \($0) days after the claim" } ?? ""); the app claims it")
            }
            let expected = model.claim(
                grant.id, credits: grant.credits, customer: index, currency: grant.currency ?? MoneyModel.coins,
                days: grant.expiresInDays, at: serverNow())
            let (claimed, _) = try await request("claim", store: store) {
                try await client.claimGrant(grant.id, for: customer.user)
            }
            guard claimed.balance == expected, claimed.grant.claimedAt != nil else {
                throw Broken(
                    description: "step \(step): the claim answered balance \(claimed.balance), the model \(expected)")
            }
        case 84..<87:
            let balance = Int64.random(in: 0...1_000, using: &random)
            let currency = chance(30) ? MoneyModel.gems : MoneyModel.coins
            note("step \(step): support sets \(customer.account)'s \(currency) balance to \(balance)")
            // Setting a balance says what it becomes: asked again after a lost answer, it changes nothing more.
            let (change, _) = try await request("set balance", store: store) {
                try await support.setBalance(
                    environment: .sandbox, supportId: customer.supportId, balance: balance, reason: "model simulation",
                    actor: "support", currency: currency)
            }
            model.setBalance(balance, customer: index, currency: currency)
            guard change.after == balance else {
                throw Broken(description: "step \(step): the balance was set to \(change.after), not \(balance)")
            }
        case 87..<93:
            let seconds = TimeInterval(Int.random(in: 3_600...(20 * 86_400), using: &random))
            note("step \(step): Apple's clock moves \(Int(seconds)) s")
            _ = try await apple.advanceClock(by: seconds)
            await takeSent(apple)
        case 93..<96:
            let shift = TimeInterval(Int.random(in: -900...900, using: &random))
            note("step \(step): the server's clock is stepped to Apple's \(shift > 0 ? "+" : "")\(Int(shift)) s")
            offset.seconds = shift
        default:
            note("step \(step): \(customer.account)'s app asks for its wallet")
            let (me, _) = try await request("me", store: store) { try await client.me(user: customer.user) }
            let expected = model.accounts[index]
            let entitlements = model.entitlements(of: index, at: serverNow())
            let balances = Dictionary(
                uniqueKeysWithValues: MoneyModel.currencies.map {
                    ($0, model.account(index, $0).balance)
                })
            let deficits = Dictionary(
                uniqueKeysWithValues: MoneyModel.currencies.map {
                    ($0, model.account(index, $0).deficit)
                })
            var expiring: [String: Int64] = [:]
            for item in me.expiring ?? [] { expiring[item.currency, default: 0] += item.amount }
            guard me.balance == expected.balance, me.deficit == expected.deficit, me.entitlements == entitlements,
                me.balances == balances, me.deficits == deficits, expiring == model.expiring(of: index)
            else {
                throw Broken(
                    description: "step \(step): me answered balances \(me.balances ?? [:]), deficits "
                        + "\(me.deficits ?? [:]), expiring \(expiring), \(me.entitlements); the model \(balances), "
                        + "\(deficits), \(model.expiring(of: index)), \(entitlements)")
            }
        }
    }

    /// Transactions Apple has refunded: each is refunded once (a refund Apple reversed stays reversed).
    var refundedAtApple: Set<String> = []

    /// The app presents Apple's current signed transaction.
    func present(
        _ id: String, customer index: Int, client: ClientService, apple: SimulatedAppStore, store: CountingStore
    )
        async throws
    {
        let signed = try await apple.signedTransaction(id: id)
        guard
            let transaction = await apple.accountTransactions(account: customers[index].account).first(where: {
                $0.id == id
            })
        else { throw Broken(description: "Apple lost \(id)") }
        let predicted = model.present(
            id, purchase(transaction, customer: index), refunded: transaction.revocationDate != nil, at: serverNow())
        let (answer, committed) = try await request("present", store: store) {
            try await client.present(signed, user: customers[index].user)
        }
        // Asked again after a commit whose answer was lost: the purchase is there already.
        let expected: MoneyModel.Presented =
            switch predicted {
            case .delivered(let credits, let balance) where committed?.contains("apply") == true:
                .duplicate(credits: credits, balance: balance)
            default: predicted
            }
        guard answer.outcome != .recorded else {
            throw Broken(description: "presenting \(id) answered recorded, which only previouslyDelivered asks for")
        }
        let got: MoneyModel.Presented =
            switch answer.outcome {
            case .delivered, .recorded: .delivered(credits: answer.credits, balance: answer.balance)
            case .duplicate: .duplicate(credits: answer.credits, balance: answer.balance)
            case .revoked: .revoked(balance: answer.balance)
            }
        let entitlements = model.entitlements(of: index, at: serverNow())
        guard got == expected, answer.entitlements == entitlements else {
            throw Broken(
                description: "presenting \(id) answered \(got), \(answer.entitlements); the model \(expected), "
                    + "\(entitlements)")
        }
    }

    func purchase(_ transaction: StoreTransaction, customer: Int) -> MoneyModel.Purchase {
        MoneyModel.Purchase(
            customer: customer, product: transaction.productId,
            credits: MoneyModel.credits(product: transaction.productId, quantity: transaction.quantity),
            purchaseDate: transaction.purchaseDate, expires: transaction.expirationDate,
            original: transaction.originalId)
    }

    /// Runs a request; sometimes the database goes away during it. A request the fault failed must answer 503
    /// `database-unavailable`; it is asked again with the database back (as the SDK and Apple do). Returns the
    /// answer, and for a request asked again the writes its failed attempt committed.
    func request<T>(_ what: String, store: CountingStore, _ call: () async throws -> T) async throws
        -> (T, committed: [String]?)
    {
        totals.requests += 1
        let fault: FaultPlan.Fault? =
            chance(12) ? (chance(40) ? .loseCommit : .refuse(call: Int.random(in: 0...5, using: &random))) : nil
        store.faults.arm(fault)
        do {
            let answer = try await call()
            store.faults.disarm()
            return (answer, nil)
        } catch {
            let (fired, committed) = store.faults.disarm()
            guard fired else { throw error }
            let answer = ServiceError(error)
            guard answer.status == .serviceUnavailable, answer.code == "database-unavailable" else {
                throw Broken(description: "\(what): the database went away and it answered \(answer.status) \(answer)")
            }
            totals.faults += 1
            if !committed.isEmpty { totals.lostCommits += 1 }
            note("  the database went away (\(fault.map { "\($0)" } ?? "")); 503; committed: \(committed)")
            return (try await call(), committed)
        }
    }

    /// Transactions as Apple knows them, by id, for the notifications' model facts.
    var facts: [String: MoneyModel.Purchase] = [:]
}
