import CofferAPI
import CofferAdmin
import CofferCore
import CofferSimulator
import CofferStore
import Foundation
import Testing

@testable import CofferClient

/// The SDK registers with the Apple account: a new phone or a reinstall that lost its Keychain item comes back
/// to the same customer.
@Suite("SDK and the Apple account", .timeLimit(.minutes(2)))
struct AccountFlowTests {
    typealias World = PurchaseFlowTests.World

    @Test(
        "a new phone on the Apple account is the same customer: the server wallet's balance, the device wallet's backup",
        arguments: WalletMode.allCases)
    func newPhone(wallet: WalletMode) async throws {
        try await PurchaseFlowTests.withWorld(wallet: wallet, serverOnSimulatedTime: true) { world in
            let phone = try world.app(install: "phone", identity: .appleAccount)
            try await phone.launch()
            _ = try await phone.purchase(productId: PurchaseFlowTests.product, quantity: 3)
            #expect(try await phone.balance() == 300)
            try await phone.enteredForeground()
            let supportId = try #require(await phone.credentials?.supportId)

            // The old phone is lost; the new one has neither its files nor its Keychain item.
            let newPhone = try world.app(install: "new-phone", identity: .appleAccount)
            try await newPhone.launch()
            #expect(await newPhone.credentials?.supportId == supportId)
            #expect(await newPhone.credentials?.token != (await phone.credentials?.token))
            #expect(try await newPhone.balance() == 300)
            #expect(try await world.serverStore.userCount(environment: .sandbox) == 1)
            let id = try #require(SupportID(supportId))
            let user = try #require(try await world.serverStore.user(supportId: id, environment: .sandbox))
            #expect(user.appleAccount?.environment == .sandbox)
            // What the old phone bought is known here: the server recorded it for the customer.
            #expect(try await newPhone.history().map(\.status) == ["delivered"])
            #expect(try await newPhone.history().map(\.credits) == [300])
            #expect(try await newPhone.verifyPurchases().map(\.verdict) == [.alreadyRecorded])
            // Its purchases land on the same customer.
            _ = try await newPhone.purchase(productId: PurchaseFlowTests.product, quantity: 1)
            #expect(try await newPhone.balance() == 400)
            #expect(try await world.serverRecords(newPhone).receipts.count == 2)
        }
    }

