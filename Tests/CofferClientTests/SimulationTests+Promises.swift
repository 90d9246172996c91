import CofferAPI
import CofferAdmin
import CofferAppStore
import CofferCore
import CofferServer
import CofferService
import CofferSimulator
import CofferStore
import CofferStoreKit
import CofferStoreSQLite
import CofferTestSupport
import Foundation
import Hummingbird
import HummingbirdTesting
import Synchronization
import Testing

@testable import CofferClient

/// What the simulation checks after every step and once everything settled.
extension Simulation {
    // MARK: The promises

    /// After every step: every ledger's books are sound, and nothing is in the other environment.
    func checkBooks(after moment: String) async throws {
        // Every currency's books: the default's, and the gems'.
        for currency in [nil, Self.gems] {
            for user in try await serverStore.users(
                environment: environment, supportIdPrefix: nil, limit: 100, offset: 0)
            {
                let wallet =
                    currency == nil
                    ? try await serverStore.wallet(owner: user.id, environment: environment)
                    : try await serverStore.currencyWallets(owner: user.id, environment: environment)[Self.gems]
                let problems = LedgerAudit.discrepancies(
                    entries: try await serverStore.entries(
                        owner: user.id, environment: environment, currency: currency),
                    wallet: wallet ?? .empty)
                guard problems.isEmpty else {
                    throw Broken(
                        description:
                            "\(moment): the server's books of \(user.supportId) (\(currency?.rawValue ?? "credits")): \(problems)"
                    )
                }
            }
            for device in devices {
                guard let app = device.app, let user = try? await app.localUser() else { continue }
                let problems = LedgerAudit.discrepancies(
                    entries: try await app.ledger.entries(owner: user.id, environment: environment, currency: currency),
                    wallet: try await app.ledger.wallet(owner: user.id, environment: environment, currency: currency))
                guard problems.isEmpty else {
                    throw Broken(
                        description:
                            "\(moment): \(device.name)'s books (\(currency?.rawValue ?? "credits")): \(problems)")
                }
            }
        }
        let other: CofferCore.AppStoreEnvironment = environment == .production ? .sandbox : .production
        guard try await serverStore.userCount(environment: other) == 0 else {
            throw Broken(description: "\(moment): a user reached \(other.rawValue)")
        }
    }

