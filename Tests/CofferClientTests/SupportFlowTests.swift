import CofferAPI
import CofferAdmin
import CofferClient
import CofferCore
import CofferSimulator
import CofferStore
import Foundation
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Grants, the mailbox and the backup in the device wallet, with the app dying after each step.
@Suite("SDK grants, mailbox and backup", .timeLimit(.minutes(3)))
struct SupportFlowTests {
    typealias World = PurchaseFlowTests.World

    static func serverUser(_ world: World, _ app: CofferSDK) async throws -> User {
        let supportId = try #require(await app.credentials.flatMap { SupportID($0.supportId) })
        return try #require(try await world.serverStore.user(supportId: supportId, environment: .sandbox))
    }

    /// Posts Apple's notifications after the first `skip` to the server, as Apple would.
    static func deliverNotifications(_ world: World, after skip: Int) async throws {
        for notification in await world.apple.sentNotifications().dropFirst(skip) {
            #expect(try await post(notification, to: world.server) == 200)
        }
    }

    /// Posts one of Apple's notifications to the server as Apple does, and gives the HTTP status it answered.
    static func post(_ notification: OutgoingNotification, to server: ServerClient) async throws -> Int {
        var request = URLRequest(url: server.baseURL.appendingPathComponent("v1/apple/notifications"))
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.httpBody = try JSONEncoder().encode(NotificationRequest(signedPayload: notification.signedPayload))
        let (_, response) = try await URLSession.shared.data(for: request)
        return (response as? HTTPURLResponse)?.statusCode ?? 0
    }

    @Test("a grant is applied once and claimed, whichever step the app died after", arguments: SDKStep.grant)
    func grant(step: SDKStep) async throws {
        try await PurchaseFlowTests.withWorld(wallet: .device) { world in
            let first = try world.app()
            try await first.launch()
            let user = try await Self.serverUser(world, first)
            let grant = Grant(
                environment: .sandbox, recipient: user.id, credits: 400, reason: "Ticket #42", createdBy: "support",
                createdAt: Date())
            try await world.serverStore.createGrant(grant)
            let dying = try world.app(crashAfter: step)
            await #expect(throws: PurchaseFlowTests.ProcessDied(step: step)) { try await dying.launch() }
            let next = try world.app()
            try await next.launch()
            #expect(try await next.balance() == 400)
            let claimed = try await world.serverStore.grants(
                environment: .sandbox, recipient: user.id, status: .claimed, limit: 10)
            #expect(claimed.map(\.id) == [grant.id])
            // The backup holds the granted balance, and launching again changes nothing.
            #expect(try await world.serverStore.backup(owner: user.id, environment: .sandbox)?.value == 400)
            let again = try world.app()
            let report = try await again.launch()
            #expect(report.granted == 0 && !report.offline)
            #expect(try await again.balance() == 400)
        }
    }

    @Test(
        "a first launch claims the customer imported from CloudKit (balance and grant), once; other installs start anew",
        arguments: [WalletMode.device, .server])
    func importedCustomer(wallet: WalletMode) async throws {
        try await PurchaseFlowTests.withWorld(wallet: wallet) { world in
            let admin = AdminService(store: world.serverStore, catalog: world.catalog, walletMode: wallet)
            let report = try await admin.importCustomers(
                [
                    CustomerImport(
                        externalId: "_0123456789abcdef", balance: 5_000,
                        grants: [.init(externalId: "grant-1", credits: 400, reason: "Ticket #42")])
                ], source: "cloudkit", environment: .sandbox, actor: "test")
            let imported = try #require(report.customers.first?.supportId)
            // CloudKit does not answer on the first launch: no new customer is made in its place.
            let offline = try world.app(cloudKitUserRecordName: "unavailable")
            _ = try? await offline.launch()
            #expect(await offline.credentials == nil)
            let app = try world.app(cloudKitUserRecordName: "_0123456789abcdef")
            try await app.launch()
            #expect(await app.credentials?.supportId == imported)
            #expect(try await app.balance() == 5_400)
            // Launched again: the same customer, nothing claimed twice.
            let again = try world.app(cloudKitUserRecordName: "_0123456789abcdef")
            try await again.launch()
            #expect(await again.credentials?.supportId == imported)
            #expect(try await again.balance() == 5_400)
            // Another install with the same iCloud user (the app registers per install here): the customer is
            // claimed; it starts as a new one (support can merge), and never sees the imported balance.
            let other = try world.app(install: "ipad", cloudKitUserRecordName: "_0123456789abcdef")
            try await other.launch()
            let otherId = try #require(await other.credentials?.supportId)
            #expect(otherId != imported)
            #expect(try await other.balance() == 0)
            // A name no import brought in: a new customer too.
            let stranger = try world.app(install: "stranger", cloudKitUserRecordName: "_ffffffffffffffff")
            try await stranger.launch()
            #expect(await stranger.credentials?.supportId != imported)
        }
    }

