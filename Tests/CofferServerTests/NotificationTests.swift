import CofferAPI
import CofferAppStore
import CofferCore
import CofferServer
import CofferService
import CofferSimulator
import CofferStore
import CofferStoreSQLite
import Foundation
import Hummingbird
import HummingbirdTesting
import Synchronization
import Testing

/// App Store Server Notifications V2 posted by the simulator to `POST /v1/apple/notifications`.
@Suite("Apple notifications", .timeLimit(.minutes(2)))
struct NotificationTests {
    static let bundleId = ClientAPITests.bundleId
    static let start = ClientAPITests.start

    /// A server whose clock is the simulator's, with credits, a monthly subscription and a loyalty rule.
    struct Setup {
        let apple: SimulatedAppStore
        let clock: SimulatorClock
        let store: any CofferStore
        let pki: SimulatorPKI
        let catalog: Catalog
        let verifier: SignedDataVerifier
        let configuration: ServerConfiguration
        let app: any ApplicationProtocol

        static func defaultConfiguration(wallet: WalletMode = .device) -> ServerConfiguration {
            var configuration = ServerConfiguration(bundleId: bundleId)
            configuration.wallet = wallet
            return configuration
        }

        init(store: any CofferStore = InMemoryStore(), wallet: WalletMode = .device) throws {
            try self.init(store: store, configuration: Self.defaultConfiguration(wallet: wallet))
        }

        /// - Parameter reviewers: When set, Apple and the server run in Production (the simulator's chain standing
        ///   in for Apple's), and these accounts buy in the sandbox as App Review and TestFlight do.
        init(
            store: any CofferStore = InMemoryStore(), configuration: ServerConfiguration,
            reviewers: Set<String>? = nil, catalog: Catalog? = nil
        ) throws {
            var options = SimulatorPKI.Options()
            options.simulatorMarker = reviewers == nil
            pki = try SimulatorPKI(
                validFrom: start.addingTimeInterval(-86_400), leafValidUntil: start.addingTimeInterval(800 * 86_400),
                options: options)
            self.catalog =
                try catalog
                ?? Catalog(
                    products: [
                        CatalogProduct(id: "com.example.credits", kind: .consumable, credits: 100),
                        CatalogProduct(
                            id: "com.example.pro.monthly", kind: .autoRenewable, entitlements: ["premium"],
                            group: "pro",
                            durationDays: 30),
                    ],
                    loyalty: [LoyaltyRule(group: "pro", periods: 12, entitlements: ["lifetime"])])
            let clock = SimulatorClock(start: start)
            self.clock = clock
            var simulatorConfiguration = SimulatorConfiguration(
                bundleId: bundleId, appAppleId: 1_234, environment: reviewers == nil ? .sandbox : .production)
            simulatorConfiguration.gracePeriodDays = 6
            simulatorConfiguration.reviewers = reviewers ?? []
            apple = SimulatedAppStore(
                catalog: self.catalog, configuration: simulatorConfiguration, signer: try pki.signer(), clock: clock)
            verifier = try SignedDataVerifier(
                rootCertificates: [pki.rootDER()], bundleId: bundleId, appAppleId: 1_234,
                environment: reviewers == nil ? .sandbox : .production,
                acceptsSandbox: configuration.sandboxInProduction)
            var configuration = configuration
            if reviewers != nil { configuration.environment = .production }
            self.store = store
            self.configuration = configuration
            app = try buildApplication(
                configuration: configuration,
                dependencies: try ServerDependencies(
                    store: store, verifier: verifier, catalog: self.catalog, now: { clock.now() }))
        }

        /// The server's dependencies, with an App Store Server API client.
        func dependencies(api: AppStoreServerAPIClient?) throws -> ServerDependencies {
            let clock = clock
            return try ServerDependencies(
                store: store, verifier: verifier, catalog: catalog, appStoreAPI: api, now: { clock.now() })
        }

        /// The server with an App Store Server API client (recovery off: tests run it by hand).
        func application(api: AppStoreServerAPIClient) throws -> some ApplicationProtocol {
            var configuration = configuration
            configuration.recoveryInterval = 0
            configuration.reconcileInterval = 0
            return try buildApplication(configuration: configuration, dependencies: try dependencies(api: api))
        }

        /// Creates a user through the API.
        func createUser() async throws -> CreateUserResponse {
            let created = Mutex<CreateUserResponse?>(nil)
            try await app.test(.router) { client in
                let user = try await NotificationTests.createUser(client)
                created.withLock { $0 = user }
            }
            return try #require(created.withLock { $0 })
        }

