import CofferAPI
import CofferAdmin
import CofferAppStore
import CofferCore
import CofferStore
import Crypto
import Foundation
import Hummingbird
import NIOCore
import NIOFoundationCompat

/// The client API the app talks to: users, their wallet and entitlements, and purchases.
struct ClientAPI: Sendable {
    let configuration: ServerConfiguration
    let dependencies: ServerDependencies
    let events: EventHub
    /// Group commit: every ledger write of the API goes through it.
    let ledger: LedgerBatcher
    /// Users recently found by their token.
    let tokens = TokenCache()

    var store: any CofferStore { dependencies.store }

    func addRoutes(to router: Router<CofferRequestContext>) {
        // Unauthenticated, so bounded per client address.
        router.group("v1/users")
            .add(
                middleware: RateLimitMiddleware(
                    limiter: RateLimiter(limit: configuration.userCreationLimit), what: "new users")
            )
            .post { _, _ in try await createUser() }
        router.get("v1/me") { request, _ in try await me(user: authenticate(request)) }
        router.post("v1/transactions") { request, _ in
            let user = try await authenticate(request)
            let body: TransactionRequest = try await decode(request)
            return try await postTransaction(body.signedTransaction, user: user)
        }
        WalletAPI(api: self).addRoutes(to: router)
        EventsAPI(api: self).addRoutes(to: router)
        ReceiptsAPI(api: self).addRoutes(to: router)
    }

    // MARK: Users

    func createUser() async throws -> Response {
        var generator = SystemRandomNumberGenerator()
        let token = Secrets.random()
        for _ in 0..<5 {
            let user = User(
                environment: configuration.environment, supportId: SupportID.random(using: &generator),
                tokenHash: Self.hash(token), createdAt: dependencies.now())
            // A support id already taken (one in 2^48) is drawn again.
            if try await store.user(supportId: user.supportId, environment: user.environment) != nil { continue }
            try await store.createUser(user)
            return try json(
                CreateUserResponse(
                    supportId: user.supportId.rawValue, token: token, appAccountToken: user.appAccountToken),
                status: .created)
        }
        throw ServerError.unavailable(code: "try-again", message: "no free support id; try again")
    }

    func me(user: User) async throws -> Response {
        let wallet = try await store.wallet(owner: user.id, environment: user.environment)
        let backup = try await store.backup(owner: user.id, environment: user.environment)
        return try json(
            MeResponse(
                supportId: user.supportId.rawValue, balance: wallet.balance, deficit: wallet.deficit,
                entitlements: try await entitlements(of: user),
                backup: backup.map(WalletAPI.body)))
    }

    // MARK: Transactions

    func postTransaction(_ signed: String, user: User) async throws -> Response {
        let transaction: JWSTransactionDecodedPayload
        do {
            transaction = try await dependencies.verifier.verifyTransaction(signed)
        } catch {
            throw ServerError(error)
        }
        guard let fact = TransactionFact(transaction) else {
            throw ServerError.verification(
                code: "VERIFICATION_FAILURE", message: "the transaction lacks transactionId, productId or purchaseDate")
        }
        let transactionId = fact.transactionId
        if let token = transaction.appAccountToken, token != user.appAccountToken {
            throw ServerError.wrongUser
        }
        let credits: Int64
        do {
            credits = try dependencies.catalog.credits(for: fact)
        } catch {
            throw ServerError.unknownProduct(error.description)
        }
        let words = try await keptWords(on: fact)
        var events = Delivery.events(
            forPresented: fact, signedAt: transaction.signedDate, credits: credits, later: words)
        let requests = events.map {
            LedgerRequest(
                owner: user.id, environment: user.environment, event: $0, policy: configuration.deficitPolicy,
                at: dependencies.now())
        }
        var result: LedgerResult
        let results = try await ledger.apply(requests)
        switch results.first {
        case .success(let applied):
            result = (try? results.last?.get()) ?? applied
            if applied.outcome == .applied, case .purchase = events[0] {
                dependencies.metrics.delivered(source: "app")
            }
            if events.count > 1 { dependencies.metrics.revoked() }
        case .failure(.wrongUser):
            // Checked inside the ledger's write: whoever delivered it first owns it.
            throw ServerError.wrongUser
        case .failure(let error): throw ServerError.ledger(error)
        case nil: throw ServerError.internalError("the ledger did not answer")
        }
        if result.outcome == .applied, case .purchase = events[0] {
            // Written now: Apple's words kept since they were read (a refund with nobody to apply it to then)
            // apply now, in Apple's order; the notification intake looks again for its owner after keeping one,
            // so whichever of the two comes second applies it.
            for word in try await keptWords(on: fact).filter({ !words.contains($0) }).sorted() {
                let wordEvents = Delivery.events(for: word, on: fact, credits: nil)
                for event in wordEvents {
                    let request = LedgerRequest(
                        owner: user.id, environment: user.environment, event: event,
                        policy: configuration.deficitPolicy, at: dependencies.now())
                    if case .success(let applied) = try await ledger.apply([request]).first { result = applied }
                }
                events += wordEvents
            }
        }
        let outcome: TransactionOutcome =
            switch Delivery.outcome(of: events, ledger: result.outcome) {
            case .revoked: .revoked
            case .duplicate: .duplicate
            case .delivered: .delivered
            }
        return try json(
            TransactionResponse(
                outcome: outcome, transactionId: transactionId, credits: outcome == .revoked ? 0 : credits,
                balance: result.wallet.balance, entitlements: try await entitlements(of: user)))
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

    func entitlements(of user: User) async throws -> [String] {
        try await store.entitlements(of: user, catalog: dependencies.catalog, at: dependencies.now())
    }

    /// The user a bearer token names, in this server's environment.
    func authenticate(_ request: Request) async throws -> User {
        guard let header = request.headers[.authorization], header.hasPrefix("Bearer "), header.count > 7 else {
            throw ServerError.noBearer
        }
        let hash = Self.hash(String(header.dropFirst(7)))
        let now = dependencies.now()
        let found: User?
        if let known = tokens.user(tokenHash: hash, now: now) {
            found = known
        } else {
            found = try await store.user(tokenHash: hash)
            if let found { tokens.remember(found, tokenHash: hash, now: now) }
        }
        guard let user = found, user.environment == configuration.environment else { throw ServerError.noBearer }
        return user
    }

    /// Tokens are stored as their SHA-256: 256 random bits need no slow hash.
    static func hash(_ token: String) -> String { Secrets.hash(token) }

    func decode<T: Decodable>(_ request: Request, limit: Int? = nil) async throws -> T {
        let limit = limit ?? configuration.maximumBodySize
        let body: ByteBuffer
        do {
            body = try await request.body.collect(upTo: limit)
        } catch {
            throw ServerError.bodyTooLarge(limit: limit)
        }
        do {
            return try StrictJSON.decode(T.self, from: Data(buffer: body))
        } catch {
            throw ServerError.badRequest("the body is not valid: \(error)")
        }
    }

    func json(_ value: some Encodable, status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]) throws
        -> Response
    {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        encoder.dateEncodingStrategy = .iso8601
        var fields = headers
        fields[.contentType] = "application/json"
        return Response(
            status: status, headers: fields, body: .init(byteBuffer: ByteBuffer(data: try encoder.encode(value))))
    }
}