    @Test(
        "with the server asking for CloudKit's proof, the app's web auth token claims the customer; an app without one registers as new"
    )
    func importedCustomerProof() async throws {
        try await PurchaseFlowTests.withWorld(wallet: .server, cloudKitProof: true) { world in
            let admin = AdminService(store: world.serverStore, catalog: world.catalog, walletMode: .server)
            let report = try await admin.importCustomers(
                [CustomerImport(externalId: "_0123456789abcdef", balance: 3_000, grants: [])], source: "cloudkit",
                environment: .sandbox, actor: "test")
            let imported = try #require(report.customers.first?.supportId)
            // An app that fetches no token (an older build, or the record name read elsewhere) cannot claim.
            var bare = world
            bare.cloudKit = nil
            let stranger = try bare.app(install: "stranger", cloudKitUserRecordName: "_0123456789abcdef")
            try await stranger.launch()
            #expect(await stranger.credentials?.supportId != imported)
            #expect(try await stranger.balance() == 0)
            // The customer's own phone fetches its token: the claim proves it and takes the customer.
            let phone = try world.app(cloudKitUserRecordName: "_0123456789abcdef")
            try await phone.launch()
            #expect(await phone.credentials?.supportId == imported)
            #expect(try await phone.balance() == 3_000)
        }
    }

    @Test("by Apple account, the claim makes the imported customer the account's: another device finds them")
    func importedCustomerAccount() async throws {
        // The server on the simulator's time: its AppTransactions are fresh.
        try await PurchaseFlowTests.withWorld(wallet: .device, serverOnSimulatedTime: true) { world in
            let admin = AdminService(store: world.serverStore, catalog: world.catalog, walletMode: .device)
            let report = try await admin.importCustomers(
                [CustomerImport(externalId: "_0123456789abcdef", balance: 2_500, grants: [])], source: "cloudkit",
                environment: .sandbox, actor: "test")
            let imported = try #require(report.customers.first?.supportId)
            let phone = try world.app(identity: .appleAccount, cloudKitUserRecordName: "_0123456789abcdef")
            try await phone.launch()
            #expect(await phone.credentials?.supportId == imported)
            #expect(try await phone.balance() == 2_500)
            // Alice's iPad, signed in to another iCloud account or none: her Apple account finds her.
            let pad = try world.app(install: "ipad", identity: .appleAccount)
            try await pad.launch()
            #expect(await pad.credentials?.supportId == imported)
            #expect(try await pad.balance() == 2_500)
        }
    }