    /// Lets everything finish, then checks what must hold once the system is quiet.
    func settle(server: ServerClient) async throws {
        note("settle: Apple's retries deliver what is in flight; every app launches twice")
        if wallet == .device {
            // Past the grace a device gives a purchase another device of the account made (the buyer is gone).
            _ = try await apple.advanceClock(by: 11 * 60)
        }
        await takeSent()
        for notification in inFlight { try await post(notification, to: server) }
        inFlight = []
        for device in devices {
            device.dying = nil
            try await launch(device, server: server)
            try await launch(device, server: server)
        }
        try await checkBooks(after: "settled")
        let now = clock.now()
        for device in devices {
            guard let app = device.app else { throw Broken(description: "\(device.name) died while settling") }
            let unfinished = await apple.unfinishedTransactions(account: device.account)
            guard unfinished.isEmpty else {
                throw Broken(description: "\(device.name): unfinished after settling: \(unfinished.map(\.id))")
            }
            let pending = try await app.pendingPosts()
            guard pending.isEmpty else {
                throw Broken(description: "\(device.name): the outbox still holds \(pending)")
            }
            guard let user = try await user(of: device) else {
                throw Broken(description: "\(device.name) has no user on the server")
            }
            let owned = try await transactions(of: user, account: device.account)
            try await checkDelivered(device, app: app, serverUser: user, owned: owned)
            // The server's entitlements equal a recomputation from Apple's history of what the user bought.
            let facts = owned.map(CofferSDK.fact)
            let expected = Entitlements.evaluate(facts, catalog: catalog, at: now).names
            let served = try await server.me(token: try #require(await app.credentials?.token)).entitlements
            guard served.sorted() == expected else {
                throw Broken(
                    description: "\(device.name): the server says \(served), Apple's history gives \(expected)")
            }
        }
        try await checkFigures()
        // One customer per Apple account: every device registered through it holds the same Support ID, and the
        // server has one account user for each such account.
        var byAccount: [String: Set<String>] = [:]
        for device in devices where identity(of: device) == .appleAccount {
            if let id = await device.app?.credentials?.supportId { byAccount[device.account, default: []].insert(id) }
        }
        let accountUsers = try await serverStore.users(
            environment: environment, supportIdPrefix: nil, limit: 100, offset: 0
        ).filter { $0.appleAccount != nil }
        guard byAccount.values.allSatisfy({ $0.count == 1 }), accountUsers.count == byAccount.count else {
            throw Broken(description: "Apple accounts and users do not match one to one: \(byAccount)")
        }
        note("settled: every promise holds")
    }

    /// The dashboard counts the server's own environment's purchases; on a Production server, the reviewer's
    /// sandbox purchases are counted apart and left out.
    func checkFigures() async throws {
        var own = 0
        var other = 0
        for user in try await serverStore.users(environment: environment, supportIdPrefix: nil, limit: 100, offset: 0) {
            for receipt in try await serverStore.receipts(owner: user.id, environment: environment)
            where receipt.deliveredAt != nil {
                if receipt.transaction.environment == environment { own += 1 } else { other += 1 }
            }
        }
        let figures = try await serverStore.dashboard(environment: environment, days: 30, now: clock.now())
        guard figures.purchases == own, figures.otherEnvironmentPurchases == other else {
            throw Broken(
                description: "the dashboard counts \(figures.purchases) purchases and "
                    + "\(figures.otherEnvironmentPurchases) apart; the receipts say \(own) and \(other)")
        }
        note("figures: \(own) purchases, \(other) from the reviewer's sandbox")
    }

    /// Apple's transactions of an account that belong to a user: those bought with the user's account token,
    /// and those without one (bought outside the app) that the user presented first.
    func transactions(of user: User, account: String) async throws -> [StoreTransaction] {
        var owned: [StoreTransaction] = []
        for transaction in await apple.accountTransactions(account: account) {
            if let token = transaction.appAccountToken {
                if token == user.appAccountToken { owned.append(transaction) }
            } else if try await serverStore.receipt(transactionId: transaction.id, environment: environment)?.owner
                == user.id
            {
                owned.append(transaction)
            }
        }
        return owned
    }

    /// Everything Apple charged the account reaches the server; what the user bought is delivered once on the
    /// ledger that owns the balance, and what Apple refunded is taken back there; a device wallet's ledger keeps
    /// nothing another user bought.
    func checkDelivered(_ device: Device, app: CofferSDK, serverUser: User, owned: [StoreTransaction]) async throws {
        let receipts: [Receipt]
        switch wallet {
        case .device:
            // A reinstall starts a new local ledger from the backup; only what this install saw is on it.
            guard let local = try? await app.localUser() else { return }
            receipts = try await app.ledger.receipts(owner: local.id, environment: environment)
        case .server:
            receipts = try await serverStore.receipts(owner: serverUser.id, environment: environment)
        }
        let byId = Dictionary(receipts.map { ($0.transaction.transactionId, $0) }) { first, _ in first }
        // Every transaction reaches the server (the device wallet's outbox, or the server wallet's delivery).
        for transaction in await apple.accountTransactions(account: device.account) where !transaction.isFamilyShared {
            guard try await serverStore.receipt(transactionId: transaction.id, environment: environment) != nil else {
                throw Broken(description: "\(device.name): the server never heard of \(transaction.id)")
            }
        }
        for transaction in owned where !transaction.isFamilyShared {
            let holder = try await serverStore.receipt(transactionId: transaction.id, environment: environment)?.owner
            guard holder == serverUser.id else {
                throw Broken(description: "\(device.name): the server holds \(transaction.id) for another user")
            }
        }
        let ownedIds = Set(owned.map(\.id))
        if wallet == .device {
            for receipt in receipts where !ownedIds.contains(receipt.transaction.transactionId) && !receipt.isRevoked {
                throw Broken(
                    description: "\(device.name): \(receipt.transaction.transactionId), another user's, is delivered "
                        + "here too")
            }
        }
        for transaction in owned where !transaction.isFamilyShared {
            // A reinstalled app's new ledger starts from the backup, without what the old install delivered.
            if wallet == .device, device.beforeReinstall.contains(transaction.id) { continue }
            guard let receipt = byId[transaction.id] else {
                throw Broken(
                    description: "\(device.name): \(transaction.productId) \(transaction.id) was never delivered")
            }
            let refunded = transaction.revocationDate != nil
            guard receipt.isRevoked == refunded else {
                throw Broken(
                    description: "\(device.name): \(transaction.id) is \(refunded ? "refunded" : "paid") at Apple but "
                        + "\(receipt.isRevoked ? "taken back" : "not taken back") here")
            }
            if !refunded, receipt.deliveredAt == nil {
                throw Broken(description: "\(device.name): \(transaction.id) is paid but not delivered")
            }
            // A pack's gems were delivered with its credits, in the same commit, and taken back with them.
            guard transaction.productId == Self.credits else { continue }
            let gems =
                wallet == .device
                ? try await app.ledger.receipt(
                    transactionId: transaction.id, environment: environment, currency: Self.gems)
                : try await serverStore.receipt(
                    transactionId: transaction.id, environment: environment, currency: Self.gems)
            guard let gems, gems.isRevoked == receipt.isRevoked,
                (gems.deliveredAt == nil) == (receipt.deliveredAt == nil)
            else {
                throw Broken(
                    description: "\(device.name): the gems of \(transaction.id) are not its credits' twin: "
                        + "\(String(describing: gems)) beside \(receipt)")
            }
        }
        // On the server, each receipt and entry is marked with the environment of the account's data: a
        // reviewer's Sandbox, everyone else's the server's.
        let marked: CofferCore.AppStoreEnvironment =
            device.account == Self.reviewer && environment == .production ? .sandbox : environment
        for receipt in try await serverStore.receipts(owner: serverUser.id, environment: environment)
        where receipt.transaction.environment != marked {
            throw Broken(
                description: "\(device.name): \(receipt.transaction.transactionId) is marked "
                    + "\(receipt.transaction.environment?.rawValue ?? "nothing"), not \(marked.rawValue)")
        }
        for entry in try await serverStore.entries(owner: serverUser.id, environment: environment)
        where entry.transactionId != nil && entry.dataEnvironment != marked {
            throw Broken(description: "\(device.name): entry \(entry.key) is not marked \(marked.rawValue)")
        }
    }
}