    @Test(
        "device wallet: a purchase another device of the account made is that device's, unless it stays unfinished",
        arguments: [false, true])
    func otherDevicesPurchase(phoneComesBack: Bool) async throws {
        try await PurchaseFlowTests.withWorld(wallet: .device, serverOnSimulatedTime: true) { world in
            let phone = try world.app(crashAfter: .purchased, install: "phone", identity: .appleAccount)
            try await phone.launch()
            await #expect(throws: PurchaseFlowTests.ProcessDied(step: .purchased)) {
                try await phone.purchase(productId: PurchaseFlowTests.product, quantity: 3)
            }
            // The pad is the same customer, but the purchase is the phone's to deliver: left alone for now.
            let pad = try world.app(install: "pad", identity: .appleAccount)
            try await pad.launch()
            #expect(try await pad.balance() == 0)
            #expect(await world.apple.unfinishedTransactions(account: "alice").count == 1)
            if phoneComesBack {
                let again = try world.app(install: "phone", identity: .appleAccount)
                #expect(try await again.launch().recovered.count == 1)
                #expect(try await again.balance() == 300)
                // The pad never delivers it; it takes the customer's balance from the phone's backup.
                _ = try await world.apple.advanceClock(by: 3_600)
                try await pad.launch()
                #expect(try await pad.balance() == 300)
                let padUser = try await pad.localUser()
                #expect(try await pad.ledger.receipts(owner: padUser.id, environment: .sandbox).isEmpty)
            } else {
                // The phone is gone: once the grace has passed the pad delivers it, once.
                _ = try await world.apple.advanceClock(by: 11 * 60)
                #expect(try await pad.launch().recovered.count == 1)
                #expect(try await pad.balance() == 300)
            }
            #expect(await world.apple.unfinishedTransactions(account: "alice").isEmpty)
        }
    }

    @Test(
        "device wallet: a merged install's backed-up balance reaches the account's app once; the install signs in as the account only with the account's own code",
        arguments: [true, false])
    func mergeInDeviceWallet(withAccountCode: Bool) async throws {
        try await PurchaseFlowTests.withWorld(wallet: .device, serverOnSimulatedTime: true) { world in
            let old = try world.app(install: "old", identity: .install)
            try await old.launch()
            _ = try await old.purchase(productId: PurchaseFlowTests.product, quantity: 3)
            try await old.enteredForeground()
            let oldId = try #require(await old.credentials?.supportId)
            let phone = try world.app(install: "phone", identity: .appleAccount)
            try await phone.launch()
            #expect(try await phone.balance() == 0)
            let support = AdminService(
                store: world.serverStore, catalog: world.catalog, walletMode: .device, now: { world.clock.now() })
            // "Move to my Apple account" on the old install: the code the customer reads to support; and, for the
            // old install to become the account's, the code the phone shows.
            let code = try await old.mergeCode()
            let merged = try await support.mergeUsers(
                environment: .sandbox, from: oldId, into: try #require(await phone.credentials?.supportId),
                consent: .code(code.code), intoCode: withAccountCode ? try await phone.mergeCode().code : nil,
                actor: "ada")
            #expect(merged.movedBalance == 300)
            _ = try await world.apple.advanceClock(by: 10)  // past the server's token cache (support ran elsewhere)
            #expect(merged.tokensMoved == (withAccountCode ? 1 : 0) && merged.tokensEnded == (withAccountCode ? 0 : 1))
            #expect(try await phone.enteredForeground().adjusted == 1)
            #expect(try await phone.balance() == 300)
            try await old.enteredForeground()
            if withAccountCode {
                // The old install now signs in as the account's customer; the merge entry is its own balance.
                #expect(try await old.balance() == 300)
            } else {
                // Signed out, the old install (one user per install) registered again: a new customer, whose
                // balance is not the one that moved.
                let now = try #require(await old.credentials?.supportId)
                let account = await phone.credentials?.supportId
                #expect(now != oldId && now != account)
                #expect(try await old.balance() == 0)
                #expect(try await world.serverStore.userCount(environment: .sandbox) == 3)
            }
            #expect(try await phone.enteredForeground().adjusted == 0)
            #expect(try await phone.balance() == 300)
        }
    }

    @Test(
        "a device the server signed out (newer devices took its place) registers again with its AppTransaction: the same customer",
        arguments: WalletMode.allCases)
    func signedOutDevice(wallet: WalletMode) async throws {
        try await PurchaseFlowTests.withWorld(wallet: wallet, serverOnSimulatedTime: true) { world in
            let phone = try world.app(install: "phone", identity: .appleAccount)
            try await phone.launch()
            _ = try await phone.purchase(productId: PurchaseFlowTests.product, quantity: 3)
            try await phone.enteredForeground()
            let first = try #require(await phone.credentials)
            // Ten newer installs of the account: the phone's token is the oldest, and the server ends it.
            for index in 0..<10 {
                _ = try await world.apple.advanceClock(by: 1)
                try await world.app(install: "device-\(index)", identity: .appleAccount).launch()
            }
            _ = try await world.apple.advanceClock(by: 10)  // past the server's token cache
            let refused = await #expect(throws: ServerClientError.self) {
                try await world.server.me(token: first.token)
            }
            guard case .refused(401, _, _) = refused else {
                Issue.record("the pushed-out token answered \(String(describing: refused))")
                return
            }
            // The phone's next calls to the server find out; they register again once, and carry on as the same
            // customer.
            async let caughtUp = phone.enteredForeground()
            async let grants = phone.refreshGrants()
            let (report, granted) = try await (caughtUp, grants)
            #expect(report.offline == false && granted == 0)
            #expect(try await phone.balance() == 300)
            let again = try #require(await phone.credentials)
            #expect(again.supportId == first.supportId && again.token != first.token)
            #expect(try await world.server.me(token: again.token).supportId == first.supportId)
            _ = try await phone.purchase(productId: PurchaseFlowTests.product)
            #expect(try await phone.balance() == 400)
            #expect(try await world.serverStore.userCount(environment: .sandbox) == 1)
        }
    }

    @Test(
        "a first launch offline: the device wallet delivers locally and registers later; the server wallet says why not"
    )
    func firstLaunchOffline() async throws {
        try await PurchaseFlowTests.withWorld(wallet: .device, serverOnSimulatedTime: true) { world in
            let offline = try world.app(install: "phone", identity: .appleAccount, offline: true)
            #expect(try await offline.launch().offline)
            #expect(await offline.credentials == nil)
            guard
                case .delivered(let id, 300) = try await offline.purchase(
                    productId: PurchaseFlowTests.product, quantity: 3)
            else {
                Issue.record("not delivered offline")
                return
            }
            #expect(try await offline.balance() == 300)
            #expect(try await offline.pendingPosts() == [id])
            // The server answers: the install registers with its Apple account and posts what it bought.
            let online = try world.app(install: "phone", identity: .appleAccount)
            let report = try await online.launch()
            #expect(!report.offline && report.posted == 1)
            #expect(await online.credentials != nil)
            #expect(try await online.balance() == 300)
            #expect(try await online.pendingPosts().isEmpty)
            #expect(try await world.serverRecords(online).receipts.map(\.transaction.transactionId) == [id])
            #expect(try await online.history().map(\.status) == ["delivered"])
            // A later purchase carries the server's account token.
            _ = try await online.purchase(productId: PurchaseFlowTests.product)
            #expect(try await online.balance() == 400)
            #expect(try await world.serverRecords(online).receipts.count == 2)
        }
        try await PurchaseFlowTests.withWorld(wallet: .server, serverOnSimulatedTime: true) { world in
            let app = try world.app(install: "phone", identity: .appleAccount, offline: true)
            await #expect {
                try await app.launch()
            } throws: { error in
                if case SDKError.serverRequired = error { true } else { false }
            }
        }
    }

    @Test(
        "a cached AppTransaction too old for the server is never refreshed at launch; Restore Purchases refreshes it and joins the account"
    )
    func staleAppTransaction() async throws {
        try await PurchaseFlowTests.withWorld(wallet: .server, serverOnSimulatedTime: true) { world in
            let device = world.apple.device(account: "alice")
            let first = try world.app(install: "phone", identity: .appleAccount, device: device)
            try await first.launch()
            // Two days on, the device still holds the AppTransaction StoreKit signed then.
            _ = try await world.apple.advanceClock(by: 2 * 86_400)
            let cached = try #require(await device.appTransaction(refresh: false))
            do {
                _ = try await world.server.register(signedAppTransaction: cached)
                Issue.record("a stale AppTransaction registered a device")
            } catch let error as ServerClientError {
                if case .refused(let status, let code, _) = error {
                    #expect(status == 422 && code == "stale-app-transaction")
                } else {
                    Issue.record("refused as \(error), not stale-app-transaction")
                }
            }
            // The launch never refreshes it (Apple: `refresh()` asks the customer to sign in, only on their action):
            // the reinstall starts as a customer of its own, and asks StoreKit nothing more.
            let reinstalled = try world.app(install: "reinstalled", identity: .appleAccount, device: device)
            try await reinstalled.launch()
            #expect(await reinstalled.credentials?.supportId != (await first.credentials?.supportId))
            #expect(device.appTransactionRefreshes == 0)
            // Restore Purchases, the customer's tap, refreshes it and joins the Apple account's customer: it held
            // nothing of its own.
            _ = try await reinstalled.restorePurchases()
            #expect(device.appTransactionRefreshes == 1)
            #expect(await reinstalled.credentials?.supportId == (await first.credentials?.supportId))
            // A second tap changes nothing.
            _ = try await reinstalled.restorePurchases()
            #expect(device.appTransactionRefreshes == 1)
            #expect(await reinstalled.credentials?.supportId == (await first.credentials?.supportId))
        }
    }

    @Test("with one user per install, each install is its own customer", arguments: WalletMode.allCases)
    func perInstall(wallet: WalletMode) async throws {
        try await PurchaseFlowTests.withWorld(wallet: wallet, serverOnSimulatedTime: true) { world in
            let phone = try world.app(install: "phone", identity: .install)
            let pad = try world.app(install: "pad", identity: .install)
            try await phone.launch()
            try await pad.launch()
            #expect(await phone.credentials?.supportId != (await pad.credentials?.supportId))
            #expect(try await world.serverStore.userCount(environment: .sandbox) == 2)
            let users = try await world.serverStore.users(
                environment: .sandbox, supportIdPrefix: nil, limit: 10, offset: 0)
            #expect(users.allSatisfy { $0.appleAccount == nil })
        }
    }
}
