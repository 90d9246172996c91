import CofferAPI
import CofferAdmin
import CofferAppStore
import CofferCore
import CofferStore
import Foundation

/// The client API's use cases, with no HTTP in them: users, their wallet and entitlements, and the purchases
/// an app presents. The HTTP edge decodes requests, calls these and encodes what they answer.
public struct ClientService: ServiceOnParts {
    /// What it is built from.
    public let parts: ServiceParts
    /// Users recently found by their token.
    let tokens = TokenCache()
    /// How long an instance remembers whose a token is: a token revoked, merged away or deleted on one instance
    /// stops on every other within this many seconds.
    public static let tokenCacheLifetime: TimeInterval = 5

    /// The client API's use cases over `parts`.
    public init(_ parts: ServiceParts) {
        self.parts = parts
    }

    // MARK: Users

    /// Creates an anonymous user: a new Support ID, a secret token (only its hash is kept) and an
    /// `appAccountToken`. Found again only by its token (one install).
    ///
    /// - Throws: ``ServiceError/unavailable(code:message:)`` in the unlikely case no free Support ID was drawn.
    public func createUser() async throws -> CreateUserResponse {
        let token = Secrets.random()
        let user = try await newUser(tokenHash: Self.hash(token), appleAccount: nil)
        return CreateUserResponse(
            supportId: user.supportId.rawValue, token: token, appAccountToken: user.appAccountToken)
    }

    /// Registers a device to the customer its Apple account is: the user keyed by the environment and
    /// `appTransactionId` of Apple's signed AppTransaction, created on the account's first call. Every call
    /// answers the account's Support ID and appAccountToken with a token of the device's own (all valid
    /// together; each can be revoked alone, ``revoke(token:)``).
    ///
    /// The AppTransaction is verified like any of Apple's signed data (chain, bundle id, app Apple id, the
    /// environment rules of ``ServiceConfiguration/sandboxInProduction``) and must be younger than
    /// ``ServiceConfiguration/appTransactionMaxAge``: whoever holds a copy can register a device to the
    /// account, so a copy works only that long.
    ///
    /// - Returns: The answer, and whether the account's user was created now.
    /// - Throws: ``ServiceError/verification(code:message:)`` for data that does not verify, lacks an
    ///   `appTransactionId`, or is too old (`stale-app-transaction`: ask StoreKit for a fresh one).
    public func register(signedAppTransaction signed: String) async throws -> (CreateUserResponse, created: Bool) {
        let account = try await appleAccount(signedAppTransaction: signed)
        let now = dependencies.now()
        let token = Secrets.random()
        let hash = Self.hash(token)
        if let user = try await store.user(appleAccount: account, environment: configuration.environment) {
            try await store.addToken(tokenHash: hash, owner: user.id, at: now)
            // What a customer can add by registering is bounded: the oldest devices sign out.
            _ = try await store.revokeOldTokens(owner: user.id, keeping: configuration.devicesPerAccount, at: now)
            return (Self.answer(user, token: token), false)
        }
        do {
            let user = try await newUser(tokenHash: hash, appleAccount: account)
            return (Self.answer(user, token: token), true)
        } catch StoreError.alreadyExists {
            // Another device of the account registered first: this one joins it.
            guard let user = try await store.user(appleAccount: account, environment: configuration.environment)
            else { throw ServiceError.unavailable(code: "try-again", message: "the account is being created") }
            try await store.addToken(tokenHash: hash, owner: user.id, at: now)
            return (Self.answer(user, token: token), false)
        }
    }

