import CofferCore
import CofferStore
import CofferStorePostgres
import CofferTestSupport
import Foundation
import Testing

/// The contract every ``CofferStore`` engine keeps. Run against each engine in ``StoreEngine``.
@Suite("Store contract")
struct StoreContractTests {
    @Test(
        "users are found by id, Support ID, token hash and appAccountToken, within their environment",
        arguments: StoreEngine.allCases)
    func users(engine: StoreEngine) async throws {
        let store = try await engine.makeStore()
        let alice = Make.user("_aaaaaaaaaaa1")
        try await store.createUser(alice)
        #expect(try await store.user(id: alice.id) == alice)
        #expect(try await store.user(supportId: alice.supportId, environment: .sandbox) == alice)
        #expect(try await store.user(supportId: alice.supportId, environment: .production) == nil)
        #expect(try await store.user(tokenHash: alice.tokenHash) == alice)
        #expect(try await store.user(appAccountToken: alice.appAccountToken, environment: .sandbox) == alice)
        #expect(try await store.user(appAccountToken: alice.appAccountToken, environment: .production) == nil)
        #expect(try await store.user(id: UUID()) == nil)
    }

    @Test(
        "an Apple account is linked to a user without one, once; never to a second user, a merged or deleted one",
        arguments: StoreEngine.allCases)
    func linkAppleAccount(engine: StoreEngine) async throws {
        let store = try await engine.makeStore()
        let alice = Make.user("_aaaaaaaaaaa1")
        let bob = Make.user("_bbbbbbbbbbb2")
        try await store.createUser(alice)
        try await store.createUser(bob)
        let account = AppleAccount(appTransactionId: "704289572311", environment: .sandbox)
        #expect(try await store.linkAppleAccount(account, to: alice.id))
        #expect(try await store.user(appleAccount: account, environment: .sandbox)?.id == alice.id)
        #expect(try await store.user(id: alice.id)?.appleAccount == account)
        // Alice is that account's now: not again, not to another account; Bob cannot be the same account.
        #expect(try await store.linkAppleAccount(account, to: alice.id) == false)
        let other = AppleAccount(appTransactionId: "704289572399", environment: .sandbox)
        #expect(try await store.linkAppleAccount(other, to: alice.id) == false)
        await #expect(throws: StoreError.self) { _ = try await store.linkAppleAccount(account, to: bob.id) }
        #expect(try await store.user(id: bob.id)?.appleAccount == nil)
        #expect(try await store.linkAppleAccount(other, to: UUID()) == false)
        // A customer merged into another, or deleted at their request, is never linked.
        let dave = Make.user("_ddddddddddd4")
        try await store.createUser(dave)
        _ = try await store.mergeUser(
            UserMerge(
                from: dave.id, fromSupportId: dave.supportId, into: alice.id, environment: .sandbox, movesBackup: true,
                at: Make.start))
        #expect(try await store.linkAppleAccount(other, to: dave.id) == false)
        let carl = Make.user("_ccccccccccc3")
        try await store.createUser(carl)
        _ = try await store.deleteUser(UserDeletion(user: carl.id, environment: .sandbox, actor: "ada", at: Make.start))
        #expect(try await store.linkAppleAccount(other, to: carl.id) == false)
        #expect(try await store.linkAppleAccount(other, to: bob.id))
    }

