import CofferCore
import CofferStore
import CofferTestSupport
import Foundation
import Testing

/// The ``UserStore`` contract every engine keeps (``StoreEngine``): the customers: users, tokens, Apple accounts, imports, push tokens, milestones, merges, deletions and Verify Purchases reports.
@Suite("UserStore contract")
struct UserStoreContractTests {
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
        // Several at once, in one read: those there are (600: more than one statement's worth on SQLite).
        var many = [alice]
        for index in 0..<600 {
            let user = Make.user(String(format: "_b%011x", index))
            try await store.createUser(user)
            many.append(user)
        }
        let asked = Set(many.map(\.id) + [UUID()])
        #expect(Set(try await store.users(ids: asked).map(\.id)) == Set(many.map(\.id)))
        #expect(try await store.users(ids: []).isEmpty)
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
                from: dave.id, into: alice.id, environment: .sandbox, movesBackup: true,
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
                from: anonymous.id, into: account.id, environment: .sandbox,
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
                    from: anonymous.id, into: account.id, environment: .sandbox,
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
        "deleting a customer: tokens, devices, backups, the Apple account and reasons go; the ledger stays and adds up",
        arguments: StoreEngine.allCases)
    func deleteUser(engine: StoreEngine) async throws {
        let store = try await engine.makeStore()
        var alice = Make.user("_aaaaaaaaaaa1")
        alice.appleAccount = AppleAccount(appTransactionId: "705000000000001", environment: .sandbox)
        let install = Make.user("_bbbbbbbbbbb2")
        let carol = Make.user("_ccccccccccc3")
        for user in [alice, install, carol] { try await store.createUser(user) }
        try await store.addToken(tokenHash: "alice-phone", owner: alice.id, at: Make.start)
        _ = try await store.mergeUser(
            UserMerge(
                from: install.id, into: alice.id, environment: .sandbox,
                movesBackup: false, at: Make.start))
        _ = try await store.apply(Make.purchase("t1", for: alice))
        _ = try await store.apply(Make.purchase("lifetime", for: alice, credits: 0))
        _ = try await store.apply(
            LedgerRequest(owner: alice.id, environment: .sandbox, event: .spend(key: "k1", amount: 300), at: Make.start)
        )
        try await store.recordAudit(
            AuditEvent(
                environment: .sandbox, actor: "ada", action: "grant.create", subject: alice.supportId.rawValue,
                after: #"{"credits":50,"reason":"Ticket 7, alice@example.com"}"#, at: Make.start))
        let claimed = Grant(
            environment: .sandbox, recipient: alice.id, credits: 50, reason: "Ticket 7, alice@example.com",
            createdBy: "ada", createdAt: Make.start)
        try await store.createGrant(claimed)
        _ = try await store.claimGrant(
            id: claimed.id, recipient: alice.id, environment: .sandbox, crediting: .collect, at: Make.start)
        let pending = Grant(
            environment: .sandbox, recipient: alice.id, credits: 70, reason: "Ticket 8", createdBy: "ada",
            createdAt: Make.start)
        try await store.createGrant(pending)
        try await store.savePushToken(
            PushToken(token: "aa", owner: alice.id, environment: .sandbox, gateway: .sandbox, updatedAt: Make.start))
        _ = try await store.saveBackup(
            owner: alice.id, environment: .sandbox, value: 150, precondition: .absent,
            writer: .device("Alice's iPhone"), at: Make.start)
        try await store.saveVerifyReport(
            VerifyReport(owner: alice.id, environment: .sandbox, reportedAt: Make.start, items: []))
        try await store.createGrant(
            Grant(
                environment: .sandbox, recipient: carol.id, credits: 5, reason: "Carol's", createdBy: "ada",
                createdAt: Make.start))

        let at = Make.start.addingTimeInterval(60)
        let result = try await store.deleteUser(
            UserDeletion(user: alice.id, environment: .sandbox, actor: "ada", at: at))
        #expect(result == UserDeletionResult(closed: Wallet(balance: 150, deficit: 0), users: 2, cancelledGrants: 1))
        #expect(try await store.wallet(owner: alice.id, environment: .sandbox) == .empty)
        for hash in [alice.tokenHash, install.tokenHash, "alice-phone"] {
            #expect(try await store.user(tokenHash: hash) == nil)
        }
        #expect(try await store.user(appAccountToken: alice.appAccountToken, environment: .sandbox) == nil)
        #expect(try await store.user(appAccountToken: install.appAccountToken, environment: .sandbox) == nil)
        #expect(try await store.user(appleAccount: try #require(alice.appleAccount), environment: .sandbox) == nil)
        let deleted = try #require(try await store.user(id: alice.id))
        #expect(deleted.deletedAt == at && deleted.appleAccount == nil && deleted.supportId == alice.supportId)
        #expect(try await store.user(id: install.id)?.deletedAt == at)
        #expect(try await store.pushTokens(owner: alice.id, environment: .sandbox).isEmpty)
        #expect(try await store.backup(owner: alice.id, environment: .sandbox) == nil)
        #expect(try await store.backupHistory(owner: alice.id, environment: .sandbox, limit: 10).isEmpty)
        #expect(try await store.verifyReport(owner: alice.id, environment: .sandbox) == nil)
        let grants = try await store.grants(environment: .sandbox, recipient: alice.id, status: nil, limit: 10)
        #expect(grants.allSatisfy { $0.reason == UserDeletion.removedReason })
        #expect(grants.first { $0.id == pending.id }?.status == .cancelled)
        #expect(grants.first { $0.id == pending.id }?.cancelledBy == "ada")
        #expect(grants.first { $0.id == claimed.id }?.status == .claimed)
        let carols = try await store.grants(environment: .sandbox, recipient: carol.id, status: nil, limit: 10)
        #expect(carols.map(\.reason) == ["Carol's"])
        // The entries stay, anonymised, and still sum to the wallet; the receipt keeps the transaction once.
        let entries = try await store.entries(owner: alice.id, environment: .sandbox)
        #expect(entries.map(\.key.kind) == [.merge, .purchase, .purchase, .spend, .grant, .adjustment])
        #expect(entries.last?.key.id == UserDeletion.closingId)
        #expect(
            entries.compactMap(\.reason) == [
                "merged from another user", UserDeletion.removedReason, UserDeletion.closingReason,
            ])
        #expect(LedgerAudit.discrepancies(entries: entries, wallet: .empty).isEmpty)
        #expect(try await store.receipt(transactionId: "t1", environment: .sandbox)?.owner == alice.id)
        // What delivered no credits is Apple's to give again: the customer's next account restores it.
        #expect(try await store.receipt(transactionId: "lifetime", environment: .sandbox) == nil)
        let next = Make.user("_ddddddddddd4")
        try await store.createUser(next)
        #expect(try await store.apply(Make.purchase("lifetime", for: next, credits: 0)).outcome == .applied)
        // The audit log keeps the action, not the reason support wrote.
        let audit = try await store.auditEvents(environment: .sandbox, subject: alice.supportId.rawValue, limit: 10)
        let after = try #require(audit.first?.after)
        let fields = try JSONSerialization.jsonObject(with: Data(after.utf8)) as? [String: Any]
        #expect(audit.count == 1 && fields?["reason"] as? String == UserDeletion.removedReason)
        #expect(fields?["credits"] as? Int == 50)
        // Nothing personal is written for the record again, and nothing signs in as it.
        await #expect(throws: StoreError.self) { try await store.addToken(tokenHash: "new", owner: alice.id, at: at) }
        await #expect(throws: StoreError.self) {
            try await store.savePushToken(
                PushToken(token: "bb", owner: alice.id, environment: .sandbox, gateway: .sandbox, updatedAt: at))
        }
        await #expect(throws: StoreError.self) {
            try await store.recordMilestone(owner: alice.id, name: "loyalty:pro", at: at)
        }
        await #expect(throws: StoreError.self) {
            try await store.saveBackup(
                owner: alice.id, environment: .sandbox, value: 1, precondition: .absent, writer: .device("x"), at: at)
        }
        await #expect(throws: StoreError.self) {
            try await store.saveVerifyReport(
                VerifyReport(owner: alice.id, environment: .sandbox, reportedAt: at, items: []))
        }
        await #expect(throws: StoreError.self) {
            try await store.mergeUser(
                UserMerge(
                    from: next.id, into: alice.id, environment: .sandbox,
                    movesBackup: false, at: at))
        }
        // A refund Apple sends later is still taken back from the record, as a deficit.
        let refund = try await store.apply(
            LedgerRequest(
                owner: alice.id, environment: .sandbox, event: .revocation(Make.fact("t1", revoked: true)), at: at))
        #expect(refund.wallet == Wallet(balance: 0, deficit: 400))

        await #expect(throws: StoreError.self) {
            try await store.deleteUser(UserDeletion(user: alice.id, environment: .sandbox, actor: "ada", at: at))
        }
        await #expect(throws: StoreError.notFound("user")) {
            try await store.deleteUser(UserDeletion(user: carol.id, environment: .production, actor: "ada", at: at))
        }
        #expect(try await store.user(id: carol.id)?.deletedAt == nil)
    }

    @Test(
        "a Verify Purchases report is kept per user, the newest replacing the one before",
        arguments: StoreEngine.allCases)
    func verifyReports(engine: StoreEngine) async throws {
        let store = try await engine.makeStore()
        let alice = Make.user("_aaaaaaaaaaa1")
        try await store.createUser(alice)
        let item = ReconciliationItem(
            transaction: DeviceTransaction(transactionId: "t1", productId: "p", isFinished: true, isVerified: false),
            verdict: .couldNotBeVerified)
        try await store.saveVerifyReport(
            VerifyReport(owner: alice.id, environment: .sandbox, reportedAt: Make.start, items: [item, item]))
        let later = VerifyReport(
            owner: alice.id, environment: .sandbox, reportedAt: Make.start.addingTimeInterval(1), items: [item])
        try await store.saveVerifyReport(later)
        #expect(try await store.verifyReport(owner: alice.id, environment: .sandbox) == later)
        #expect(try await store.verifyReport(owner: alice.id, environment: .production) == nil)
        await #expect(throws: StoreError.notFound("user \(alice.id)")) {
            try await store.saveVerifyReport(
                VerifyReport(owner: alice.id, environment: .production, reportedAt: Make.start, items: []))
        }
    }
}