    /// The Apple account a signed AppTransaction names, verified as ``register(signedAppTransaction:)`` says.
    func appleAccount(signedAppTransaction signed: String) async throws -> AppleAccount {
        let app: AppTransaction
        do {
            app = try await dependencies.verifier.verifyAppTransaction(signed)
        } catch {
            dependencies.metrics.verificationFailed(status: error.status)
            throw ServiceError(error)
        }
        guard let id = app.appTransactionId, !id.isEmpty, id.count <= 64,
            id.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) })
        else {
            throw ServiceError.verification(
                code: "VERIFICATION_FAILURE", message: "the app transaction has no valid appTransactionId")
        }
        guard let environment = app.receiptType?.ledgerEnvironment else {
            throw ServiceError.verification(
                code: "INVALID_ENVIRONMENT", message: "the app transaction names no environment")
        }
        let now = dependencies.now()
        // `receiptCreationDate` is when the App Store signed the app transaction.
        guard let signedAt = app.receiptCreationDate else {
            throw ServiceError.verification(code: "VERIFICATION_FAILURE", message: "the app transaction is undated")
        }
        let age = now.timeIntervalSince(signedAt)
        // Signed "in the future" only by a clock that trails Apple's (an NTP step back): as far as entitlements allow.
        guard age <= TimeInterval(configuration.appTransactionMaxAge), age >= -Entitlements.clockTolerance else {
            throw ServiceError.verification(
                code: "stale-app-transaction",
                message: "the app transaction was signed \(Int(age)) s ago; at most "
                    + "\(configuration.appTransactionMaxAge) s are accepted: ask StoreKit for a fresh one")
        }
        return AppleAccount(appTransactionId: id, environment: environment)
    }

    /// The source ``claimCloudKit(_:)`` claims from, as `coffer import cloudkit` records it.
    public static let cloudKitSource = AdminService.cloudKitSource
    /// How long after the first claim its key may claim again (a lost answer): a day.
    public static let claimRetryWindow: TimeInterval = 86_400

    /// Claims the customer `coffer import cloudkit` brought in with this CloudKit user record name: answers the
    /// customer's Support ID and appAccountToken with a token of this install's own, once. The install that
    /// claims first keeps the customer; its key (kept before asking) claims again after a lost answer; another
    /// key is refused. The threat model is docs/cloudkit.md's: the record name is what the seeds' app trusted.
    ///
    /// - Throws: ``ServiceError/notFound(_:)`` for a name no import brought in (or a customer deleted since),
    ///   ``ServiceError/alreadyClaimed`` for one another install claimed, ``ServiceError/badRequest(_:)``,
    ///   ``ServiceError/verification(code:message:)`` for an AppTransaction that does not verify or is too old.
    public func claimCloudKit(_ request: CloudKitClaimRequest) async throws -> CreateUserResponse {
        guard AdminService.isExternalId(request.userRecordName) else {
            throw ServiceError.badRequest("userRecordName must be 1 to 255 printable ASCII characters")
        }
        guard (16...128).contains(request.claimKey.utf8.count),
            request.claimKey.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F })
        else { throw ServiceError.badRequest("claimKey must be 16 to 128 printable ASCII characters") }
        try await proveCloudKitIdentity(request)
        let environment = configuration.environment
        let notImported = ServiceError.notFound("no customer imported from CloudKit with this user record name")
        guard
            let before = try await store.importedCustomer(
                source: Self.cloudKitSource, externalId: request.userRecordName, environment: environment)
        else { throw notImported }
        // The user before the claim: an import stopped before making it answers 503 and uses up nothing.
        guard let user = try await store.user(id: before.user) else {
            throw ServiceError.unavailable(
                code: "try-again", message: "this customer's import is not finished; try again later")
        }
        guard user.isLive else { throw notImported }
        // A customer support merged into another is settled (the merge marked the import claimed): the record
        // name, public in CloudKit, never leads to the account it joined.
        guard user.mergedInto == nil else { throw ServiceError.alreadyClaimed }
        // The install's AppTransaction, verified before the claim is used: one too old or forged is refused
        // (422, nothing used up) and the app asks again with a fresh one, or without.
        var account: AppleAccount?
        if let signed = request.signedAppTransaction { account = try await appleAccount(signedAppTransaction: signed) }
        let now = dependencies.now()
        let keyHash = Self.hash(request.claimKey)
        guard
            let claimed = try await store.claimImport(
                source: Self.cloudKitSource, externalId: request.userRecordName, environment: environment,
                keyHash: keyHash, at: now)
        else { throw ServiceError.alreadyClaimed }
        // The same key claims again only for a while (an answer lost on the way), not as a lasting credential.
        if let claimedAt = claimed.claimedAt, now.timeIntervalSince(claimedAt) > Self.claimRetryWindow {
            throw ServiceError.alreadyClaimed
        }
        // Support sees when the customer's app took over the imported customer: written once, however often the
        // claim is asked.
        do {
            try await store.recordAudit(
                AuditEvent(
                    id: AdminService.stableId("cloudkit-claim:\(environment.rawValue):\(request.userRecordName)"),
                    environment: environment, actor: "app", action: "customer.claim",
                    subject: user.supportId.rawValue, after: #"{"source":"cloudkit"}"#, at: now))
        } catch StoreError.alreadyExists {}
        // With the install's AppTransaction, the imported customer becomes its Apple account's (when neither has
        // the other yet): the account's other devices then register to it.
        if let account, user.appleAccount == nil {
            do {
                _ = try await store.linkAppleAccount(account, to: user.id)
            } catch StoreError.alreadyExists {
                // Another device registered the account first: support merges the two.
            }
        }
        let token = Secrets.random()
        do {
            // A claim's token never moves with a merge: it is the imported customer's alone.
            try await store.addToken(tokenHash: Self.hash(token), owner: user.id, origin: .claim, at: now)
        } catch StoreError.notFound {
            // Merged or deleted by support while the claim ran.
            throw ServiceError.alreadyClaimed
        }
        return Self.answer(user, token: token)
    }

    /// Checks the claim's proof of the CloudKit identity, as ``ServiceConfiguration/cloudKitClaimProof`` asks: with
    /// `web-auth-token`, CloudKit Web Services must say the token is the named user's (before anything is used up).
    ///
    /// - Throws: ``ServiceError/verification(code:message:)`` `cloudkit-proof-required` (no token) or
    ///   `cloudkit-auth-failed` (CloudKit refused it: fetch a new one), ``ServiceError/forbidden(_:)`` for another
    ///   user's token, ``ServiceError/unavailable(code:message:)`` `cloudkit-unavailable` when CloudKit does not
    ///   answer in time.
    func proveCloudKitIdentity(_ request: CloudKitClaimRequest) async throws {
        guard configuration.cloudKitClaimProof == .webAuthToken else { return }
        guard let identity = dependencies.cloudKitIdentity else {
            throw ServiceError.unavailable(
                code: "cloudkit-unavailable", message: "the server has no CloudKit API token to check the claim with")
        }
        guard let token = request.ckWebAuthToken, CloudKitUserIdentity.isToken(token) else {
            throw ServiceError.verification(
                code: "cloudkit-proof-required",
                message: "this server needs a CloudKit web auth token (ckWebAuthToken) of the user the claim names")
        }
        let caller: String
        do {
            caller = try await identity.caller(webAuthToken: token)
        } catch {
            // What CloudKit said goes to the server's log, not to the app.
            dependencies.logger.warning("CloudKit users/caller: \(error)")
            switch error {
            case .server(let status, _, _) where status == 421:
                throw ServiceError.verification(
                    code: "cloudkit-auth-failed",
                    message: "CloudKit did not accept the web auth token; fetch a new one and try again")
            default:
                // The server's API token refused, CloudKit throttling or away: nothing the app can change now.
                throw ServiceError.unavailable(
                    code: "cloudkit-unavailable", message: "CloudKit could not check the claim now; try again later")
            }
        }
        guard caller == request.userRecordName else {
            throw ServiceError.forbidden("the CloudKit web auth token is another iCloud user's than the claim names")
        }
    }

    /// A one-time merge code for the customer's install to show (``MergeCodes``): support types it in to merge
    /// this customer into their Apple account's customer, or (an Apple account's code) to let a merged install
    /// sign in as this customer. Replaces the code before; valid 15 minutes.
    public func mergeCode(for user: User) async throws -> MergeCodeResponse {
        let code = MergeCodes.make()
        let now = dependencies.now()
        let expires = now.addingTimeInterval(MergeCodes.lifetime)
        guard let hash = MergeCodes.hash(code) else { throw ServiceError.internalError("a merge code did not parse") }
        do {
            try await store.saveMergeCode(
                MergeCode(
                    owner: user.id, environment: user.environment, codeHash: hash, createdAt: now, expiresAt: expires))
        } catch StoreError.notFound {
            throw ServiceError.noBearer
        }
        return MergeCodeResponse(code: code, expiresAt: expires, appleAccount: user.appleAccount != nil)
    }

    /// Forgets the tokens remembered for a user (support merged it into another: they name that one now).
    public func forgetTokens(of user: UUID) {
        tokens.forget(user: user)
    }

    /// Revokes the token a device presented: that device signs out; the account's other devices stay.
    public func revoke(token: String) async throws {
        let hash = Self.hash(token)
        tokens.forget(tokenHash: hash)
        let revoked = try await store.revokeToken(tokenHash: hash, at: dependencies.now())
        // Forgotten again: a request in between may have remembered it.
        tokens.forget(tokenHash: hash)
        guard revoked else { throw ServiceError.noBearer }
    }

    private static func answer(_ user: User, token: String) -> CreateUserResponse {
        CreateUserResponse(supportId: user.supportId.rawValue, token: token, appAccountToken: user.appAccountToken)
    }

    /// A new user with a fresh Support ID (drawn again when taken, one in 2^48).
    private func newUser(tokenHash: String, appleAccount: AppleAccount?) async throws -> User {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<5 {
            let user = User(
                environment: configuration.environment, supportId: SupportID.random(using: &generator),
                tokenHash: tokenHash, createdAt: dependencies.now(), appleAccount: appleAccount)
            if try await store.user(supportId: user.supportId, environment: user.environment) != nil { continue }
            try await store.createUser(user)
            return user
        }
        throw ServiceError.unavailable(code: "try-again", message: "no free support id; try again")
    }

    /// The user's wallet, entitlements and backup.
    public func me(user: User) async throws -> MeResponse {
        // Credits whose end has come leave the balance before it is read: the answer never shows them.
        let lots = try await currentLots(of: user)
        let wallet = try await store.wallet(owner: user.id, environment: user.environment)
        let backup = try await store.backup(owner: user.id, environment: user.environment)
        let consent = try await store.consumptionConsent(owner: user.id, environment: user.environment)
        let now = dependencies.now()
        // Read once: what the grants unlock, and their ends for the app.
        let grants = try await store.entitlementGrants(environment: user.environment, recipient: user.id)
        let state = try await store.entitlementState(
            of: user, catalog: dependencies.catalog, at: now, granting: grants)
        let granted = grants.filter { $0.isActive(at: now) }.map {
            GrantedEntitlement(entitlement: $0.entitlement, endsAt: $0.until.formatted(.iso8601))
        }
        // Every currency the catalog lists (the default's is what `balance` and `deficit` say) and any other the
        // ledger holds for the customer.
        let catalog = dependencies.catalog
        var wallets = [catalog.defaultCurrency: wallet]
        if catalog.currencies.count > 1 {
            for other in catalog.currencies.dropFirst() { wallets[other.id] = .empty }
            wallets.merge(try await store.currencyWallets(owner: user.id, environment: user.environment)) { $1 }
        }
        var answer = MeResponse(
            supportId: user.supportId.rawValue, balance: wallet.balance, deficit: wallet.deficit,
            entitlements: state.names, backup: backup.map(BackupBody.init),
            wallet: configuration.wallet.rawValue, consent: consent.map(Self.consent), grantedEntitlements: granted,
            balances: Dictionary(uniqueKeysWithValues: wallets.map { ($0.key.rawValue, $0.value.balance) }),
            deficits: Dictionary(uniqueKeysWithValues: wallets.map { ($0.key.rawValue, $0.value.deficit) }))
        answer.expiring = lots.map {
            ExpiringCredits(
                currency: ($0.currency ?? catalog.defaultCurrency).rawValue, amount: $0.remaining,
                expiresAt: $0.expiresAt.formatted(.iso8601))
        }
        return answer
    }

    /// Records the customer's answer to sharing consumption data with Apple for refund requests; Coffer answers
    /// Apple's CONSUMPTION_REQUEST only while it is yes.
    public func saveConsent(of user: User, consented: Bool) async throws -> ConsentResponse {
        let consent = ConsumptionConsent(
            owner: user.id, environment: user.environment, consented: consented, at: dependencies.now())
        try await store.saveConsumptionConsent(consent)
        return Self.consent(consent)
    }

    static func consent(_ consent: ConsumptionConsent) -> ConsentResponse {
        ConsentResponse(customerConsented: consent.consented, at: consent.at.formatted(.iso8601))
    }

    // MARK: Transactions

    /// Delivers a signed transaction the app presents, once, to `user`: its purchase (or its revocation when it
    /// is signed refunded), unless Apple said otherwise in notifications kept while nobody had presented it
    /// (``Delivery/events(forPresented:signedAt:credits:later:)``); for a transaction without an
    /// `appAccountToken`, words kept while it was being written apply right after.
    ///
    /// - Throws: ``ServiceError`` for data that does not verify (``ServiceError/unavailable(code:message:)``
    ///   when verification could not be completed now, so the app tries again), another user's transaction, a
    ///   product the catalog does not sell, or the ledger's refusal.
    /// - Parameter previouslyDelivered: The app delivered it before it used Coffer: its purchase is recorded without
    ///   credits (``LedgerEvent/deliveredBeforeCoffer(_:credits:)``), answered ``TransactionOutcome/recorded``.
    public func present(_ signed: String, user: User, previouslyDelivered: Bool = false) async throws
        -> TransactionResponse
    {
        let transaction: JWSTransactionDecodedPayload
        do {
            transaction = try await dependencies.verifier.verifyTransaction(signed)
        } catch {
            throw ServiceError(error)
        }
        guard let fact = TransactionFact(transaction) else {
            throw ServiceError.verification(
                code: "VERIFICATION_FAILURE", message: "the transaction lacks transactionId, productId or purchaseDate")
        }
        guard Delivery.reaches(data: fact.environment, customer: user.appleAccount?.environment) else {
            throw ServiceError.sandboxDataForProductionCustomer
        }
        let transactionId = fact.transactionId
        // The transaction's owner is named by its account token, unless the token names nobody (an install that
        // bought before it first reached the server): then, like one without a token, whoever presents it first.
        var ownerNamed = transaction.appAccountToken != nil
        if let token = transaction.appAccountToken, token != user.appAccountToken {
            let named = try await store.user(appAccountToken: token, environment: user.environment)
            // Another user's token, unless it is an install support merged into this user.
            if let named, named.id != user.id { throw ServiceError.wrongUser }
            ownerNamed = named != nil
        }
        // In the server wallet a purchase without a token (an offer code, a promoted purchase, another device) of an
        // Apple account with a customer here is that customer's, never whoever presents it first (unless delivered
        // already: the ledger's first owner stands): delivered to them, and the presenter refused.
        var accountNamed = false
        if let customer = try await accountOwner(of: fact, transaction: transaction),
            try await store.receipt(transactionId: transactionId, environment: user.environment) == nil
        {
            if customer.id != user.id {
                _ = try await present(signed, user: customer, previouslyDelivered: false)
                throw ServiceError.wrongUser
            }
            accountNamed = true
        }
        let credits: Int64
        do {
            credits = try dependencies.catalog.defaultCredits(for: fact)
        } catch {
            throw ServiceError.unknownProduct(error.description)
        }
        // Apple's words are kept only for a transaction whose owner the notification intake could not find. When
        // the transaction's account token is the presenter's own, the intake found the owner by it (the token
        // existed, naming this user, before any purchase could carry it), so nothing was kept: no read.
        let words = transaction.appAccountToken == user.appAccountToken ? [] : try await keptWords(on: fact)
        var events = Delivery.events(
            forPresented: fact, signedAt: transaction.signedDate, credits: credits, later: words)
        // A purchase made with this user's own account token was made through Coffer: the flag cannot zero it.
        if previouslyDelivered,
            transaction.appAccountToken == nil || transaction.appAccountToken != user.appAccountToken
        {
            events = events.map {
                if case .purchase(let fact, let credits) = $0 {
                    .deliveredBeforeCoffer(fact, credits: credits)
                } else {
                    $0
                }
            }
        }
        // The answer's entitlements come back from the ledger's write, read in its transaction.
        let requests = events.map {
            LedgerRequest(
                owner: user.id, environment: user.environment, event: $0, policy: configuration.deficitPolicy,
                at: dependencies.now(), entitlementCatalog: dependencies.catalog)
        }
        let first: LedgerResult
        let results = try await applyInEveryCurrency(requests)
        switch results.first {
        case .success(let applied):
            first = applied
            if applied.outcome == .applied, case .purchase(let fact, _) = events[0] {
                dependencies.metrics.delivered(source: "app")
                finishOnApple(fact, user: user)
                if accountNamed { writeTokenBack(fact, user: user) }
            }
            if events.count > 1 { dependencies.metrics.revoked() }
        case .failure(.wrongUser):
            // Checked inside the ledger's write: whoever delivered it first owns it.
            throw ServiceError.wrongUser
        case .failure(let error): throw ServiceError.ledger(error)
        case nil: throw ServiceError.internalError("the ledger did not answer")
        }
        var latest = (try? results.last?.get()) ?? first
        if first.outcome == .applied, !ownerNamed {
            // Written now: Apple's words kept since they were read (a refund with nobody to apply it to then)
            // apply now, in Apple's order, as the intake would have applied them; the intake looks again for
            // the owner after keeping one, so whichever of the two comes second applies it. A transaction with
            // an appAccountToken has its owner found by the token, so nothing about it is kept for nobody.
            for word in try await keptWords(on: fact).filter({ !words.contains($0) }).sorted() {
                let delivered = latest.receipt?.deliveredCredits != nil
                let wordEvents = Delivery.events(
                    for: word, on: fact, credits: word.kind == .reversal && !delivered ? credits : nil)
                for event in wordEvents {
                    let request = LedgerRequest(
                        owner: user.id, environment: user.environment, event: event,
                        policy: configuration.deficitPolicy, at: dependencies.now(),
                        entitlementCatalog: dependencies.catalog)
                    guard case .success(let applied) = try await applyInEveryCurrency([request]).first else { continue }
                    latest = applied
                    guard applied.outcome == .applied else { continue }
                    switch event {
                    case .revocation: dependencies.metrics.revoked()
                    case .purchase: dependencies.metrics.delivered(source: "app")
                    default: break
                    }
                    await self.events.publish(
                        ServerEventBody(type: .adjustment, key: applied.entry?.key.rawValue), to: user.id)
                }
                events += wordEvents
            }
        }
        let outcome: TransactionOutcome =
            switch Delivery.outcome(of: events, ledger: first.outcome) {
            case .revoked: .revoked
            case .duplicate: .duplicate
            case .delivered: events.contains(where: Self.isRecording) ? .recorded : .delivered
            }
        let entitlements: [String]
        if let fromWrite = latest.entitlements {
            entitlements = fromWrite.names
        } else {
            entitlements = try await self.entitlements(of: user)
        }
        return TransactionResponse(
            outcome: outcome, transactionId: transactionId,
            credits: outcome == .revoked || outcome == .recorded ? 0 : credits,
            balance: latest.wallet.balance, entitlements: entitlements)
    }

    /// Whether an event records a purchase delivered before Coffer.
    static func isRecording(_ event: LedgerEvent) -> Bool {
        if case .deliveredBeforeCoffer = event { true } else { false }
    }

    /// Apple's words on a transaction kept from notifications nobody had presented, for the core's rule
    /// (``Delivery/events(forPresented:signedAt:credits:later:)``).
    func keptWords(on fact: TransactionFact) async throws -> [Delivery.LaterWord] {
        try await store.notifications(
            environment: configuration.environment, transactionId: fact.transactionId, outcome: .unattributed,
            limit: 50
        ).filter { $0.transactionId == fact.transactionId }.compactMap {
            Delivery.LaterWord(notificationType: $0.type, signedDate: $0.signedDate)
        }
    }

    // MARK: Helpers

    /// The user's entitlements now, by the core's rules.
    public func entitlements(of user: User) async throws -> [String] {
        try await store.entitlements(of: user, catalog: dependencies.catalog, at: dependencies.now())
    }

    /// The user a secret token names, in this server's environment.
    ///
    /// - Throws: ``ServiceError/noBearer`` for an unknown token or a user of the other environment.
    public func authenticate(token: String) async throws -> User {
        let hash = Self.hash(token)
        let now = dependencies.now()
        let found: User?
        if let known = tokens.user(tokenHash: hash, now: now) {
            found = known
        } else {
            found = try await store.user(tokenHash: hash)
            if let found { tokens.remember(found, tokenHash: hash, now: now) }
        }
        guard let user = found, user.environment == configuration.environment else { throw ServiceError.noBearer }
        return user
    }

    /// Tokens are stored as their SHA-256: 256 random bits need no slow hash.
    public static func hash(_ token: String) -> String { Secrets.hash(token) }
}