    @Test(
        "imported customers: recorded once per source and id in an environment; claimed once, again only by its key",
        arguments: StoreEngine.allCases)
    func importedCustomers(engine: StoreEngine) async throws {
        let store = try await engine.makeStore()
        let at = Date(timeIntervalSince1970: 1_767_225_600)
        let first = ImportedCustomer(
            environment: .sandbox, source: "cloudkit", externalId: "_0123abcd", user: UUID(), importedAt: at)
        #expect(try await store.recordImport(first) == first)
        // Run again (another user id chosen): the first one is on file and answered.
        var again = first
        again.user = UUID()
        again.importedAt = at.addingTimeInterval(60)
        #expect(try await store.recordImport(again) == first)
        // Another environment, or another source, is another customer.
        var production = again
        production.environment = .production
        #expect(try await store.recordImport(production) == production)
        var other = again
        other.source = "other"
        #expect(try await store.recordImport(other) == other)
        #expect(
            try await store.importedCustomer(source: "cloudkit", externalId: "_0123abcd", environment: .sandbox)
                == first)
        #expect(
            try await store.importedCustomer(source: "cloudkit", externalId: "_unknown", environment: .sandbox) == nil)

        // Claimed once: the first key keeps it; the same key claims again (a lost answer); another key cannot.
        let claimedAt = at.addingTimeInterval(120)
        let claimed = try #require(
            try await store.claimImport(
                source: "cloudkit", externalId: "_0123abcd", environment: .sandbox, keyHash: "key-1", at: claimedAt))
        #expect(claimed.user == first.user && claimed.claimKeyHash == "key-1" && claimed.claimedAt == claimedAt)
        let repeated = try await store.claimImport(
            source: "cloudkit", externalId: "_0123abcd", environment: .sandbox, keyHash: "key-1",
            at: claimedAt.addingTimeInterval(60))
        #expect(repeated == claimed)
        #expect(
            try await store.claimImport(
                source: "cloudkit", externalId: "_0123abcd", environment: .sandbox, keyHash: "key-2", at: claimedAt)
                == nil)
        #expect(
            try await store.claimImport(
                source: "cloudkit", externalId: "_unknown", environment: .sandbox, keyHash: "key-1", at: claimedAt)
                == nil)
        #expect(
            try await store.importedCustomer(source: "cloudkit", externalId: "_0123abcd", environment: .sandbox)
                == claimed)
        // The production customer of the same id is claimed apart.
        #expect(
            try await store.claimImport(
                source: "cloudkit", externalId: "_0123abcd", environment: .production, keyHash: "key-2", at: claimedAt)?
                .user == production.user)
    }

    @Test(
        "push tokens: registered per device, newest first, moved to the user who registers them last, forgotten",
        arguments: StoreEngine.allCases)
    func pushTokens(engine: StoreEngine) async throws {
        let store = try await engine.makeStore()
        let alice = Make.user("_aaaaaaaaaaa1")
        let bob = Make.user("_bbbbbbbbbbb2")
        try await store.createUser(alice)
        try await store.createUser(bob)
        let at = Date(timeIntervalSince1970: 1_767_225_600)
        let phone = PushToken(
            token: String(repeating: "ab", count: 32), owner: alice.id, environment: .sandbox, gateway: .production,
            updatedAt: at)
        var pad = phone
        pad.token = String(repeating: "cd", count: 32)
        pad.gateway = .sandbox
        pad.updatedAt = at.addingTimeInterval(60)
        try await store.savePushToken(phone)
        try await store.savePushToken(pad)
        try await store.savePushToken(phone)  // registering again changes nothing
        #expect(try await store.pushTokens(owner: alice.id, environment: .sandbox) == [pad, phone])
        #expect(try await store.pushTokens(owner: alice.id, environment: .production).isEmpty)
        // The pad now runs Bob's install: the token is his.
        var moved = pad
        moved.owner = bob.id
        moved.updatedAt = at.addingTimeInterval(120)
        try await store.savePushToken(moved)
        #expect(try await store.pushTokens(owner: alice.id, environment: .sandbox) == [phone])
        #expect(try await store.pushTokens(owner: bob.id, environment: .sandbox) == [moved])
        #expect(try await store.deletePushToken(moved.token, owner: alice.id) == false)  // Bob's now
        #expect(try await store.pushTokens(owner: bob.id, environment: .sandbox) == [moved])
        #expect(try await store.deletePushToken(phone.token, owner: alice.id))
        #expect(try await store.deletePushToken(phone.token, owner: alice.id) == false)
        #expect(try await store.pushTokens(owner: alice.id, environment: .sandbox).isEmpty)
        var stranger = phone
        stranger.owner = UUID()
        await #expect(throws: StoreError.self) { try await store.savePushToken(stranger) }
    }

    @Test(
        "a milestone is recorded once per user: the first asker hears it is the first", arguments: StoreEngine.allCases)
    func milestones(engine: StoreEngine) async throws {
        let store = try await engine.makeStore()
        let alice = Make.user("_aaaaaaaaaaa1")
        let bob = Make.user("_bbbbbbbbbbb2")
        try await store.createUser(alice)
        try await store.createUser(bob)
        let at = Date(timeIntervalSince1970: 1_767_225_600)
        #expect(try await store.recordMilestone(owner: alice.id, name: "loyalty:pro", at: at))
        #expect(try await store.recordMilestone(owner: alice.id, name: "loyalty:pro", at: at) == false)
        #expect(try await store.recordMilestone(owner: alice.id, name: "loyalty:gold", at: at))
        #expect(try await store.recordMilestone(owner: bob.id, name: "loyalty:pro", at: at))
        await #expect(throws: StoreError.self) {
            try await store.recordMilestone(owner: UUID(), name: "loyalty:pro", at: at)
        }
    }

    @Test("a taken Support ID, token or appAccountToken is refused", arguments: StoreEngine.allCases)
    func uniqueUsers(engine: StoreEngine) async throws {
        let store = try await engine.makeStore()
        let alice = Make.user("_aaaaaaaaaaa1")
        try await store.createUser(alice)
        var sameSupport = Make.user("_aaaaaaaaaaa1")
        await #expect(throws: StoreError.self) { try await store.createUser(sameSupport) }
        sameSupport.environment = .production
        try await store.createUser(sameSupport)
        var sameToken = Make.user("_bbbbbbbbbbb2")
        sameToken.tokenHash = alice.tokenHash
        await #expect(throws: StoreError.self) { try await store.createUser(sameToken) }
        var sameAccount = Make.user("_ccccccccccc3")
        sameAccount.appAccountToken = alice.appAccountToken
        await #expect(throws: StoreError.self) { try await store.createUser(sameAccount) }
        #expect(try await store.userCount(environment: .sandbox) == 1)
        #expect(try await store.userCount(environment: .production) == 1)
    }

    @Test(
        "users list newest first, by Support ID prefix (case-insensitive), with paging", arguments: StoreEngine.allCases
    )
    func listing(engine: StoreEngine) async throws {
        let store = try await engine.makeStore()
        let ids = ["_abc000000001", "_abc000000002", "_abd000000003", "_ffff00000004"]
        for (index, id) in ids.enumerated() {
            try await store.createUser(Make.user(id, createdAt: TimeInterval(index)))
        }
        try await store.createUser(Make.user("_abc000000009", in: .production))
        let all = try await store.users(environment: .sandbox, supportIdPrefix: nil, limit: 10, offset: 0)
        #expect(all.map(\.supportId.rawValue) == ids.reversed())
        let abc = try await store.users(environment: .sandbox, supportIdPrefix: "_ABC", limit: 10, offset: 0)
        #expect(abc.map(\.supportId.rawValue) == ["_abc000000002", "_abc000000001"])
        let page = try await store.users(environment: .sandbox, supportIdPrefix: "_ab", limit: 2, offset: 1)
        #expect(page.map(\.supportId.rawValue) == ["_abc000000002", "_abc000000001"])
        #expect(
            try await store.users(
                environment: .sandbox, supportIdPrefix: "'; DROP TABLE users; --", limit: 10, offset: 0
            ).isEmpty)
        #expect(try await store.users(environment: .sandbox, supportIdPrefix: "%", limit: 10, offset: 0).isEmpty)
        #expect(try await store.userCount(environment: .sandbox) == 4)
    }

    @Test(
        "a delivery and its receipt are stored together; the same transaction again is a duplicate",
        arguments: StoreEngine.allCases)
    func delivery(engine: StoreEngine) async throws {
        let store = try await engine.makeStore()
        let alice = Make.user("_aaaaaaaaaaa1")
        try await store.createUser(alice)
        let first = try await store.apply(Make.purchase("t1", for: alice))
        #expect(first.outcome == .applied)
        #expect(first.wallet == Wallet(balance: 400, deficit: 0))
        let second = try await store.apply(Make.purchase("t1", for: alice))
        #expect(second.outcome == .duplicate)
        #expect(second.entry?.key == IdempotencyKey(.purchase, "t1"))
        #expect(try await store.wallet(owner: alice.id, environment: .sandbox) == Wallet(balance: 400, deficit: 0))
        let entries = try await store.entries(owner: alice.id, environment: .sandbox)
        #expect(entries.count == 1)
        #expect(entries.first == first.entry)
        let receipt = try #require(try await store.receipt(transactionId: "t1", environment: .sandbox))
        #expect(receipt.owner == alice.id)
        #expect(receipt.transaction == Make.fact("t1"))
        #expect(receipt.deliveredCredits == 400)
        #expect(receipt.deliveredAt == Make.start)
        #expect(try await store.receipt(transactionId: "t1", environment: .production) == nil)
        #expect(try await store.receipts(owner: alice.id, environment: .sandbox) == [receipt])
    }

    @Test(
        "an Apple account is one user per environment; each device has a token of its own, revoked on its own",
        arguments: StoreEngine.allCases)
    func appleAccounts(engine: StoreEngine) async throws {
        let store = try await engine.makeStore()
        let account = AppleAccount(appTransactionId: "704000000000001", environment: .production)
        var alice = Make.user("_aaaaaaaaaaa1", in: .production)
        alice.appleAccount = account
        try await store.createUser(alice)
        #expect(try await store.user(appleAccount: account, environment: .production) == alice)
        #expect(try await store.user(id: alice.id)?.appleAccount == account)
        // Another user for the same account in the same environment is refused; the same id from App Review's
        // sandbox, or in the other ledger, is another account.
        var twin = Make.user("_bbbbbbbbbbb2", in: .production)
        twin.appleAccount = account
        await #expect(throws: StoreError.self) { try await store.createUser(twin) }
        twin.appleAccount = AppleAccount(appTransactionId: account.appTransactionId, environment: .sandbox)
        try await store.createUser(twin)
        #expect(
            try await store.user(
                appleAccount: AppleAccount(appTransactionId: account.appTransactionId, environment: .sandbox),
                environment: .production) == twin)
        #expect(try await store.user(appleAccount: account, environment: .sandbox) == nil)
        let anonymous = Make.user("_ccccccccccc3", in: .production)
        try await store.createUser(anonymous)
        #expect(try await store.user(id: anonymous.id)?.appleAccount == nil)

        // A second device's token, then a third: all valid together.
        try await store.addToken(tokenHash: "pad", owner: alice.id, at: Make.start)
        try await store.addToken(tokenHash: "mac", owner: alice.id, at: Make.start)
        for hash in [alice.tokenHash, "pad", "mac"] { #expect(try await store.user(tokenHash: hash)?.id == alice.id) }
        await #expect(throws: StoreError.self) {
            try await store.addToken(tokenHash: "pad", owner: twin.id, at: Make.start)
        }
        await #expect(throws: StoreError.self) {
            try await store.addToken(tokenHash: twin.tokenHash, owner: alice.id, at: Make.start)
        }
        await #expect(throws: StoreError.self) {
            try await store.addToken(tokenHash: "ghost", owner: UUID(), at: Make.start)
        }
        // Revoking one device leaves the others; the first token can be revoked too; twice is nothing.
        #expect(try await store.revokeToken(tokenHash: "pad", at: Make.start))
        #expect(try await store.revokeToken(tokenHash: "pad", at: Make.start) == false)
        #expect(try await store.user(tokenHash: "pad") == nil)
        #expect(try await store.user(tokenHash: "mac")?.id == alice.id)
        #expect(try await store.revokeToken(tokenHash: alice.tokenHash, at: Make.start))
        #expect(try await store.revokeToken(tokenHash: alice.tokenHash, at: Make.start) == false)
        #expect(try await store.user(tokenHash: alice.tokenHash) == nil)
        #expect(try await store.user(tokenHash: "mac")?.id == alice.id)
        #expect(try await store.revokeToken(tokenHash: "nobody", at: Make.start) == false)
        #expect(try await store.user(tokenHash: anonymous.tokenHash)?.id == anonymous.id)
    }

    @Test(
        "merging an anonymous user into an account user moves its wallet, receipts, grants and tokens once",
        arguments: StoreEngine.allCases, [false, true])
    func merge(engine: StoreEngine, movesBackup: Bool) async throws {
        let store = try await engine.makeStore()
        let anonymous = Make.user("_aaaaaaaaaaa1")
        var account = Make.user("_bbbbbbbbbbb2")
        account.appleAccount = AppleAccount(appTransactionId: "705000000000001", environment: .sandbox)
        try await store.createUser(anonymous)
        try await store.createUser(account)
        _ = try await store.apply(Make.purchase("t1", for: anonymous))
        _ = try await store.apply(
            LedgerRequest(
                owner: anonymous.id, environment: .sandbox, event: .spend(key: "k1", amount: 150), at: Make.start))
        _ = try await store.apply(Make.purchase("t2", for: account))
        let grant = Grant(
            environment: .sandbox, recipient: anonymous.id, credits: 7, reason: "ticket", createdBy: "ada",
            createdAt: Make.start)
        try await store.createGrant(grant)
        _ = try await store.saveBackup(
            owner: anonymous.id, environment: .sandbox, value: 90, precondition: .absent, writer: .device("phone"),
            at: Make.start)

        let result = try await store.mergeUser(
            UserMerge(
                from: anonymous.id, fromSupportId: anonymous.supportId, into: account.id, environment: .sandbox,
                movesBackup: movesBackup, movesTokens: true,
                at: Make.start))
        let moved: Int64 = movesBackup ? 90 : 250
        #expect(result.moved == Wallet(balance: moved, deficit: 0))
        #expect(result.wallet == Wallet(balance: 400 + moved, deficit: 0))
        #expect(result.receipts == 1 && result.grants == 1)
        #expect(try await store.wallet(owner: account.id, environment: .sandbox) == result.wallet)
        #expect(try await store.wallet(owner: anonymous.id, environment: .sandbox) == .empty)
        #expect(try await store.receipt(transactionId: "t1", environment: .sandbox)?.owner == account.id)
        #expect(try await store.grants(environment: .sandbox, recipient: account.id, status: nil, limit: 10).count == 1)
        // The install's token and appAccountToken are the account user's now; its own record says merged.
        #expect(try await store.user(tokenHash: anonymous.tokenHash)?.id == account.id)
        #expect(
            try await store.user(appAccountToken: anonymous.appAccountToken, environment: .sandbox)?.id == account.id)
        #expect(try await store.user(id: anonymous.id)?.mergedInto == account.id)
        #expect(try await store.users(mergedInto: account.id).map(\.id) == [anonymous.id])
        #expect(try await store.users(mergedInto: anonymous.id).isEmpty)
        let key = IdempotencyKey(.merge, anonymous.supportId.rawValue)
        for user in [anonymous, account] {
            let entries = try await store.entries(owner: user.id, environment: .sandbox)
            #expect(entries.last?.key == key)
            #expect(
                LedgerAudit.discrepancies(
                    entries: entries, wallet: try await store.wallet(owner: user.id, environment: .sandbox)
                ).isEmpty)
        }
        // Once: a second merge changes nothing.
        await #expect(throws: StoreError.self) {
            try await store.mergeUser(
                UserMerge(
                    from: anonymous.id, fromSupportId: anonymous.supportId, into: account.id, environment: .sandbox,
                    movesBackup: movesBackup,
                    at: Make.start))
        }
        #expect(try await store.wallet(owner: account.id, environment: .sandbox) == result.wallet)
        // Nothing lands on the merged user any more (a request that waited through the merge is refused).
        await #expect(throws: LedgerError.unknownUser(anonymous.id)) {
            try await store.apply(Make.purchase("t3", for: anonymous))
        }
        // A refund of the moved purchase is taken from the account user.
        let refund = try await store.apply(
            LedgerRequest(
                owner: account.id, environment: .sandbox, event: .revocation(Make.fact("t1", revoked: true)),
                at: Make.start))
        #expect(refund.wallet == Wallet(balance: moved, deficit: 0))
    }

    @Test(
        "a backup keeps its deficit with the balance; a write without one clears it", arguments: StoreEngine.allCases)
    func backupDeficit(engine: StoreEngine) async throws {
        let store = try await engine.makeStore()
        let alice = Make.user("_aaaaaaaaaaa1")
        try await store.createUser(alice)
        let first = try await store.saveBackup(
            owner: alice.id, environment: .sandbox, value: 0, deficit: 250, precondition: .absent,
            writer: .device("phone"), at: Make.start)
        guard case .saved(let record) = first else {
            Issue.record("not saved")
            return
        }
        #expect(record.deficit == 250)
        #expect(try await store.backup(owner: alice.id, environment: .sandbox)?.deficit == 250)
        _ = try await store.saveBackup(
            owner: alice.id, environment: .sandbox, value: 10, precondition: .version(record.version),
            writer: .device("phone"), at: Make.start)
        #expect(try await store.backup(owner: alice.id, environment: .sandbox)?.deficit == 0)
    }

    @Test(
        "App Review's sandbox purchase on a Production ledger stays marked Sandbox: receipt, entries, dashboard",
        arguments: StoreEngine.allCases)
    func dataEnvironment(engine: StoreEngine) async throws {
        let store = try await engine.makeStore()
        let reviewer = Make.user("_aaaaaaaaaaa1", in: .production)
        let customer = Make.user("_ccccccccccc2", in: .production)
        try await store.createUser(reviewer)
        try await store.createUser(customer)
        func fact(_ id: String, _ environment: AppStoreEnvironment?, revoked: Bool = false) -> TransactionFact {
            var fact = Make.fact(id, revoked: revoked)
            fact.environment = environment
            return fact
        }
        func request(_ event: LedgerEvent, for user: User) -> LedgerRequest {
            LedgerRequest(owner: user.id, environment: .production, event: event, at: Make.start)
        }
        let reviewed = try await store.apply(request(.purchase(fact("s1", .sandbox), credits: 400), for: reviewer))
        #expect(reviewed.outcome == .applied)
        #expect(reviewed.entry?.dataEnvironment == .sandbox)
        _ = try await store.apply(request(.purchase(fact("p1", .production), credits: 400), for: customer))
        _ = try await store.apply(request(.purchase(fact("u1", nil), credits: 400), for: customer))
        // Refunded in the sandbox: the revocation is marked too, and the receipt keeps its mark.
        _ = try await store.apply(request(.revocation(fact("s1", .sandbox, revoked: true)), for: reviewer))
        let receipt = try #require(try await store.receipt(transactionId: "s1", environment: .production))
        #expect(receipt.transaction.environment == .sandbox)
        #expect(receipt.status == .revoked)
        #expect(
            try await store.entries(owner: reviewer.id, environment: .production).map(\.dataEnvironment) == [
                .sandbox, .sandbox,
            ])
        #expect(
            try await store.receipt(transactionId: "p1", environment: .production)?.transaction.environment
                == .production)
        #expect(try await store.receipt(transactionId: "u1", environment: .production)?.transaction.environment == nil)
        // Data from the other environment under a transaction id on record is another transaction: refused.
        await #expect(throws: LedgerError.transactionMismatch(transactionId: "p1")) {
            try await store.apply(request(.revocation(fact("p1", .sandbox, revoked: true)), for: customer))
        }
        #expect(try await store.wallet(owner: customer.id, environment: .production) == Wallet(balance: 800))
        // Production's figures leave the reviewer's purchase and refund out, and count it apart.
        let figures = try await store.dashboard(environment: .production, days: 30, now: Make.start)
        #expect(figures.purchases == 2)
        #expect(figures.refunds == 0)
        #expect(figures.otherEnvironmentPurchases == 1)
        #expect(figures.days.reduce(0) { $0 + $1.purchases } == 2)
        #expect(figures.days.reduce(0) { $0 + $1.refunds } == 0)
        // A reviewer registered with a sandbox AppTransaction is not one of Production's users.
        var tester = Make.user("_ddddddddddd4", in: .production)
        tester.appleAccount = AppleAccount(appTransactionId: "706000000000001", environment: .sandbox)
        try await store.createUser(tester)
        #expect(try await store.dashboard(environment: .production, days: 30, now: Make.start).users == 2)
    }

    @Test(
        "what the customer paid and Apple's refund reason survive storage, one by one and in a batch",
        arguments: StoreEngine.allCases)
    func payments(engine: StoreEngine) async throws {
        let store = try await engine.makeStore()
        let alice = Make.user("_aaaaaaaaaaa1")
        try await store.createUser(alice)
        func paid(_ id: String) -> LedgerRequest {
            var fact = Make.fact(id)
            fact.price = 4_990
            fact.currency = "EUR"
            fact.storefront = "FRA"
            return LedgerRequest(
                owner: alice.id, environment: .sandbox, event: .purchase(fact, credits: 400), at: Make.start)
        }
        let batch = try await store.apply([paid("t1"), paid("t2")])
        #expect(try batch.map { try $0.get().outcome } == [.applied, .applied])
        _ = try await store.apply(paid("t3"))
        for id in ["t1", "t2", "t3"] {
            let fact = try #require(try await store.receipt(transactionId: id, environment: .sandbox)).transaction
            #expect(fact.price == 4_990 && fact.currency == "EUR" && fact.storefront == "FRA")
            #expect(fact.revocationReason == nil)
        }
        // A refund whose data has no price (a notification without it) keeps the price and adds Apple's reason.
        var refund = Make.fact("t2", revoked: true)
        refund.revocationReason = 1
        _ = try await store.apply(
            LedgerRequest(owner: alice.id, environment: .sandbox, event: .revocation(refund), at: Make.start))
        let refunded = try #require(try await store.receipt(transactionId: "t2", environment: .sandbox))
        #expect(refunded.status == .revoked)
        #expect(refunded.transaction.price == 4_990 && refunded.transaction.currency == "EUR")
        #expect(refunded.transaction.revocationReason == 1)
        #expect(
            try await store.receipts(owner: alice.id, environment: .sandbox).map(\.transaction.price) == [
                4_990, 4_990, 4_990,
            ])
    }
}
