import CofferAPI
import CofferAppStore
import CofferCore
import CofferServer
import CofferService
import CofferStore
import CofferTestSupport
import Foundation
import Hummingbird
import HummingbirdTesting
import Testing

/// `POST /v1/receipts/verify` with Apple's real legacy receipts (copied from `shared/apple/receipts`).
@Suite("Legacy receipts route", .timeLimit(.minutes(1)))
struct ReceiptsAPITests {
    static func receipt(_ name: String) throws -> String {
        let url = try AppleFixtures.url(name)
        return try String(contentsOf: url, encoding: .utf8)
    }

    /// A server for the app a receipt belongs to, at a moment inside the receipt's life.
    static func server(
        bundleId: String, environment: CofferCore.AppStoreEnvironment, products: [CatalogProduct], now: String,
        store: any CofferStore, sandboxInProduction: Bool = true
    ) throws -> some ApplicationProtocol {
        let moment = try Date(now, strategy: .iso8601)
        let verifier = try SignedDataVerifier(
            rootCertificates: [AppleRoots.rootCAG3()], bundleId: bundleId, appAppleId: 1,
            environment: environment == .production ? .production : .sandbox, acceptsSandbox: sandboxInProduction)
        var configuration = ServerConfiguration(bundleId: bundleId)
        configuration.environment = environment
        configuration.sandboxInProduction = sandboxInProduction
        configuration.appAppleId = 1
        return try buildApplication(
            configuration: configuration,
            dependencies: try ServerDependencies(
                store: store, verifier: verifier, catalog: try Catalog(products: products), now: { moment }))
    }

    static func post(_ receipt: String, token: String, _ client: some TestClientProtocol) async throws -> TestResponse {
        try await client.execute(
            uri: "/v1/receipts/verify", method: .post, headers: ClientAPITests.bearer(token),
            body: try ClientAPITests.body(ReceiptVerifyRequest(receiptData: receipt)))
    }