    @Test("a grant support cancels after the app applied it but before its claim is taken back, once")
    func cancelledGrant() async throws {
        try await PurchaseFlowTests.withWorld(wallet: .device) { world in
            let first = try world.app()
            try await first.launch()
            let user = try await Self.serverUser(world, first)
            let grant = Grant(
                environment: .sandbox, recipient: user.id, credits: 400, reason: "Ticket #42", createdBy: "support",
                createdAt: Date())
            try await world.serverStore.createGrant(grant)
            // The app applies the grant and dies before claiming it; support cancels it meanwhile.
            let dying = try world.app(crashAfter: .grantRemembered)
            await #expect(throws: PurchaseFlowTests.ProcessDied(step: .grantRemembered)) { try await dying.launch() }
            #expect(try await dying.localWallet().balance == 400)
            _ = try await world.serverStore.cancelGrant(id: grant.id, environment: .sandbox, by: "support", at: Date())
            let next = try world.app()
            let report = try await next.launch()
            #expect(report.granted == -400)
            #expect(try await next.balance() == 0)
            #expect(try await world.serverStore.grant(id: grant.id, environment: .sandbox)?.status == .cancelled)
            #expect(try await world.serverStore.backup(owner: user.id, environment: .sandbox)?.value == 0)
            // Launching again takes nothing more.
            let again = try world.app()
            #expect(try await again.launch().granted == 0)
            #expect(try await again.balance() == 0)
        }
    }

