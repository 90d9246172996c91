import AsyncHTTPClient
import CofferAPI
import CofferAppStore
import CofferCore
import CofferServer
import CofferService
import CofferSimulator
import CofferStore
import CofferStoreSQLite
import Crypto
import Foundation
import Hummingbird
import HummingbirdTesting
import Testing

/// The server talking to Apple's servers (the simulator over loopback HTTP): recovering missed
/// notifications and answering consumption requests.
@Suite("Notification recovery and consumption answers", .timeLimit(.minutes(2)))
struct RecoveryTests {
    static let issuerId = "57246542-96fe-1a63-e053-0824d011072a"
    static let keyId = "SIMKEY0001"

    /// Serves the simulator's App Store Server API on a loopback port and gives `body` a client for it.
    static func withAppleAPI(
        _ setup: NotificationTests.Setup,
        _ body: @Sendable (AppStoreServerAPIClient) async throws -> Void
    ) async throws {
        let key = P256.Signing.PrivateKey()
        let tokens = APITokenVerifier(
            keys: [keyId: key.publicKey], issuerId: issuerId, bundleId: NotificationTests.bundleId)
        let apple = Application(
            router: SimulatorServer.router(store: setup.apple, tokens: tokens),
            configuration: .init(address: .hostname("127.0.0.1", port: 0)))
        try await apple.test(.live) { client in
            let http = HTTPClient(eventLoopGroupProvider: .singleton)
            var retry = AppStoreServerAPIClient.RetryPolicy()
            retry.initialBackoff = .milliseconds(10)
            let api = AppStoreServerAPIClient(
                httpClient: http,
                credentials: .init(
                    keyId: keyId, issuerId: issuerId, bundleId: NotificationTests.bundleId, privateKey: key),
                environment: .sandbox, baseURL: "http://127.0.0.1:\(try #require(client.port))", retry: retry)
            do {
                try await body(api)
            } catch {
                try await http.shutdown()
                throw error
            }
            try await http.shutdown()
        }
    }