    @Test(
        "App Review: Apple's real ProductionSandbox receipt at a Production server is delivered, once",
        arguments: ServerEngine.allCases)
    func reviewerReceipt(engine: ServerEngine) async throws {
        let store = try await engine.makeStore()
        let annual = "dev.bonzer.weeka.app.subscription.pro.annual"
        let app = try Self.server(
            bundleId: "dev.bonzer.weeka.app", environment: .production,
            products: [
                CatalogProduct(
                    id: annual, kind: .autoRenewable, credits: 50, entitlements: ["premium"], group: "pro",
                    allowance: [.credits: 30])
            ],
            now: "2025-12-26T18:45:00Z", store: store)
        let receipt = try Self.receipt("receipts/receipt-sandbox-g5")
        try await app.test(.router) { client in
            let reviewer = try await NotificationTests.createUser(client)
            let first = try await Self.post(receipt, token: reviewer.token, client)
            #expect(first.status == .ok)
            let answer = try ClientAPITests.decode(ReceiptVerifyResponse.self, first)
            #expect(answer.transactions.map(\.outcome) == ["delivered", "delivered"])
            #expect(answer.balance == 100)
            #expect(answer.entitlements == ["premium"])
            let again = try ClientAPITests.decode(
                ReceiptVerifyResponse.self, try await Self.post(receipt, token: reviewer.token, client))
            #expect(again.transactions.map(\.outcome) == ["duplicate", "duplicate"])
            #expect(again.balance == 100)
            // Marked Sandbox on its receipts and entries, and left out of Production's figures.
            let supportId = try #require(SupportID(reviewer.supportId))
            let user = try #require(try await store.user(supportId: supportId, environment: .production))
            let receipts = try await store.receipts(owner: user.id, environment: .production)
            #expect(receipts.map(\.transaction.environment) == [.sandbox, .sandbox])
            // A legacy receipt says neither the price nor Family Sharing: its periods earn no allowance.
            #expect(
                !(try await store.entries(owner: user.id, environment: .production)).contains {
                    $0.key.kind == .allowance
                })
            #expect(
                try await store.entries(owner: user.id, environment: .production).map(\.dataEnvironment) == [
                    .sandbox, .sandbox,
                ])
            let figures = try await store.dashboard(
                environment: .production, days: 30, now: try Date("2025-12-26T18:45:00Z", strategy: .iso8601))
            #expect(figures.purchases == 0)
            #expect(figures.otherEnvironmentPurchases == 2)
        }
    }

    @Test(
        "a Sandbox receipt's subscription is delivered once, to its first user only", arguments: ServerEngine.allCases)
    func sandboxReceipt(engine: ServerEngine) async throws {
        let annual = "dev.bonzer.weeka.app.subscription.pro.annual"
        let app = try Self.server(
            bundleId: "dev.bonzer.weeka.app", environment: .sandbox,
            products: [
                CatalogProduct(id: annual, kind: .autoRenewable, credits: 50, entitlements: ["premium"], group: "pro")
            ], now: "2025-12-26T18:45:00Z", store: try await engine.makeStore())
        let receipt = try Self.receipt("receipts/receipt-sandbox-g5")
        try await app.test(.router) { client in
            let alice = try await NotificationTests.createUser(client)
            let first = try await Self.post(receipt, token: alice.token, client)
            #expect(first.status == .ok)
            let answer = try ClientAPITests.decode(ReceiptVerifyResponse.self, first)
            #expect(
                answer.transactions == [
                    ReceiptTransactionOutcome(
                        transactionId: "2000001092134138", productId: annual, outcome: "delivered"),
                    ReceiptTransactionOutcome(
                        transactionId: "2000001092148094", productId: annual, outcome: "delivered"),
                ])
            #expect(answer.balance == 100)
            #expect(answer.entitlements == ["premium"])

            let again = try ClientAPITests.decode(
                ReceiptVerifyResponse.self, try await Self.post(receipt, token: alice.token, client))
            #expect(again.transactions.map(\.outcome) == ["duplicate", "duplicate"])
            #expect(again.balance == 100)

            let mallory = try await NotificationTests.createUser(client)
            let stolen = try ClientAPITests.decode(
                ReceiptVerifyResponse.self, try await Self.post(receipt, token: mallory.token, client))
            #expect(stolen.transactions.map(\.outcome) == ["wrong-user", "wrong-user"])
            #expect(stolen.balance == 0)
            #expect(stolen.entitlements == [])
        }
    }

    @Test("receipts for another app, another environment, from Xcode, tampered or unauthenticated are refused")
    func refusals() async throws {
        let store = InMemoryStore()
        let app = try Self.server(
            bundleId: "org.getpure.pure-iphone", environment: .production,
            products: [CatalogProduct(id: "org.getpure.pure.Week", kind: .consumable, credits: 7)],
            now: "2024-02-24T00:00:00Z", store: store)
        try await app.test(.router) { client in
            let user = try await NotificationTests.createUser(client)
            let production = try Self.receipt("receipts/receipt-production")
            let accepted = try ClientAPITests.decode(
                ReceiptVerifyResponse.self, try await Self.post(production, token: user.token, client))
            // One product is sold (7 credits), the three monthly ones are not.
            #expect(
                accepted.transactions.map(\.outcome) == [
                    "delivered", "unknown-product", "unknown-product", "unknown-product",
                ])
            #expect(accepted.balance == 7)

            let cases: [(String, String)] = [
                (try Self.receipt("receipts/receipt-sandbox-g5"), "INVALID_APP_IDENTIFIER"),
                (try Self.receipt("receipts/receipt-xcode-with-purchases"), "INVALID_CHAIN"),
                (String(production.dropLast(40)), "VERIFICATION_FAILURE"),
                ("not base64 at all", "VERIFICATION_FAILURE"),
            ]
            for (receipt, code) in cases {
                let refused = try await Self.post(receipt, token: user.token, client)
                #expect(refused.status == .unprocessableContent)
                #expect(try ClientAPITests.decode(ErrorResponse.self, refused).error.code == code)
            }
            let anonymous = try await client.execute(
                uri: "/v1/receipts/verify", method: .post,
                body: try ClientAPITests.body(ReceiptVerifyRequest(receiptData: production)))
            #expect(anonymous.status == .unauthorized)
            #expect(
                try await store.entries(
                    owner: try #require(
                        try await store.users(
                            environment: .production, supportIdPrefix: nil, limit: 1, offset: 0
                        ).first
                    ).id, environment: .production
                ).count == 1)
        }

        // A Sandbox receipt of the right app at a Production server that runs its own Sandbox server elsewhere.
        let sandboxApp = try Self.server(
            bundleId: "dev.bonzer.weeka.app", environment: .production, products: [], now: "2025-12-27T00:00:00Z",
            store: InMemoryStore(), sandboxInProduction: false)
        try await sandboxApp.test(.router) { client in
            let user = try await NotificationTests.createUser(client)
            let refused = try await Self.post(
                try Self.receipt("receipts/receipt-sandbox-g5"), token: user.token, client)
            #expect(try ClientAPITests.decode(ErrorResponse.self, refused).error.code == "INVALID_ENVIRONMENT")
        }
    }
}
