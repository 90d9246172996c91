import CofferAppStore
import CofferCore
import CofferStoreKit
import Foundation

/// The App Store, simulated for one app: accounts with their devices, purchases, subscriptions that renew
/// on a controllable clock, refunds, family sharing, Ask to Buy, and a Notification V2 for every state
/// change, all signed by a ``SimulatorPKI`` exactly as Apple shapes them.
///
/// ```swift
/// let store = SimulatedAppStore(catalog: catalog, configuration: .init(bundleId: "com.example", appAppleId: 1),
///                               signer: try pki.signer(), clock: SimulatorClock(start: .now))
/// let report = try await store.purchase(account: "alice", productId: "com.example.credits", quantity: 3)
/// try await store.advanceClock(by: 31 * 86_400)   // renewals, grace periods and expiries happen here
/// ```
public actor SimulatedAppStore {
    /// The products on sale.
    public let catalog: Catalog
    /// The app and its settings.
    public let configuration: SimulatorConfiguration
    /// The simulated time.
    public let clock: SimulatorClock
    /// Signs app receipts in Apple's PKCS#7 shape, when set.
    public let receiptAuthority: SimulatorReceiptAuthority?
    let signer: JWSSigner

    var transactions: [SimulatedTransaction] = []
    var index: [String: Int] = [:]
    var subscriptions: [String: SimulatedSubscription] = [:]
    var notifications: [SimulatedNotification] = []
    var pending: [String: (account: String, productId: String, quantity: Int, token: UUID?)] = [:]
    var families: [String: Set<String>] = [:]
    var failingBilling: Set<String> = []
    var appTransactionIds: [String: String] = [:]
    var consumptions: [String: SimulatedConsumption] = [:]
    var consumptionAsked: [String: Date] = [:]
    var extensionAnswers: [String: ExtendRenewalDateResponse] = [:]
    var extensionDates: [String: [Date]] = [:]
    var massExtensions: [String: MassExtension] = [:]
    var offSale: Set<String> = []
    var redeemedCodes: Set<String> = []
    var offerNonces: [String: Date] = [:]
    var forged: [String: ForgedTransaction] = [:]
    var rateLimits: [String: Int] = [:]
    var rateWindows: [String: (hour: Int64, count: Int)] = [:]
    var nextId: Int64
    /// Transactions signed, by their payload (signing date included): ``signedTransaction(_:)`` signs each once.
    var signedPayloads: [JWSTransactionDecodedPayload: String] = [:]
    /// What a device holds of each transaction: the JWS the App Store signed for its state now (its payload with
    /// the signing date left out), as StoreKit keeps a transaction's `jwsRepresentation` until the transaction
    /// changes (a refund, say), not signed anew at each look.
    var deviceSigned: [String: (state: JWSTransactionDecodedPayload, jws: String)] = [:]
    /// The most ``signedPayloads`` keeps before it starts again.
    static let signedPayloadsKept = 4_096
    var updateStreams: [String: [UUID: AsyncStream<StoreTransaction>.Continuation]] = [:]
    var notificationContinuation: AsyncStream<OutgoingNotification>.Continuation?

    /// Creates a simulated App Store.
    ///
    /// - Parameters:
    ///   - catalog: The products on sale (a Coffer catalog). Auto-renewable products renew every
    ///     `durationDays` (30 when absent); within a group, products listed first rank higher, so moving to
    ///     one listed earlier is an upgrade.
    ///   - configuration: The app and its settings.
    ///   - signer: Signs everything the simulator hands out.
    ///   - clock: The simulated time.
    ///   - receiptAuthority: Signs app receipts as PKCS#7 in Apple's shape; without one, app receipts are
    ///     tokens only this simulator's verifyReceipt reads.
    public init(
        catalog: Catalog, configuration: SimulatorConfiguration, signer: JWSSigner, clock: SimulatorClock,
        receiptAuthority: SimulatorReceiptAuthority? = nil
    ) {
        self.catalog = catalog
        self.configuration = configuration
        self.signer = signer
        self.clock = clock
        self.receiptAuthority = receiptAuthority
        self.nextId = configuration.firstTransactionId
    }

    var familyOrigin: [String: String] = [:]

    // MARK: - Helpers

    func record(_ id: String) -> SimulatedTransaction? { index[id].map { transactions[$0] } }

    func existing(_ id: String) throws(SimulatorError) -> SimulatedTransaction {
        guard let record = record(id) else { throw SimulatorError("unknown-transaction", "no transaction \(id)") }
        return record
    }

    func add(_ record: SimulatedTransaction) {
        index[record.id] = transactions.count
        transactions.append(record)
    }

    func extend(_ id: String, to date: Date) {
        update(id) {
            $0.expiresDate = date
            $0.modified = clock.now()
        }
    }

    func update(_ id: String, _ change: (inout SimulatedTransaction) -> Void) {
        guard let position = index[id] else { return }
        change(&transactions[position])
    }

    func pushUpdate(_ id: String) {
        guard let record = record(id) else { return }
        for continuation in (updateStreams[record.account] ?? [:]).values {
            continuation.yield(storeTransaction(record))
        }
    }

    func storeTransaction(_ record: SimulatedTransaction) -> StoreTransaction {
        StoreTransaction(
            id: record.id, originalId: record.originalId, productId: record.product.id,
            productType: StoreTransaction.ProductType(record.product.kind), purchaseDate: record.purchaseDate,
            quantity: record.quantity, expirationDate: record.expiresDate, revocationDate: record.revocationDate,
            isFamilyShared: record.familyShared, isUpgraded: record.isUpgraded,
            isTrial: record.introductoryOffer == .freeTrial, appAccountToken: record.appAccountToken,
            subscriptionGroupId: record.product.kind == .autoRenewable ? record.product.group.map(Self.groupId) : nil,
            jwsRepresentation: deviceSignedTransaction(record),
            revocationPercentage: record.isRevoked && !record.familyShared
                ? record.revocationPercentage.map(Int.init) ?? 100_000 : nil)
    }

    /// The App Store Connect-style id the simulator gives a catalog group: eight digits, the same for a group
    /// name on every run and in every catalog, and never the name itself, as a device meets it (Apple's ids
    /// look like `21482456`).
    public static func groupId(_ group: String) -> String {
        // FNV-1a over the name's bytes, folded into 20000000-29999999.
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in group.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        return String(20_000_000 + hash % 10_000_000)
    }

    func product(_ id: String) throws(SimulatorError) -> CatalogProduct {
        guard let product = catalog.product(id: id) else {
            throw SimulatorError("unknown-product", "\(id) is not in the catalog")
        }
        return product
    }

    func price(_ product: CatalogProduct) -> Int64 { configuration.prices[product.id] ?? 990 }

    func period(_ product: CatalogProduct) -> TimeInterval { Double(product.durationDays ?? 30) * 86_400 }

    /// A product's rank in its group: its position in the catalog (lower ranks higher).
    func rank(_ productId: String) -> Int {
        catalog.products.firstIndex { $0.id == productId } ?? Int.max
    }

    func subscriptionKey(_ account: String, _ group: String) -> String { "\(account)\u{1F}\(group)" }

    func subscriptionKeyFor(_ record: SimulatedTransaction) -> String? {
        guard record.product.kind == .autoRenewable else { return nil }
        let owner =
            record.familyShared ? (familyOrigin[record.id].flatMap { self.record($0)?.account }) : record.account
        return owner.map { subscriptionKey($0, record.product.group ?? record.product.id) }
    }

    func subscriptionKey(forOriginal originalId: String) throws(SimulatorError) -> String {
        guard let key = subscriptions.first(where: { $0.value.originalId == originalId })?.key else {
            throw SimulatorError("unknown-transaction", "no subscription with original transaction \(originalId)")
        }
        return key
    }

    func nextIdentifier() -> String {
        defer { nextId += 1 }
        return String(nextId)
    }

    func orderId() -> String {
        let letters = Array("ABCDEFGHJKLMNPQRSTUVWXYZ23456789")
        return "M" + String((0..<9).map { _ in letters.randomElement()! })
    }

    /// The environment `account`'s data comes from: Sandbox for a reviewer, the simulator's otherwise.
    public nonisolated func environment(of account: String) -> SignedDataEnvironment {
        configuration.reviewers.contains(account) ? .sandbox : configuration.environment
    }

    func appTransactionId(_ account: String) -> String {
        if let id = appTransactionIds[account] { return id }
        let id = "70" + String(nextIdentifier())
        appTransactionIds[account] = id
        return id
    }
}

extension StoreTransaction.ProductType {
    init(_ kind: ProductKind) {
        switch kind {
        case .consumable: self = .consumable
        case .nonConsumable: self = .nonConsumable
        case .autoRenewable: self = .autoRenewable
        case .nonRenewing: self = .nonRenewing
        }
    }
}
