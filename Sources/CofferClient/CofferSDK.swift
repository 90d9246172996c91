import CofferAPI
import CofferCore
import CofferStore
import CofferStoreKit
import CofferStoreSQLite
import Foundation

/// How the app uses Coffer.
public struct SDKConfiguration: Sendable {
    /// Who owns the running balance; the server must be configured the same way.
    public var wallet: WalletMode
    /// Sandbox or Production, as the server.
    public var environment: Environment
    /// The app's products (the catalog the server has).
    public var catalog: Catalog
    /// A name for this device, kept with its backups.
    public var deviceName: String
    /// Whether credits delivered after a refund settle the deficit first (the server's setting).
    public var deficitPolicy: DeficitPolicy

    /// Creates a configuration.
    public init(
        wallet: WalletMode, environment: Environment, catalog: Catalog, deviceName: String,
        deficitPolicy: DeficitPolicy = .collect
    ) {
        self.wallet = wallet
        self.environment = environment
        self.catalog = catalog
        self.deviceName = deviceName
        self.deficitPolicy = deficitPolicy
    }
}

/// The steps of the SDK's flows, in order; tests make the process die after any of them.
public enum SDKStep: String, Sendable, CaseIterable {
    /// The purchase's context is on disk, before StoreKit is asked.
    case intentSaved
    /// StoreKit answered with a verified transaction.
    case purchased
    /// The signed transaction is on disk, in the outbox.
    case remembered
    /// The credits are in the local ledger (device wallet) or the server answered (server wallet).
    case delivered
    /// StoreKit's transaction is finished.
    case finished
    /// The server acknowledged the transaction.
    case posted
}

/// How a purchase through the SDK ended.
public enum PurchaseResult: Sendable, Equatable {
    /// Delivered (the credits, once) and finished.
    case delivered(transactionId: String, credits: Int64)
    /// Apple refunded it before it could be delivered.
    case revoked(transactionId: String)
    /// The customer cancelled.
    case cancelled
    /// Waiting for Ask to Buy; it arrives through the updates later.
    case pending
    /// Bought, but the server could not be reached to deliver it (server wallet): the transaction stays
    /// unfinished and is delivered on the next launch or retry.
    case deferred(transactionId: String)
}

