import CofferAPI
import CofferAppStore
import CofferCore
import CofferServer
import CofferService
import CofferSimulator
import CofferStore
import CofferStoreKit
import CofferStoreSQLite
import Foundation
import Hummingbird
import HummingbirdTesting
import Synchronization
import Testing

/// The purchase story end to end over a real socket: a simulated device buys, an app following Coffer's
/// rule (deliver, then finish) posts to the server, the process dies at the worst moments, Apple refunds
/// and reverses, and Sandbox stays out of Production.
@Suite("End to end with the simulator", .timeLimit(.minutes(2)))
struct EndToEndTests {
    /// The app's side of a purchase, as the SDK does it: post the signed transaction, finish only once the
    /// server answered.
    struct App {
        let client: any TestClientProtocol
        let token: String
        let device: SimulatedDevice

        func deliver(_ transaction: StoreTransaction) async throws -> TransactionResponse {
            let response = try await client.execute(
                uri: "/v1/transactions", method: .post, headers: ClientAPITests.bearer(token),
                body: try ClientAPITests.body(TransactionRequest(signedTransaction: transaction.jwsRepresentation)))
            #expect(response.status == .ok)
            return try ClientAPITests.decode(TransactionResponse.self, response)
        }

        /// A launch: every unfinished transaction the updates stream replays is delivered, then finished.
        func launch() async throws -> [TransactionOutcome] {
            var outcomes: [TransactionOutcome] = []
            for transaction in await device.unfinished() {
                outcomes.append(try await deliver(transaction).outcome)
                await device.finish(transactionId: transaction.id)
            }
            return outcomes
        }

        func me() async throws -> MeResponse {
            try ClientAPITests.decode(
                MeResponse.self,
                try await client.execute(uri: "/v1/me", method: .get, headers: ClientAPITests.bearer(token)))
        }
    }

    @Test(
        "buy, duplicate post, die before delivering, die before finishing, refund and reversal: exactly once",
        arguments: ServerEngine.allCases)
    func purchaseStory(engine: ServerEngine) async throws {
        let setup = try NotificationTests.Setup(store: try await engine.makeStore())
        try await setup.app.test(.live) { client in
            let user = try await NotificationTests.createUser(client)
            let app = App(client: client, token: user.token, device: setup.apple.device(account: "kim"))
            var delivered = 0

            // 1. A purchase delivered, then finished.
            guard
                case .success(let first) = try await app.device.purchase(
                    productId: "com.example.credits", quantity: 2, appAccountToken: user.appAccountToken)
            else {
                Issue.record("the purchase did not succeed")
                return
            }
            #expect(try await app.deliver(first).outcome == .delivered)
            await app.device.finish(transactionId: first.id)
            delivered += 200
            // 2. The same transaction posted again (a retry after a lost answer): nothing more.
            #expect(try await app.deliver(first).outcome == .duplicate)
            #expect(try await app.me().balance == Int64(delivered))

            // 3. The app dies after the payment sheet, before posting: the next launch delivers it.
            guard
                case .success(let second) = try await app.device.purchase(
                    productId: "com.example.credits", quantity: 1, appAccountToken: user.appAccountToken)
            else {
                Issue.record("the purchase did not succeed")
                return
            }
            #expect(await app.device.unfinished().map(\.id) == [second.id])
            #expect(try await app.launch() == [.delivered])
            delivered += 100
            // 4. The app dies after the server delivered, before finishing: the next launch finds a duplicate.
            guard
                case .success(let third) = try await app.device.purchase(
                    productId: "com.example.credits", quantity: 3, appAccountToken: user.appAccountToken)
            else {
                Issue.record("the purchase did not succeed")
                return
            }
            #expect(try await app.deliver(third).outcome == .delivered)
            delivered += 300
            #expect(try await app.launch() == [.duplicate])
            #expect(await app.device.unfinished().isEmpty)
            #expect(try await app.me().balance == Int64(delivered))

            // 5. Apple refunds the second purchase; its notification takes back 100, once.
            try await setup.apple.refund(transactionId: second.id)
            // Apple's purchase notifications arrive late and out of order too: all of them, then the refund twice.
            var outcomes = try await setup.deliver(after: 0, with: client)
            outcomes += try await setup.deliver(after: 3, with: client)
            #expect(outcomes == ["applied", "applied", "applied", "applied", "duplicate"])
            #expect(try await app.me().balance == Int64(delivered - 100))
            // 6. Apple reverses the refund: the 100 come back.
            try await setup.apple.reverseRefund(transactionId: second.id)
            #expect(try await setup.deliver(after: 4, with: client) == ["applied"])
            #expect(try await app.me().balance == Int64(delivered))
            let mailbox = try await NotificationTests.adjustments(user, client)
            #expect(mailbox.map(\.key) == ["revocation:\(second.id)", "reversal:\(second.id)"])
        }
    }

