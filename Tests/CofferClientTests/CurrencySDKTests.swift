import CofferAPI
import CofferAdmin
import CofferCore
import Foundation
import Testing

@testable import CofferClient

/// The SDK with a catalog of several currencies (issue 39): in the server wallet every currency's balance comes
/// from the server and a spend names its currency; the device wallet keeps every currency in its ledger, backs
/// each up and restores each.
@Suite("SDK: several currencies")
struct CurrencySDKTests {
    static let (coins, gems) = (Currency(rawValue: "coins")!, Currency(rawValue: "gems")!)
    static let currencies = [CurrencyDefinition(id: coins, name: "Coins"), CurrencyDefinition(id: gems, name: "Gems")]
    static let gemPack = CatalogProduct(id: "com.example.gems", kind: .consumable, credits: 0, otherCredits: [gems: 30])

    @Test("server wallet: a purchase of gems shows in balances(); spending names its currency, once per key")
    func serverWallet() async throws {
        try await PurchaseFlowTests.withWorld(wallet: .server, products: [Self.gemPack], currencies: Self.currencies) {
            world in
            let app = try world.app()
            try await app.launch()
            _ = try await app.purchase(productId: Self.gemPack.id)
            _ = try await app.purchase(productId: PurchaseFlowTests.product)
            #expect(try await app.balances() == ["coins": 100, "gems": 30])
            #expect(try await app.balance() == 100)

            #expect(try await app.spend(12, of: "gems", key: "sword") == 18)
            #expect(try await app.spend(12, of: "gems", key: "sword") == 18)
            await #expect(throws: LedgerError.insufficientBalance(balance: 18, requested: 19)) {
                try await app.spend(19, of: "gems", key: "castle")
            }
            await #expect(throws: SDKError.self) { try await app.spend(1, of: "stars", key: "x") }
            // The default currency by its id is spend(_:key:).
            #expect(try await app.spend(40, of: "coins", key: "potion") == 60)
            #expect(try await app.balances() == ["coins": 60, "gems": 18])
        }
    }

    @Test(
        "device wallet: a purchase gives each currency, earn and spend name one, a refund takes each back, a deficit where spent"
    )
    func deviceWallet() async throws {
        try await PurchaseFlowTests.withWorld(wallet: .device, products: [Self.gemPack], currencies: Self.currencies) {
            world in
            let app = try world.app()
            try await app.launch()
            guard case .delivered(let gemsBought, 0) = try await app.purchase(productId: Self.gemPack.id) else {
                Issue.record("the gem pack was not delivered")
                return
            }
            _ = try await app.purchase(productId: PurchaseFlowTests.product)
            #expect(try await app.balances() == ["coins": 100, "gems": 30])
            #expect(try await app.balance() == 100)

            #expect(try await app.earn(5, of: "gems", key: "level-1") == 35)
            #expect(try await app.earn(5, of: "gems", key: "level-1") == 35)
            #expect(try await app.spend(12, of: "gems", key: "sword") == 23)
            #expect(try await app.spend(12, of: "gems", key: "sword") == 23)
            await #expect(throws: LedgerError.insufficientBalance(balance: 23, requested: 24)) {
                try await app.spend(24, of: "gems", key: "castle")
            }
            await #expect(throws: SDKError.self) { try await app.earn(1, of: "stars", key: "x") }
            #expect(try await app.earn(7, of: "coins", key: "level-1") == 107)
            #expect(try await app.balances() == ["coins": 107, "gems": 23])

            // Apple refunds the gem pack: 30 gems go back out, 7 of them already spent (the deficit); coins stay.
            try await world.apple.refund(transactionId: gemsBought)
            #expect(try await app.refundCheck() == 1)
            let wallets = try await app.localWallets()
            #expect(wallets[Self.gems] == Wallet(balance: 0, deficit: 7))
            #expect(wallets[Self.coins] == Wallet(balance: 107, deficit: 0))
            // A gem pack bought later pays the deficit first.
            _ = try await app.purchase(productId: Self.gemPack.id)
            #expect(try await app.balances() == ["coins": 107, "gems": 23])
        }
    }

    @Test(
        "device wallet: the backup holds every currency; a reinstall restores each; support's edit of one is taken by the app"
    )
    func deviceWalletBackup() async throws {
        try await PurchaseFlowTests.withWorld(wallet: .device, products: [Self.gemPack], currencies: Self.currencies) {
            world in
            let app = try world.app(backupDelay: nil)
            try await app.launch()
            _ = try await app.purchase(productId: Self.gemPack.id)
            #expect(try await app.spend(4, of: "gems", key: "sword") == 26)
            await app.backupSettled()
            _ = try await app.syncBackup()
            let token = try #require(await app.credentials?.token)
            let backup = try #require(try await world.server.backup(token: token))
            #expect(backup.value == 0 && backup.currencies == ["gems": BackupCurrency(value: 26, deficit: 0)])
            #expect(try await app.backupStatus() == .matches(since: backup.lastUpdated))
            #expect(try await app.knownBackupStatus() == .matches(since: backup.lastUpdated))

            // Support sets the gems to 40 while the app wins 7 coins not yet backed up; its next sync takes the
            // gems support set and keeps its coins (support did not touch them), then backs them up.
            #expect(try await app.earn(7, key: "bonus") == 7)
            let supportId = try #require(await app.credentials?.supportId)
            let support = AdminService(
                store: world.serverStore, catalog: world.catalog, walletMode: .device, now: { world.clock.now() })
            let change = try await support.setBalance(
                environment: .sandbox, supportId: supportId, balance: 40, expected: 26, reason: "lost gems",
                actor: "support", currency: "gems")
            #expect(change.before == 26 && change.after == 40 && change.currency == "gems")
            await #expect(throws: AdminError.self) {
                try await support.setBalance(
                    environment: .sandbox, supportId: supportId, balance: 50, expected: 26, reason: "again",
                    actor: "support", currency: "gems")
            }
            guard case .acceptServer = try await app.syncBackup() else {
                Issue.record("the app did not take support's edit")
                return
            }
            #expect(try await app.balances() == ["coins": 7, "gems": 40])
            #expect(try await app.syncBackup() == .push(7))
            #expect(
                try await world.server.backup(token: token)?.currencies == [
                    "gems": BackupCurrency(value: 40, deficit: 0)
                ])
            // Support's grant of gems lands in the gems (refreshGrants() counts the default currency's credits).
            _ = try await support.createGrant(
                environment: .sandbox, supportId: supportId, credits: 3, reason: "Ticket #4", actor: "support",
                currency: "gems")
            #expect(try await app.refreshGrants() == 0)
            #expect(try await app.refreshGrants() == 0)
            #expect(try await app.balances() == ["coins": 7, "gems": 43])
            _ = try await app.syncBackup()

            // The app is deleted and installed again: the fresh install restores every currency.
            try FileManager.default.removeItem(at: world.folder.appendingPathComponent("app"))
            let again = try world.app()
            try await again.launch()
            #expect(try await again.balances() == ["coins": 7, "gems": 43])
            // An app from before several currencies writes no currencies: the server keeps the gems.
            let written = try await world.server.saveBackup(
                value: 3, device: "old", version: try #require(try await world.server.backup(token: token)).version,
                token: token)
            #expect(written.value == 3 && written.currencies == ["gems": BackupCurrency(value: 43, deficit: 0)])
            // A currency the catalog does not list is refused, and nothing changes.
            await #expect {
                _ = try await world.server.saveBackup(
                    value: 3, device: "x", version: written.version, currencies: ["stars": BackupCurrency(value: 1)],
                    token: token)
            } throws: { error in
                if case ServerClientError.refused(400, _, let why) = error { why.contains("stars") } else { false }
            }
            #expect(try await world.server.backup(token: token)?.version == written.version)
        }
    }

    @Test(
        "device wallet: a refund of gems bought before a reinstall reaches the new install through the mailbox, asked for by currency"
    )
    func deviceWalletMailbox() async throws {
        try await PurchaseFlowTests.withWorld(
            wallet: .device, serverOnSimulatedTime: true, products: [Self.gemPack], currencies: Self.currencies
        ) { world in
            let app = try world.app()
            try await app.launch()
            guard case .delivered(let bought, 0) = try await app.purchase(productId: Self.gemPack.id) else {
                Issue.record("the gem pack was not delivered")
                return
            }
            #expect(try await app.spend(4, of: "gems", key: "sword") == 26)
            await app.backupSettled()
            _ = try await app.syncBackup()
            try FileManager.default.removeItem(at: world.folder.appendingPathComponent("app"))
            let again = try world.app()
            try await again.launch()
            #expect(try await again.balances() == ["coins": 0, "gems": 26])

            // Apple refunds the pack; the server takes back 30 gems, the new install holds no receipt of it.
            let sent = await world.apple.sentNotifications().count
            try await world.apple.refund(transactionId: bought)
            try await SupportFlowTests.deliverNotifications(world, after: sent)
            let token = try #require(await again.credentials?.token)
            // An app that does not ask for other currencies is never handed the gems' item; one that asks is.
            #expect(try await world.server.adjustments(token: token).allSatisfy { $0.currency == nil })
            let items = try await world.server.adjustments(token: token, currencies: true)
            let gemsItem = try #require(items.first { $0.currency == "gems" })
            #expect(gemsItem.key == "gems:revocation:\(bought)" && gemsItem.amount == -30)
            #expect(try await again.applyMailbox() == 2)
            #expect(try await again.applyMailbox() == 0)
            #expect(try await again.balances() == ["coins": 0, "gems": 0])
            // The backup says it holds the item, so a later install never applies it again.
            await again.backupSettled()
            _ = try await again.syncBackup()
            #expect(try await world.server.backup(token: token)?.applied?.contains(gemsItem.key) == true)
        }
    }

    @Test("server wallet: a subscription's allowance shows in expiring(), and in the SwiftUI model's balances")
    func allowance() async throws {
        let pro = CatalogProduct(
            id: "com.example.pro", kind: .autoRenewable, entitlements: ["premium"], group: "pro", durationDays: 30,
            allowance: [Self.coins: 500, Self.gems: 5])
        try await PurchaseFlowTests.withWorld(
            wallet: .server, serverOnSimulatedTime: true, products: [pro], currencies: Self.currencies
        ) { world in
            try await Self.allowance(world, pro)
        }
    }

    @MainActor
    static func allowance(_ world: PurchaseFlowTests.World, _ pro: CatalogProduct) async throws {
        let app = try world.app()
        try await app.launch()
        #expect(try await app.expiring() == [])
        _ = try await app.purchase(productId: pro.id)
        #expect(try await app.balances() == ["coins": 500, "gems": 5])
        let expiring = try await app.expiring()
        #expect(expiring.map(\.amount).sorted() == [5, 500] && Set(expiring.map(\.currency)) == ["coins", "gems"])
        #expect(expiring.allSatisfy { $0.expiresAt > PurchaseFlowTests.start.addingTimeInterval(29 * 86_400) })
        let model = CofferModel(sdk: app)
        await model.refresh()
        #expect(model.balances == ["coins": 500, "gems": 5] && model.balance == 500)
        #expect(model.expiring.count == 2)
        // A spend takes the allowance first; the model reads it again.
        #expect(try await app.spend(2, of: "gems", key: "potion") == 3)
        await model.refresh()
        #expect(model.balances["gems"] == 3 && model.expiring.first { $0.currency == "gems" }?.amount == 3)
    }
}
