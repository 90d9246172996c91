import CofferAdmin
import CofferCore
import CofferService
import CofferStore
import Foundation
import Logging
import Synchronization
import Testing

/// Every one of the events comes out of the path that really makes it, on every engine: the ledger's
/// deliveries, renewals, refunds, reversals and spends, Apple's EXPIRED notice, and support's grants, balance edits,
/// merges and deletions through the same service the panel, the admin API and the CLI use.
@Suite("Webhook events from their real paths")
struct WebhookEventPathsTests {
    /// Records the type and body of everything posted.
    final class Collector: WebhookSender {
        let posted = Mutex<[(type: String, body: String)]>([])

        func post(url: String, headers: [(String, String)], body: String, timeout: Int) async throws -> Int {
            let type = headers.first { $0.0 == "Coffer-Event-Type" }?.1 ?? ""
            posted.withLock { $0.append((type, body)) }
            return 204
        }
    }

    static func fact(_ id: String, original: String? = nil, product: String, at date: Date) -> TransactionFact {
        TransactionFact(
            transactionId: id, originalTransactionId: original ?? id, productId: product, quantity: 1,
            purchaseDate: date, expiresDate: product.contains("monthly") ? date.addingTimeInterval(30 * 86_400) : nil,
            revocationDate: nil, isFamilyShared: false, isTrial: false, isUpgraded: false)
    }

    @Test("the fourteen event types, each from its own path", arguments: ServerEngine.allCases)
    func everyType(engine: ServerEngine) async throws {
        let store = try await engine.makeStore()
        let now = AdminAPITests.now
        let catalog = try Catalog(products: [
            CatalogProduct(id: "com.example.credits", kind: .consumable, credits: 100),
            CatalogProduct(
                id: "com.example.pro.monthly", kind: .autoRenewable, entitlements: ["premium"], group: "pro",
                durationDays: 30, allowance: [.credits: 20]),
        ])
        try await store.saveWebhookEndpoint(
            WebhookEndpoint(
                id: "wh_all", environment: .sandbox, url: "https://hooks.example.com", secret: "whsec_paths_0123456789",
                createdAt: now))
        let kim = User(environment: .sandbox, supportId: SupportID("_00000000000a")!, tokenHash: "k", createdAt: now)
        let account = User(
            environment: .sandbox, supportId: SupportID("_00000000000b")!, tokenHash: "a", createdAt: now,
            appleAccount: AppleAccount(appTransactionId: "704", environment: .sandbox))
        let anonymous = User(
            environment: .sandbox, supportId: SupportID("_00000000000c")!, tokenHash: "n", createdAt: now)
        for user in [kim, account, anonymous] { try await store.createUser(user) }

        // The ledger: a purchase, a subscription and its renewal, a refund and its reversal, a spend.
        func apply(_ event: LedgerEvent, _ user: User = kim) async throws {
            _ = try await store.apply(LedgerRequest(owner: user.id, environment: .sandbox, event: event, at: now))
        }
        let credits = Self.fact("t1", product: "com.example.credits", at: now)
        try await apply(.purchase(credits, credits: 100))
        try await apply(.purchase(Self.fact("s1", product: "com.example.pro.monthly", at: now), credits: 0))
        // The renewal through the catalog's requests, as the server makes them: its period's allowance beside it.
        let renewal = LedgerRequest(
            owner: kim.id, environment: .sandbox,
            event: .purchase(
                Self.fact("s2", original: "s1", product: "com.example.pro.monthly", at: now.addingTimeInterval(60)),
                credits: 0), at: now)
        #expect(try await store.apply(try catalog.inEveryCurrency(renewal)).count == 2)
        var refunded = credits
        refunded.revocationDate = now.addingTimeInterval(120)
        try await apply(.revocation(refunded))
        try await apply(.reversal(credits, at: now.addingTimeInterval(180)))
        try await apply(.spend(key: "round-1", amount: 10))
        // Apple's word that the subscription expired.
        _ = try await store.recordNotification(
            NotificationRecord(
                uuid: "n-expired", environment: .sandbox, type: "EXPIRED", subtype: "VOLUNTARY", transactionId: "s2",
                originalTransactionId: "s1", owner: kim.id, signedDate: now, receivedAt: now, outcome: .applied))

        // Support, through the service every surface uses.
        let service = AdminService(store: store, catalog: catalog, walletMode: .server, now: { now })
        let claimed = try await service.createGrant(
            environment: .sandbox, supportId: kim.supportId.rawValue, credits: 5, reason: "Ticket 1", actor: "ada")
        _ = try await store.claimGrant(
            id: claimed.id, recipient: kim.id, environment: .sandbox, crediting: .collect, at: now)
        // Credits that expire a day after the claim, unspent: ended by the sweep.
        let expiring = try await service.createGrant(
            environment: .sandbox, supportId: kim.supportId.rawValue, credits: 3, reason: "Event", actor: "ada",
            expiresInDays: 1)
        _ = try await store.claimGrant(
            id: expiring.id, recipient: kim.id, environment: .sandbox, crediting: .collect, at: now)
        #expect(
            try await store.expireCredits(
                environment: .sandbox, owner: nil, at: now.addingTimeInterval(2 * 86_400), limit: 10) == 1)
        let cancelled = try await service.createGrant(
            environment: .sandbox, supportId: kim.supportId.rawValue, credits: 7, reason: "Ticket 2", actor: "ada")
        _ = try await service.cancelGrant(environment: .sandbox, id: cancelled.id.uuidString, actor: "ada")
        _ = try await service.setBalance(
            environment: .sandbox, supportId: kim.supportId.rawValue, balance: 50, reason: "Ticket 3", actor: "ada")
        _ = try await service.mergeUsers(
            environment: .sandbox, from: anonymous.supportId.rawValue, into: account.supportId.rawValue,
            consent: .override(reason: "Ticket 4: the same person"), actor: "ada")
        _ = try await service.deleteUser(environment: .sandbox, supportId: kim.supportId.rawValue, actor: "ada")

        let sender = Collector()
        let dispatcher = WebhookDispatcher(
            store: store, catalog: catalog, environment: .sandbox, settings: nil, sender: sender,
            metrics: ServerMetrics(), logger: Logger(label: "test"), now: { now }, clock: SystemTimerClock())
        for _ in 0..<40 { _ = try await dispatcher.runOnce() }
        let posted = sender.posted.withLock { $0 }
        #expect(Set(posted.map(\.type)) == Set(WebhookEventType.allCases.map(\.rawValue)))
        // Each change made one event: one merge event (not one for each customer), one of each grant's.
        let counts = Dictionary(grouping: posted, by: \.type).mapValues(\.count)
        #expect(counts["customer.merged"] == 1 && counts["grant.created"] == 3 && counts["grant.cancelled"] == 1)
        #expect(counts["subscription.renewed"] == 1 && counts["purchase.delivered"] == 2)
        #expect(counts["credits.expired"] == 1 && counts["grant.claimed"] == 2 && counts["allowance.credited"] == 1)
        // A deleted customer's events went out without the reasons support wrote.
        #expect(!posted.contains { $0.body.contains("Ticket 1") || $0.body.contains("Ticket 3") })
        let merged = try #require(posted.first { $0.type == "customer.merged" })
        #expect(
            merged.body.contains(#""into":"_00000000000b""#) && merged.body.contains(#""supportId":"_00000000000c""#))
    }
}