    @Test("one database, a Sandbox and a Production server: neither sees the other's users, purchases or notifications")
    func environmentsApart() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("coffer-\(UUID().uuidString).sqlite")
        let store = try SQLiteStore(path: path.path)
        let sandbox = try NotificationTests.Setup(store: store)
        var configuration = ServerConfiguration(bundleId: NotificationTests.bundleId)
        configuration.environment = .production
        configuration.appAppleId = 1_234
        let production = try buildApplication(
            configuration: configuration,
            dependencies: try ServerDependencies(
                store: store,
                verifier: try SignedDataVerifier(
                    rootCertificates: [AppleRoots.rootCAG3()], bundleId: NotificationTests.bundleId, appAppleId: 1_234,
                    environment: .production),
                catalog: sandbox.catalog))
        let (user, signed) = try await Self.sandboxPurchase(sandbox)
        let notification = try #require(await sandbox.apple.sentNotifications().first).signedPayload
        try await production.test(.router) { client in
            // The Sandbox token means nothing here.
            let me = try await client.execute(uri: "/v1/me", method: .get, headers: ClientAPITests.bearer(user.token))
            #expect(me.status == .unauthorized)
            let local = try await NotificationTests.createUser(client)
            let posted = try await client.execute(
                uri: "/v1/transactions", method: .post, headers: ClientAPITests.bearer(local.token),
                body: try ClientAPITests.body(TransactionRequest(signedTransaction: signed)))
            #expect(posted.status == .unprocessableContent)
            let notified = try await NotificationTests.post(notification, with: client)
            #expect(notified.status == .unprocessableContent)
            #expect(try await NotificationTests.me(local, client).balance == 0)
        }
        #expect(try await store.userCount(environment: .sandbox) == 1)
        #expect(try await store.userCount(environment: .production) == 1)
        #expect(
            try await store.notifications(environment: .production, transactionId: nil, outcome: nil, limit: 10)
                .isEmpty)
        let sandboxUser = try #require(
            try await store.user(appAccountToken: user.appAccountToken, environment: .sandbox))
        #expect(try await store.wallet(owner: sandboxUser.id, environment: .sandbox).balance == 100)
        #expect(try await store.wallet(owner: sandboxUser.id, environment: .production) == .empty)
    }

    /// A user of the Sandbox server who bought and delivered 100 credits; the signed transaction.
    static func sandboxPurchase(_ setup: NotificationTests.Setup) async throws -> (CreateUserResponse, String) {
        let result = Mutex<(CreateUserResponse, String)?>(nil)
        try await setup.app.test(.router) { client in
            let user = try await NotificationTests.createUser(client)
            let id = try #require(
                try await setup.apple.purchase(
                    account: "lee", productId: "com.example.credits", appAccountToken: user.appAccountToken
                ).transactionIds.first)
            let signed = try await setup.apple.signedTransaction(id: id)
            let posted = try await client.execute(
                uri: "/v1/transactions", method: .post, headers: ClientAPITests.bearer(user.token),
                body: try ClientAPITests.body(TransactionRequest(signedTransaction: signed)))
            #expect(try ClientAPITests.decode(TransactionResponse.self, posted).outcome == .delivered)
            result.withLock { $0 = (user, signed) }
        }
        return try #require(result.withLock { $0 })
    }
}