/// The app side of Coffer: buys through StoreKit, delivers each purchase exactly once, and never finishes
/// a transaction before its delivery is durable. In the device wallet the balance lives in a local ledger
/// (the same ledger rules as the server, on SQLite) and the server is told through a durable outbox; in the
/// server wallet the server delivers and the transaction is finished once it answers.
///
/// Every step is written down before the next one starts, so a process that dies anywhere (``SDKStep``)
/// is recovered by ``launch()``: unfinished transactions are delivered (once; the ledger knows them by
/// transaction id) and finished, and the outbox is posted (the server answers `duplicate` to what it has).
public actor CofferSDK {
    /// The configuration.
    public let configuration: SDKConfiguration
    let storeKit: any StoreKitProvider
    let server: ServerClient
    let credentialStore: any CredentialStore
    let ledger: SQLiteStore
    let state: SDKState
    let now: @Sendable () -> Date
    let crashAfter: @Sendable (SDKStep) throws -> Void
    private var user: User?

    /// The credentials, once ``launch()`` has run.
    public private(set) var credentials: Credentials?

    /// An SDK keeping its files in `folder`.
    ///
    /// - Parameters:
    ///   - crashAfter: Called after each step; a test throws from it to stand for the process dying there.
    public init(
        configuration: SDKConfiguration, storeKit: any StoreKitProvider, server: ServerClient, folder: URL,
        credentials: any CredentialStore, now: @escaping @Sendable () -> Date = Date.init,
        crashAfter: @escaping @Sendable (SDKStep) throws -> Void = { _ in }
    ) throws {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        self.configuration = configuration
        self.storeKit = storeKit
        self.server = server
        self.credentialStore = credentials
        ledger = try SQLiteStore(path: folder.appendingPathComponent("ledger.sqlite").path)
        state = try SDKState(path: folder.appendingPathComponent("sdk.sqlite").path)
        self.now = now
        self.crashAfter = crashAfter
    }

    // MARK: Launch

    /// What ``launch()`` found and did.
    public struct LaunchReport: Sendable, Equatable {
        /// Unfinished transactions delivered (or found delivered) and finished.
        public var recovered: [String]
        /// Transactions posted to the server from the outbox.
        public var posted: Int
        /// Purchases that were in flight when the app last died.
        public var interrupted: Int
    }

    /// Starts the SDK: finds (or creates) the user, recovers what a dead process left, and posts the outbox.
    @discardableResult
    public func launch() async throws -> LaunchReport {
        let user = try await localUser()
        _ = user
        let interrupted = try state.interruptStartedIntents()
        var recovered: [String] = []
        for transaction in await storeKit.unfinished() {
            if try await handle(transaction) { recovered.append(transaction.id) }
        }
        let posted = try await postOutbox()
        return LaunchReport(recovered: recovered, posted: posted, interrupted: interrupted)
    }

    /// The user: from the credential store (which survives reinstalls), else a new one from the server.
    func localUser() async throws -> User {
        if let user { return user }
        let stored = try credentialStore.load()
        let credentials: Credentials
        if let stored {
            credentials = stored
        } else {
            credentials = try await server.createUser()
            try credentialStore.save(credentials)
        }
        self.credentials = credentials
        guard let supportId = SupportID(credentials.supportId) else {
            throw SDKError.corrupt("the stored Support ID \(credentials.supportId) is not valid")
        }
        let local: User
        if let found = try await ledger.user(supportId: supportId, environment: configuration.environment) {
            local = found
        } else {
            local = User(
                environment: configuration.environment, supportId: supportId, tokenHash: "device:" + supportId.rawValue,
                appAccountToken: credentials.appAccountToken, createdAt: now())
            try await ledger.createUser(local)
        }
        user = local
        return local
    }

    // MARK: Purchases

    /// Buys a product: the intent is saved first, StoreKit is asked, and the transaction is delivered once
    /// and finished only after that is durable.
    public func purchase(productId: String, quantity: Int = 1) async throws -> PurchaseResult {
        let user = try await localUser()
        guard configuration.catalog.product(id: productId) != nil else {
            throw SDKError.unknownProduct(productId)
        }
        let intent = UUID()
        try state.startIntent(id: intent, productId: productId, quantity: quantity, at: now())
        try crashAfter(.intentSaved)
        let result = try await storeKit.purchase(
            productId: productId, quantity: quantity, appAccountToken: user.appAccountToken)
        switch result {
        case .userCancelled:
            try state.endIntent(id: intent, state: "cancelled")
            return .cancelled
        case .pending:
            try state.endIntent(id: intent, state: "pending")
            return .pending
        case .success(let transaction):
            try crashAfter(.purchased)
            let finished = try await handle(transaction)
            try state.endIntent(id: intent, state: finished ? "done" : "deferred")
            if transaction.revocationDate != nil { return .revoked(transactionId: transaction.id) }
            guard finished else { return .deferred(transactionId: transaction.id) }
            let credits: Int64?
            switch configuration.wallet {
            case .device:
                credits = try await ledger.receipt(
                    transactionId: transaction.id, environment: configuration.environment)?.deliveredCredits
            case .server:
                credits = try state.credits(id: transaction.id)
            }
            return .delivered(transactionId: transaction.id, credits: credits ?? 0)
        }
    }

    /// Handles one transaction from a purchase, the updates stream or launch: remembered for the server,
    /// delivered (or taken back, when refunded) once, then finished.
    ///
    /// - Returns: Whether the transaction is finished (the server wallet defers it while the server is
    ///   out of reach).
    @discardableResult
    public func handle(_ transaction: StoreTransaction) async throws -> Bool {
        let user = try await localUser()
        try state.remember(id: transaction.id, jws: transaction.jwsRepresentation, at: now())
        try crashAfter(.remembered)
        switch configuration.wallet {
        case .device:
            try await deliverLocally(transaction, to: user)
            try crashAfter(.delivered)
            await storeKit.finish(transactionId: transaction.id)
            try crashAfter(.finished)
            _ = try await post(id: transaction.id, jws: transaction.jwsRepresentation)
            return true
        case .server:
            guard try await post(id: transaction.id, jws: transaction.jwsRepresentation) else { return false }
            try crashAfter(.delivered)
            await storeKit.finish(transactionId: transaction.id)
            try crashAfter(.finished)
            return true
        }
    }

    /// Applies a transaction to the local ledger: a purchase delivers, a refunded one takes back.
    func deliverLocally(_ transaction: StoreTransaction, to user: User) async throws {
        let fact = Self.fact(transaction)
        let event: LedgerEvent
        if transaction.revocationDate != nil {
            event = .revocation(fact)
        } else {
            let credits = try configuration.catalog.credits(
                productId: transaction.productId, quantity: transaction.quantity,
                familyShared: transaction.isFamilyShared)
            event = .purchase(fact, credits: credits)
        }
        _ = try await ledger.apply(
            LedgerRequest(
                owner: user.id, environment: configuration.environment, event: event,
                policy: configuration.deficitPolicy, at: now()))
    }

    /// Posts the outbox: every remembered transaction the server has not acknowledged.
    ///
    /// - Returns: How many the server acknowledged now.
    @discardableResult
    public func postOutbox() async throws -> Int {
        var acknowledged = 0
        for item in try state.outbox() where try await post(id: item.id, jws: item.jws) {
            acknowledged += 1
        }
        return acknowledged
    }

    /// Posts one transaction; `true` once the server answered (delivered, duplicate or revoked).
    func post(id: String, jws: String) async throws -> Bool {
        let credentials = try await credentials()
        let answer: TransactionResponse
        do {
            answer = try await server.post(signedTransaction: jws, token: credentials.token)
        } catch .transport {
            return false
        } catch .refused(let status, let code, _) {
            // Kept in the outbox: a refusal (wrong user, forged data) is support's to look at, and the
            // transaction stays unfinished with Apple.
            try state.set("refused:\(id)", "\(status) \(code)")
            return false
        }
        try crashAfter(.posted)
        try state.posted(id: id, outcome: answer.outcome.rawValue, credits: answer.credits, at: now())
        return true
    }

    func credentials() async throws -> Credentials {
        _ = try await localUser()
        guard let credentials else { throw SDKError.corrupt("no credentials") }
        return credentials
    }

    // MARK: Reading

    /// The balance: the local ledger's in the device wallet, the server's in the server wallet.
    public func balance() async throws -> Int64 {
        switch configuration.wallet {
        case .device:
            let user = try await localUser()
            return try await ledger.wallet(owner: user.id, environment: configuration.environment).balance
        case .server:
            return try await server.me(token: try await credentials().token).balance
        }
    }

    /// The local ledger's wallet (balance and deficit) in the device wallet.
    public func localWallet() async throws -> Wallet {
        let user = try await localUser()
        return try await ledger.wallet(owner: user.id, environment: configuration.environment)
    }

    /// Transactions the server has not acknowledged yet.
    public func pendingPosts() throws -> [String] { try state.outbox().map(\.id) }

    /// A StoreKit transaction as the ledger's facts.
    static func fact(_ transaction: StoreTransaction) -> TransactionFact {
        TransactionFact(
            transactionId: transaction.id, originalTransactionId: transaction.originalId,
            productId: transaction.productId, quantity: transaction.quantity, purchaseDate: transaction.purchaseDate,
            expiresDate: transaction.expirationDate, revocationDate: transaction.revocationDate,
            isFamilyShared: transaction.isFamilyShared, isUpgraded: transaction.isUpgraded)
    }
}

/// What the SDK refuses.
public enum SDKError: Error, Equatable, Sendable {
    /// The product is not in the catalog.
    case unknownProduct(String)
    /// Stored data cannot be read.
    case corrupt(String)
}