    @Test(
        "a refund the server learned from Apple reaches the device through the mailbox once, even after a crash",
        arguments: [SDKStep.adjustmentApplied, .adjustmentRemembered])
    func mailbox(step: SDKStep) async throws {
        try await PurchaseFlowTests.withWorld(wallet: .device) { world in
            let app = try world.app()
            try await app.launch()
            let bought = try await app.purchase(productId: PurchaseFlowTests.product, quantity: 5)
            guard case .delivered(let id, 500) = bought else {
                Issue.record("not delivered: \(bought)")
                return
            }
            let sent = await world.apple.sentNotifications().count
            try await world.apple.refund(transactionId: id)
            try await Self.deliverNotifications(world, after: sent)
            let dying = try world.app(crashAfter: step)
            await #expect(throws: PurchaseFlowTests.ProcessDied(step: step)) { try await dying.launch() }
            let next = try world.app()
            try await next.launch()
            let wallet = try await next.localWallet()
            let records = try await world.serverRecords(next)
            #expect(wallet == Wallet(balance: 0, deficit: 0), "\(wallet), server: \(records)")
            // StoreKit's own word of the refund arrives too: the same ledger key, nothing more taken.
            let refunded = try #require(
                await world.apple.deviceTransactions(account: "alice").first { $0.id == id && $0.revocationDate != nil }
            )
            try await next.handle(refunded)
            let report = try await world.app().launch()
            #expect(report.adjusted == 0)
            #expect(try await next.localWallet() == Wallet(balance: 0, deficit: 0))
        }
    }

    @Test("backup: pushed after purchases, restored on a reinstall, an admin edit accepted once")
    func backup() async throws {
        try await PurchaseFlowTests.withWorld(wallet: .device) { world in
            let app = try world.app()
            try await app.launch()
            _ = try await app.purchase(productId: PurchaseFlowTests.product, quantity: 3)
            let user = try await Self.serverUser(world, app)
            let stored = try #require(try await world.serverStore.backup(owner: user.id, environment: .sandbox))
            #expect(stored.value == 300)
            #expect(try await LiveSyncTests.matches(app, stored))

            // Reinstall: the app's files are gone, the identity (Keychain) is not: the backup is restored.
            try FileManager.default.removeItem(at: world.folder.appendingPathComponent("app"))
            let reinstalled = try world.app()
            try await reinstalled.launch()
            #expect(try await reinstalled.balance() == 300)

            // Support sets the balance; the next launch takes it, once, even when it dies right after.
            _ = try await world.serverStore.saveBackup(
                owner: user.id, environment: .sandbox, value: 1_000, precondition: .overwrite,
                writer: .admin("support"), at: Date().addingTimeInterval(5))
            let dying = try world.app(crashAfter: .backupTaken)
            await #expect(throws: PurchaseFlowTests.ProcessDied(step: .backupTaken)) { try await dying.launch() }
            let next = try world.app()
            try await next.launch()
            #expect(try await next.balance() == 1_000)
            #expect(try await world.app().launch().offline == false)
            #expect(try await next.balance() == 1_000)
            #expect(try await world.serverStore.backup(owner: user.id, environment: .sandbox)?.value == 1_000)
        }
    }

    @Test(
        "a refund is taken back once, on the device and the server, whichever step the app died after",
        arguments: WalletMode.allCases, [SDKStep.remembered, .delivered, .finished, .posted])
    func refundDeath(wallet: WalletMode, step: SDKStep) async throws {
        try await PurchaseFlowTests.withWorld(wallet: wallet) { world in
            let app = try world.app()
            try await app.launch()
            let bought = try await app.purchase(productId: PurchaseFlowTests.product, quantity: 3)
            guard case .delivered(let id, 300) = bought else {
                Issue.record("not delivered: \(bought)")
                return
            }
            // Apple refunds it; its notification never reaches the server, so only the app can tell it.
            try await world.apple.refund(transactionId: id)
            let dying = try world.app(crashAfter: step)
            await #expect(throws: PurchaseFlowTests.ProcessDied(step: step)) { try await dying.refundCheck() }
            let next = try world.app()
            try await next.launch()
            #expect(try await next.balance() == 0)
            let records = try await world.serverRecords(next)
            #expect(records.receipts.first?.revokedAt != nil, "the server learned of the refund")
            #expect(records.entries.map(\.key.kind) == [.purchase, .revocation])
            if wallet == .device {
                #expect(try await next.localWallet() == Wallet(balance: 0, deficit: 0))
                #expect(try await next.pendingPosts().isEmpty)
            }
            let again = try world.app()
            try await again.launch()
            #expect(try await again.balance() == 0)
            #expect(try await world.serverRecords(again).entries.count == 2)
        }
    }

    @Test("the app dies right after its backup is written; the next launch finds the backup up to date")
    func backupPushDeath() async throws {
        try await PurchaseFlowTests.withWorld(wallet: .device) { world in
            let first = try world.app()
            try await first.launch()
            let dying = try world.app(crashAfter: .backupPushed)
            await #expect(throws: PurchaseFlowTests.ProcessDied(step: .backupPushed)) {
                try await dying.purchase(productId: PurchaseFlowTests.product, quantity: 2)
            }
            let next = try world.app()
            let report = try await next.launch()
            #expect(report.recovered.isEmpty && report.posted == 0)
            #expect(try await next.balance() == 200)
            let user = try await Self.serverUser(world, next)
            let stored = try #require(try await world.serverStore.backup(owner: user.id, environment: .sandbox))
            #expect(stored.value == 200)
            #expect(try await LiveSyncTests.matches(next, stored))
        }
    }

    @Test(
        "a purchase refunded before it was delivered, then its refund reversed, is delivered once",
        arguments: WalletMode.allCases)
    func reversedBeforeDelivery(wallet: WalletMode) async throws {
        try await PurchaseFlowTests.withWorld(wallet: wallet) { world in
            let first = try world.app()
            try await first.launch()
            let dying = try world.app(crashAfter: .purchased)
            await #expect(throws: PurchaseFlowTests.ProcessDied(step: .purchased)) {
                try await dying.purchase(productId: PurchaseFlowTests.product, quantity: 4)
            }
            let id = try #require(await world.apple.unfinishedTransactions(account: "alice").first?.id)
            // Apple refunds it before the app ever delivered it; the next launch delivers nothing.
            try await world.apple.refund(transactionId: id)
            let second = try world.app()
            try await second.launch()
            #expect(try await second.balance() == 0)
            // The refund is reversed: the customer has paid after all, and the credits arrive once.
            let sent = await world.apple.sentNotifications().count
            try await world.apple.reverseRefund(transactionId: id)
            try await Self.deliverNotifications(world, after: sent)
            let third = try world.app()
            try await third.launch()
            #expect(try await third.balance() == 400)
            try await world.app().launch()
            #expect(try await third.balance() == 400)
            let purchases = try await world.serverRecords(third).entries.filter { $0.key.kind == .purchase }
            #expect(purchases.map(\.amount) == [400])
        }
    }
}