        /// Posts every notification the simulator sent after the first `skip`, as Apple would.
        func deliver(after skip: Int, with client: some TestClientProtocol) async throws -> [String] {
            var outcomes: [String] = []
            for notification in await apple.sentNotifications().dropFirst(skip) {
                let response = try await NotificationTests.post(notification.signedPayload, with: client)
                #expect(response.status == .ok)
                outcomes.append(try ClientAPITests.decode(NotificationResponse.self, response).outcome)
            }
            return outcomes
        }
    }

    /// Apple's notifications posted as they come: each ``catchUp()`` posts those the simulator sent since the one
    /// before, as Apple would.
    final class Feed {
        let setup: Setup
        let client: any TestClientProtocol
        private var sent = 0

        init(_ setup: Setup, _ client: any TestClientProtocol) {
            self.setup = setup
            self.client = client
        }

        /// Posts what was sent since the last call; their outcomes.
        func catchUp() async throws -> [String] {
            let outcomes = try await setup.deliver(after: sent, with: client)
            sent += outcomes.count
            return outcomes
        }
    }

    static func post(_ signedPayload: String, with client: some TestClientProtocol) async throws -> TestResponse {
        try await client.execute(
            uri: "/v1/apple/notifications", method: .post,
            body: try ClientAPITests.body(NotificationRequest(signedPayload: signedPayload)))
    }

    /// A purchase without an appAccountToken (the server cannot tell whose it is until an app posts it),
    /// then refunded: its id and its JWS from before the refund.
    static func refundedWithoutToken(_ setup: Setup) async throws -> (id: String, preRefund: String) {
        let bought = try await setup.apple.purchase(account: "bob", productId: "com.example.credits")
        let id = try #require(bought.transactionIds.first)
        let preRefund = try await setup.apple.signedTransaction(id: id)
        try await setup.apple.refund(transactionId: id)
        return (id, preRefund)
    }

    /// The app presents a signed transaction: `POST /v1/transactions`.
    static func present(
        _ signed: String, as user: CreateUserResponse, with client: some TestClientProtocol
    ) async throws -> TransactionResponse {
        try ClientAPITests.decode(
            TransactionResponse.self,
            try await client.execute(
                uri: "/v1/transactions", method: .post, headers: ClientAPITests.bearer(user.token),
                body: try ClientAPITests.body(TransactionRequest(signedTransaction: signed))))
    }

    static func me(_ user: CreateUserResponse, _ client: some TestClientProtocol) async throws -> MeResponse {
        try ClientAPITests.decode(
            MeResponse.self,
            try await client.execute(uri: "/v1/me", method: .get, headers: ClientAPITests.bearer(user.token)))
    }

    static func adjustments(_ user: CreateUserResponse, _ client: some TestClientProtocol) async throws
        -> [AdjustmentBody]
    {
        try ClientAPITests.decode(
            AdjustmentsResponse.self,
            try await client.execute(
                uri: "/v1/me/adjustments", method: .get, headers: ClientAPITests.bearer(user.token))
        ).adjustments
    }

    static func createUser(_ client: some TestClientProtocol) async throws -> CreateUserResponse {
        try ClientAPITests.decode(CreateUserResponse.self, try await client.execute(uri: "/v1/users", method: .post))
    }