    @Test(
        "notifications that never arrived are recovered from history once; the cursor survives a restart",
        arguments: ServerEngine.allCases)
    func recovery(engine: ServerEngine) async throws {
        let store = try await engine.makeStore()
        let setup = try NotificationTests.Setup(store: store)
        let user = try await setup.createUser()
        // Apple's posts never reach the server: a purchase, and a refund of another purchase.
        let kept = try #require(
            try await setup.apple.purchase(
                account: "erin", productId: "com.example.credits", quantity: 3, appAccountToken: user.appAccountToken
            ).transactionIds.first)
        let refunded = try #require(
            try await setup.apple.purchase(
                account: "erin", productId: "com.example.credits", appAccountToken: user.appAccountToken
            ).transactionIds.first)
        try await setup.apple.refund(transactionId: refunded)
        try await setup.apple.advanceClock(by: 60)
        try await Self.withAppleAPI(setup) { api in
            let recovery = try #require(
                NotificationRecovery(
                    configuration: setup.configuration.service, dependencies: try setup.dependencies(api: api))
            )
            let first = try await recovery.runOnce()
            #expect(first.read == 3)
            #expect(first.new == 3)
            let owner = try #require(try await store.user(appAccountToken: user.appAccountToken, environment: .sandbox))
            #expect(try await store.wallet(owner: owner.id, environment: .sandbox) == Wallet(balance: 300, deficit: 0))
            #expect(try await store.receipt(transactionId: refunded, environment: .sandbox)?.status == .revoked)
            #expect(try await store.receipt(transactionId: kept, environment: .sandbox)?.status == .delivered)
            let sources = try await store.notifications(
                environment: .sandbox, transactionId: nil, outcome: nil, limit: 10
            ).map(\.source)
            #expect(sources == ["recovery", "recovery", "recovery"])

            // A restart: a new service on the same store resumes from the saved cursor; nothing twice.
            let restarted = try #require(
                NotificationRecovery(
                    configuration: setup.configuration.service, dependencies: try setup.dependencies(api: api))
            )
            let again = try await restarted.runOnce()
            #expect(again.new == 0)
            #expect(try await store.cursor("notification-history", environment: .sandbox) != nil)
            #expect(try await store.entries(owner: owner.id, environment: .sandbox).count == 3)
        }
    }

    @Test("a notification in history this server refuses is skipped, and the cursor still moves on")
    func refusedInHistory() async throws {
        let setup = try NotificationTests.Setup()
        _ = try await setup.apple.purchase(account: "ned", productId: "com.example.credits")
        try await setup.apple.advanceClock(by: 60)
        try await Self.withAppleAPI(setup) { api in
            // A server for another app: every notification in this history is refused (INVALID_APP_IDENTIFIER).
            let verifier = try SignedDataVerifier(
                rootCertificates: [setup.pki.rootDER()], bundleId: "com.example.other", appAppleId: nil,
                environment: .sandbox)
            let clock = setup.clock
            let dependencies = try ServerDependencies(
                store: setup.store, verifier: verifier, catalog: setup.catalog, appStoreAPI: api, now: { clock.now() })
            let recovery = try #require(
                NotificationRecovery(configuration: setup.configuration.service, dependencies: dependencies))
            let report = try await recovery.runOnce()
            #expect(report.new == 0)
            #expect(try await setup.store.cursor("notification-history", environment: .sandbox) != nil)
        }
    }

    @Test("a cursor older than the history Apple keeps (30 days in the sandbox) starts at the oldest day it has")
    func staleCursor() async throws {
        let setup = try NotificationTests.Setup()
        let user = try await setup.createUser()
        try await setup.apple.advanceClock(by: 45 * 86_400)
        // The server stopped 44 days ago, its cursor then; a purchase since never reached it.
        let start = setup.clock.now().addingTimeInterval(-44 * 86_400)
        let millis = Int64(start.timeIntervalSince1970 * 1_000)
        try await setup.store.saveCursor(
            "notification-history", value: "\(millis)|\(millis + 60_000)|", environment: .sandbox)
        let bought = try #require(
            try await setup.apple.purchase(
                account: "olga", productId: "com.example.credits", appAccountToken: user.appAccountToken
            ).transactionIds.first)
        try await setup.apple.advanceClock(by: 60)
        try await Self.withAppleAPI(setup) { api in
            let recovery = try #require(
                NotificationRecovery(
                    configuration: setup.configuration.service, dependencies: try setup.dependencies(api: api)))
            let report = try await recovery.runOnce()
            #expect(report.new == 1)
            #expect(try await setup.store.receipt(transactionId: bought, environment: .sandbox)?.status == .delivered)
        }
    }

    @Test("a transaction no notification brought is filled in from Transaction History")
    func gapFill() async throws {
        let setup = try NotificationTests.Setup()
        let user = try await setup.createUser()
        let first = try #require(
            try await setup.apple.purchase(
                account: "finn", productId: "com.example.credits", appAccountToken: user.appAccountToken
            ).transactionIds.first)
        // Bought without an appAccountToken (an older app version): its notification stays unattributed.
        let older = try #require(
            try await setup.apple.purchase(account: "finn", productId: "com.example.credits").transactionIds.first)
        try await setup.apple.advanceClock(by: 60)
        try await Self.withAppleAPI(setup) { api in
            let recovery = try #require(
                NotificationRecovery(
                    configuration: setup.configuration.service, dependencies: try setup.dependencies(api: api))
            )
            let report = try await recovery.runOnce()
            #expect(report.filled == 1)
            let owner = try #require(
                try await setup.store.user(appAccountToken: user.appAccountToken, environment: .sandbox))
            #expect(try await setup.store.receipt(transactionId: first, environment: .sandbox)?.owner == owner.id)
            #expect(try await setup.store.receipt(transactionId: older, environment: .sandbox)?.owner == owner.id)
            #expect(try await setup.store.wallet(owner: owner.id, environment: .sandbox).balance == 200)
        }
    }
}