    @Test(
        "purchase, refund and reversal arrive as notifications: applied once, duplicates answered 200, the mailbox keyed",
        arguments: ServerEngine.allCases, [WalletMode.device, .server])
    func refundAndReversal(engine: ServerEngine, wallet: WalletMode) async throws {
        let setup = try Setup(store: try await engine.makeStore(), wallet: wallet)
        try await setup.app.test(.router) { client in
            let user = try await Self.createUser(client)
            let bought = try await setup.apple.purchase(
                account: "alice", productId: "com.example.credits", quantity: 2, appAccountToken: user.appAccountToken)
            let id = try #require(bought.transactionIds.first)
            // ONE_TIME_CHARGE names the user by appAccountToken: delivered before the app posts anything.
            #expect(try await setup.deliver(after: 0, with: client) == ["applied"])
            #expect(try await Self.me(user, client).balance == 200)
            let posted = try await Self.present(try await setup.apple.signedTransaction(id: id), as: user, with: client)
            #expect(posted.outcome == .duplicate)

            try await setup.apple.refund(transactionId: id)
            #expect(try await setup.deliver(after: 1, with: client) == ["applied"])
            // Apple retries a notification it thinks failed: answered 200, applied once.
            #expect(try await setup.deliver(after: 1, with: client) == ["duplicate"])
            let refunded = try await Self.me(user, client)
            #expect(refunded.balance == 0)
            #expect(
                try await Self.adjustments(user, client).map { "\($0.key) \($0.amount)" } == ["revocation:\(id) -200"])

            try await setup.apple.reverseRefund(transactionId: id)
            #expect(try await setup.deliver(after: 2, with: client) == ["applied"])
            #expect(try await Self.me(user, client).balance == 200)
            let mailbox = try await Self.adjustments(user, client)
            #expect(mailbox.map(\.key) == ["revocation:\(id)", "reversal:\(id)"])
            #expect(mailbox.map(\.amount) == [-200, 200])
            #expect(mailbox.allSatisfy { $0.transactionId == id && $0.productId == "com.example.credits" })
            let entries = try await setup.store.entries(
                owner: try #require(
                    try await setup.store.user(appAccountToken: user.appAccountToken, environment: .sandbox)
                ).id,
                environment: .sandbox)
            #expect(entries.map(\.key.kind) == [.purchase, .revocation, .reversal])
        }
    }

    @Test(
        "a Production server: App Review's sandbox purchase delivered once, refunded by a Sandbox notification, kept marked",
        arguments: ServerEngine.allCases)
    func reviewerInProduction(engine: ServerEngine) async throws {
        let setup = try Setup(
            store: try await engine.makeStore(), configuration: Setup.defaultConfiguration(), reviewers: ["reviewer"])
        try await setup.app.test(.router) { client in
            let reviewer = try await Self.createUser(client)
            let customer = try await Self.createUser(client)
            let reviewed = try #require(
                try await setup.apple.purchase(
                    account: "reviewer", productId: "com.example.credits", appAccountToken: reviewer.appAccountToken
                ).transactionIds.first)
            let paid = try #require(
                try await setup.apple.purchase(
                    account: "customer", productId: "com.example.credits", appAccountToken: customer.appAccountToken
                ).transactionIds.first)
            // The app presents the reviewer's purchase; Apple's Sandbox notification of it comes to the same URL.
            let signed = try await setup.apple.signedTransaction(id: reviewed)
            #expect(try await Self.present(signed, as: reviewer, with: client).outcome == .delivered)
            #expect(try await Self.present(signed, as: reviewer, with: client).outcome == .duplicate)
            #expect(try await setup.deliver(after: 0, with: client) == ["applied", "applied"])
            #expect(try await Self.me(reviewer, client).balance == 100)
            try await setup.apple.refund(transactionId: reviewed)
            #expect(try await setup.deliver(after: 2, with: client) == ["applied"])
            #expect(try await Self.me(reviewer, client).balance == 0)
            #expect(try await Self.me(customer, client).balance == 100)

            let store = setup.store
            let reviewerId = try #require(
                try await store.user(appAccountToken: reviewer.appAccountToken, environment: .production)
            ).id
            #expect(
                try await store.entries(owner: reviewerId, environment: .production).map(\.dataEnvironment) == [
                    .sandbox, .sandbox,
                ])
            #expect(
                try await store.receipt(transactionId: reviewed, environment: .production)?.transaction.environment
                    == .sandbox)
            #expect(
                try await store.receipt(transactionId: paid, environment: .production)?.transaction.environment
                    == .production)
            let figures = try await store.dashboard(environment: .production, days: 30, now: setup.clock.now())
            #expect(figures.purchases == 1 && figures.refunds == 0 && figures.otherEnvironmentPurchases == 1)
            #expect(try await store.userCount(environment: .sandbox) == 0)
        }
    }

    @Test(
        "with sandbox.in.production off, a Production server refuses App Review's sandbox data and keeps nothing",
        arguments: ServerEngine.allCases)
    func reviewerRefused(engine: ServerEngine) async throws {
        var configuration = Setup.defaultConfiguration()
        configuration.sandboxInProduction = false
        let setup = try Setup(
            store: try await engine.makeStore(), configuration: configuration, reviewers: ["reviewer"])
        try await setup.app.test(.router) { client in
            let reviewer = try await Self.createUser(client)
            let reviewed = try #require(
                try await setup.apple.purchase(
                    account: "reviewer", productId: "com.example.credits", appAccountToken: reviewer.appAccountToken
                ).transactionIds.first)
            let response = try await client.execute(
                uri: "/v1/transactions", method: .post, headers: ClientAPITests.bearer(reviewer.token),
                body: try ClientAPITests.body(
                    TransactionRequest(signedTransaction: try await setup.apple.signedTransaction(id: reviewed))))
            #expect(response.status == .unprocessableContent)
            let notification = try #require(await setup.apple.sentNotifications().first)
            #expect(try await Self.post(notification.signedPayload, with: client).status == .unprocessableContent)
            #expect(try await setup.store.receipt(transactionId: reviewed, environment: .production) == nil)
            #expect(try await Self.me(reviewer, client).balance == 0)
        }
    }

    @Test(
        "a refund of a transaction nobody presented is kept, and taken back when a user presents it",
        arguments: ServerEngine.allCases)
    func unattributedRefund(engine: ServerEngine) async throws {
        let setup = try Setup(store: try await engine.makeStore())
        try await setup.app.test(.router) { client in
            let user = try await Self.createUser(client)
            let (id, preRefund) = try await Self.refundedWithoutToken(setup)
            #expect(try await setup.deliver(after: 0, with: client) == ["unattributed", "unattributed"])
            let kept = try await setup.store.notifications(
                environment: .sandbox, transactionId: id, outcome: .unattributed, limit: 10)
            #expect(kept.map(\.type) == ["REFUND", "ONE_TIME_CHARGE"])

            // The app posts the JWS it held from before the refund: nothing is credited.
            let posted = try await Self.present(preRefund, as: user, with: client)
            #expect(posted.outcome == .revoked)
            #expect(posted.balance == 0)
            #expect(try await Self.me(user, client).deficit == 0)
        }
    }

    @Test(
        "a refund and its reversal of a transaction nobody presented, arriving out of order, leave it delivered",
        arguments: ServerEngine.allCases)
    func unattributedReversalOutOfOrder(engine: ServerEngine) async throws {
        let setup = try Setup(store: try await engine.makeStore())
        try await setup.app.test(.router) { client in
            let user = try await Self.createUser(client)
            let (id, preRefund) = try await Self.refundedWithoutToken(setup)
            let refunded = try await setup.apple.signedTransaction(id: id)
            try await setup.apple.reverseRefund(transactionId: id)
            // Apple's retries bring the reversal first, then the refund (all at one instant of Apple's clock).
            let sent = await setup.apple.sentNotifications()
            for notification in sent.reversed() {
                #expect(try await Self.post(notification.signedPayload, with: client).status == .ok)
            }
            let kept = try await setup.store.notifications(
                environment: .sandbox, transactionId: id, outcome: .unattributed, limit: 10)
            #expect(Set(kept.map(\.type)).isSuperset(of: ["REFUND", "REFUND_REVERSED"]))

            // Whether the app holds the JWS from before the refund or from while it was refunded, Apple's last
            // word is the reversal: it is delivered, once.
            for (signed, outcome) in [(refunded, TransactionOutcome.delivered), (preRefund, .duplicate)] {
                let posted = try await Self.present(signed, as: user, with: client)
                #expect(posted.outcome == outcome)
                #expect(posted.balance == 100)
            }
            #expect(try await Self.me(user, client).deficit == 0)
        }
    }

    /// A user, and a purchase without an appAccountToken whose charge was kept for nobody; then Apple refunds
    /// it (the refund notification sent, not posted): the user, the transaction id and its JWS from before.
    static func boughtWithoutTokenThenRefunded(_ setup: Setup, _ client: some TestClientProtocol) async throws
        -> (CreateUserResponse, String, String)
    {
        let user = try await createUser(client)
        let bought = try await setup.apple.purchase(account: "bob", productId: "com.example.credits")
        let id = try #require(bought.transactionIds.first)
        let signed = try await setup.apple.signedTransaction(id: id)
        #expect(try await setup.deliver(after: 0, with: client) == ["unattributed"])
        try await setup.apple.refund(transactionId: id)
        return (user, id, signed)
    }

    @Test(
        "a refund that arrives while its token-less transaction is being presented is taken back",
        arguments: ServerEngine.allCases)
    func refundDuringPresentation(engine: ServerEngine) async throws {
        let store = CountingStore(base: try await engine.makeStore())
        let setup = try Setup(store: store)
        try await setup.app.test(.router) { client in
            let (user, _, signed) = try await Self.boughtWithoutTokenThenRefunded(setup, client)
            let refund = try #require(await setup.apple.sentNotifications().last).signedPayload

            // The presentation has read Apple's kept words (none yet about a refund); the refund lands before
            // its purchase is written, with nobody to apply it to.
            store.after(.notifications) {
                let response = try await Self.post(refund, with: client)
                #expect(try ClientAPITests.decode(NotificationResponse.self, response).outcome == "unattributed")
            }
            let posted = try await Self.present(signed, as: user, with: client)
            #expect(posted.outcome == .revoked)
            #expect(posted.balance == 0)
            let me = try await Self.me(user, client)
            #expect(me.balance == 0)
            #expect(me.deficit == 0)
            // Asked again, nothing changes.
            #expect(try await Self.present(signed, as: user, with: client).outcome == .revoked)
            #expect(try await Self.me(user, client).balance == 0)
        }
    }

    @Test(
        "a reversal that arrives while a refunded token-less transaction is being presented delivers it",
        arguments: ServerEngine.allCases)
    func reversalDuringPresentation(engine: ServerEngine) async throws {
        let store = CountingStore(base: try await engine.makeStore())
        let setup = try Setup(store: store)
        try await setup.app.test(.router) { client in
            let (user, id, _) = try await Self.boughtWithoutTokenThenRefunded(setup, client)
            #expect(try await setup.deliver(after: 1, with: client) == ["unattributed"])
            let refunded = try await setup.apple.signedTransaction(id: id)
            try await setup.apple.reverseRefund(transactionId: id)
            let reversal = try #require(await setup.apple.sentNotifications().last).signedPayload

            // The presentation has read the refund; the reversal lands before the revocation is written.
            store.after(.notifications) {
                let response = try await Self.post(reversal, with: client)
                #expect(try ClientAPITests.decode(NotificationResponse.self, response).outcome == "unattributed")
            }
            let posted = try await Self.present(refunded, as: user, with: client)
            #expect(posted.outcome == .delivered)
            #expect(posted.balance == 100)
            #expect(try await Self.me(user, client).balance == 100)
            #expect(try await Self.present(refunded, as: user, with: client).balance == 100)
        }
    }

    @Test(
        "a token-less transaction presented while its refund looks for an owner is taken back",
        arguments: ServerEngine.allCases)
    func presentationDuringRefund(engine: ServerEngine) async throws {
        let store = CountingStore(base: try await engine.makeStore())
        let setup = try Setup(store: store)
        try await setup.app.test(.router) { client in
            let (user, id, signed) = try await Self.boughtWithoutTokenThenRefunded(setup, client)

            // The refund has found no owner; the app presents the transaction before the refund is kept.
            store.after(.chainReceipts) {
                let posted = try await Self.present(signed, as: user, with: client)
                #expect(posted.outcome == .delivered)
            }
            #expect(try await setup.deliver(after: 1, with: client) == ["applied"])
            let me = try await Self.me(user, client)
            #expect(me.balance == 0)
            #expect(me.deficit == 0)
            #expect(try await Self.adjustments(user, client).map(\.key) == ["revocation:\(id)"])
        }
    }

    @Test("forged, foreign and malformed notifications are refused with 4xx and change nothing")
    func refusals() async throws {
        let setup = try Setup()
        try await setup.app.test(.router) { client in
            let user = try await Self.createUser(client)
            _ = try await setup.apple.purchase(
                account: "carol", productId: "com.example.credits", appAccountToken: user.appAccountToken)
            let genuine = try #require(await setup.apple.sentNotifications().first).signedPayload

            var parts = genuine.split(separator: ".").map(String.init)
            parts[1] = String(parts[1].dropLast(4)) + "AAAA"
            let tampered = try await Self.post(parts.joined(separator: "."), with: client)
            #expect(tampered.status == .unprocessableContent)
            #expect(try ClientAPITests.decode(ErrorResponse.self, tampered).error.code == "VERIFICATION_FAILURE")

            // The same notification signed by a Production simulator: refused by a Sandbox server.
            let production = try SimulatedAppStore(
                catalog: Catalog(products: [CatalogProduct(id: "com.example.credits", kind: .consumable, credits: 100)]
                ),
                configuration: SimulatorConfiguration(
                    bundleId: Self.bundleId, appAppleId: 1_234, environment: .production),
                signer: try setup.pki.signer(), clock: setup.clock)
            _ = try await production.purchase(
                account: "carol", productId: "com.example.credits", appAccountToken: user.appAccountToken)
            let foreign = try await Self.post(
                try #require(await production.sentNotifications().first).signedPayload, with: client)
            #expect(foreign.status == .unprocessableContent)
            #expect(try ClientAPITests.decode(ErrorResponse.self, foreign).error.code == "INVALID_ENVIRONMENT")

            let untrusted = try SimulatorPKI(
                validFrom: Self.start.addingTimeInterval(-86_400), leafValidUntil: Self.start.addingTimeInterval(86_400)
            )
            let stranger = SimulatedAppStore(
                catalog: try Catalog(products: [
                    CatalogProduct(id: "com.example.credits", kind: .consumable, credits: 100)
                ]),
                configuration: SimulatorConfiguration(bundleId: Self.bundleId, appAppleId: 1_234),
                signer: try untrusted.signer(), clock: setup.clock)
            _ = try await stranger.purchase(
                account: "carol", productId: "com.example.credits", appAccountToken: user.appAccountToken)
            let unsigned = try await Self.post(
                try #require(await stranger.sentNotifications().first).signedPayload, with: client)
            #expect(try ClientAPITests.decode(ErrorResponse.self, unsigned).error.code == "INVALID_CHAIN")

            let malformed = try await client.execute(
                uri: "/v1/apple/notifications", method: .post, body: ByteBuffer(string: #"{"payload": 1}"#))
            #expect(malformed.status == .badRequest)
            let huge = try await client.execute(
                uri: "/v1/apple/notifications", method: .post,
                body: ByteBuffer(string: String(repeating: "x", count: 100_000)))
            #expect(huge.status == .contentTooLarge)

            #expect(try await Self.me(user, client).balance == 0)
            #expect(
                try await setup.store.notifications(environment: .sandbox, transactionId: nil, outcome: nil, limit: 10)
                    .isEmpty)
        }
    }

    @Test(
        "a renewal chain through billing retry with grace to loyalty lifetime, from notifications alone",
        arguments: ServerEngine.allCases)
    func renewalsToLoyalty(engine: ServerEngine) async throws {
        let setup = try Setup(store: try await engine.makeStore())
        try await setup.app.test(.router) { client in
            let user = try await Self.createUser(client)
            let subscribed = try await setup.apple.purchase(
                account: "dana", productId: "com.example.pro.monthly", appAccountToken: user.appAccountToken)
            let original = try #require(subscribed.transactionIds.first)
            let feed = NotificationTests.Feed(setup, client)
            #expect(try await feed.catchUp() == ["applied"])
            #expect(try await Self.me(user, client).entitlements == ["premium"])

            // Ten renewals: eleven paid periods, no lifetime yet.
            for _ in 0..<10 { try await setup.apple.renewNow(originalTransactionId: original) }
            #expect(try await feed.catchUp() == Array(repeating: "applied", count: 10))
            #expect(try await Self.me(user, client).entitlements == ["premium"])

            // The card fails at the next renewal: billing retry with a grace period keeps premium.
            try await setup.apple.setBillingFails(account: "dana", true)
            try await setup.apple.advanceClock(by: 31 * 86_400)
            _ = try await feed.catchUp()
            let renewals = try await setup.store.renewalStates(
                owner: try #require(
                    try await setup.store.user(appAccountToken: user.appAccountToken, environment: .sandbox)
                ).id,
                environment: .sandbox)
            #expect(renewals.first?.inBillingRetry == true)
            #expect(renewals.first?.gracePeriodExpiresDate != nil)
            #expect(try await Self.me(user, client).entitlements == ["premium"])

            // The grace period ends: premium goes.
            try await setup.apple.advanceClock(by: 7 * 86_400)
            _ = try await feed.catchUp()
            #expect(try await Self.me(user, client).entitlements == [])

            // The card works again: the twelfth paid period unlocks loyalty lifetime, which outlives expiry.
            try await setup.apple.setBillingFails(account: "dana", false)
            _ = try await feed.catchUp()
            #expect(try await Self.me(user, client).entitlements == ["lifetime", "premium"])
            try await setup.apple.expireNow(originalTransactionId: original)
            _ = try await feed.catchUp()
            try await setup.apple.advanceClock(by: 40 * 86_400)
            _ = try await feed.catchUp()
            #expect(try await Self.me(user, client).entitlements == ["lifetime"])
        }
    }
}
