import CofferCore
import CofferStore
import CofferStorePostgres
import CofferTestSupport
import Foundation
import Testing

/// The store contract, continued: deletion, reports, refunds, batches, backups, grants, audit, notifications,
/// renewals.
extension StoreContractTests {
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
                from: install.id, fromSupportId: install.supportId, into: alice.id, environment: .sandbox,
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
                    from: next.id, fromSupportId: next.supportId, into: alice.id, environment: .sandbox,
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

    @Test("refunds, deficits and reversals survive storage", arguments: StoreEngine.allCases)
    func refunds(engine: StoreEngine) async throws {
        let store = try await engine.makeStore()
        let alice = Make.user("_aaaaaaaaaaa1")
        try await store.createUser(alice)
        _ = try await store.apply(Make.purchase("t1", for: alice))
        _ = try await store.apply(
            LedgerRequest(owner: alice.id, environment: .sandbox, event: .spend(key: "k1", amount: 300), at: Make.start)
        )
        let revoked = try await store.apply(
            LedgerRequest(
                owner: alice.id, environment: .sandbox, event: .revocation(Make.fact("t1", revoked: true)),
                at: Make.start))
        #expect(revoked.wallet == Wallet(balance: 0, deficit: 300))
        let receipt = try #require(try await store.receipt(transactionId: "t1", environment: .sandbox))
        #expect(receipt.status == .revoked)
        #expect(receipt.takenFromBalance == 100 && receipt.addedToDeficit == 300)
        #expect(receipt.revokedAt == Make.start.addingTimeInterval(60))
        let replay = try await store.apply(Make.purchase("t1", for: alice))
        #expect(replay.outcome == .revoked)
        _ = try await store.apply(
            LedgerRequest(
                owner: alice.id, environment: .sandbox, event: .reversal(Make.fact("t1"), at: nil), at: Make.start))
        #expect(try await store.wallet(owner: alice.id, environment: .sandbox) == Wallet(balance: 100, deficit: 0))
        #expect(try await store.receipt(transactionId: "t1", environment: .sandbox)?.status == .restored)
        let entries = try await store.entries(owner: alice.id, environment: .sandbox)
        #expect(entries.map(\.key.rawValue) == ["purchase:t1", "spend:k1", "revocation:t1", "reversal:t1"])
        let mailbox = try await store.entries(
            owner: alice.id, environment: .sandbox, kinds: [.revocation, .reversal, .adjustment])
        #expect(mailbox.map(\.key.rawValue) == ["revocation:t1", "reversal:t1"])
        #expect(try await store.entries(owner: alice.id, environment: .sandbox, kinds: []).isEmpty)
        #expect(try await store.entries(owner: alice.id, environment: .production, kinds: [.purchase]).isEmpty)
        #expect(
            LedgerAudit.discrepancies(
                entries: entries, wallet: try await store.wallet(owner: alice.id, environment: .sandbox)
            ).isEmpty)
    }

    @Test(
        "refund, reversal, refund again in every arrival order: refunded once more by Apple's dates, on every engine",
        arguments: StoreEngine.allCases, [[0, 1, 2], [0, 2, 1], [1, 0, 2], [1, 2, 0], [2, 0, 1], [2, 1, 0]])
    func refundReversalRefund(engine: StoreEngine, order: [Int]) async throws {
        let store = try await engine.makeStore()
        let alice = Make.user("_aaaaaaaaaaa1")
        try await store.createUser(alice)
        _ = try await store.apply(Make.purchase("t1", for: alice))
        let day = { (n: Double) in Make.start.addingTimeInterval(n * 86_400) }
        var firstRefund = Make.fact("t1")
        firstRefund.revocationDate = day(1)
        var secondRefund = Make.fact("t1")
        secondRefund.revocationDate = day(3)
        let events: [LedgerEvent] = [
            .revocation(firstRefund), .reversal(Make.fact("t1"), at: day(2)), .revocation(secondRefund),
        ]
        for index in order {
            for _ in 0..<2 {
                _ = try await store.apply(
                    LedgerRequest(owner: alice.id, environment: .sandbox, event: events[index], at: day(10)))
            }
        }
        let receipt = try #require(try await store.receipt(transactionId: "t1", environment: .sandbox))
        #expect(receipt.status == .revoked, "\(order)")
        #expect(try await store.wallet(owner: alice.id, environment: .sandbox) == Wallet(balance: 0, deficit: 0))
        #expect(try await store.dashboard(environment: .sandbox, days: 30, now: day(10)).refunds == 1)
        let entries = try await store.entries(owner: alice.id, environment: .sandbox)
        #expect(entries.reduce(0) { $0 + $1.amount } == 0)
        #expect(
            LedgerAudit.discrepancies(
                entries: entries, wallet: try await store.wallet(owner: alice.id, environment: .sandbox)
            ).isEmpty)
    }

    @Test(
        "a batch commits together; a refused request changes nothing while the rest apply",
        arguments: StoreEngine.allCases)
    func batches(engine: StoreEngine) async throws {
        let store = try await engine.makeStore()
        let alice = Make.user("_aaaaaaaaaaa1")
        let bob = Make.user("_bbbbbbbbbbb2")
        try await store.createUser(alice)
        try await store.createUser(bob)
        let results = try await store.apply([
            Make.purchase("t1", for: alice),
            LedgerRequest(
                owner: alice.id, environment: .sandbox, event: .spend(key: "big", amount: 10_000), at: Make.start),
            Make.purchase("t1", for: bob),
            Make.purchase("t2", for: bob),
            Make.purchase("t1", for: alice),
            LedgerRequest(
                owner: alice.id, environment: .production, event: .grant(id: "g", credits: 5, reason: ""),
                at: Make.start),
        ])
        #expect(try results[0].get().outcome == .applied)
        #expect(throws: LedgerError.insufficientBalance(balance: 400, requested: 10_000)) { try results[1].get() }
        #expect(throws: LedgerError.wrongUser(transactionId: "t1")) { try results[2].get() }
        #expect(try results[3].get().outcome == .applied)
        #expect(try results[4].get().outcome == .duplicate)
        #expect(throws: LedgerError.unknownUser(alice.id)) { try results[5].get() }
        #expect(try await store.wallet(owner: alice.id, environment: .sandbox).balance == 400)
        #expect(try await store.wallet(owner: bob.id, environment: .sandbox).balance == 400)
        #expect(try await store.entries(owner: alice.id, environment: .sandbox).count == 1)
        #expect(try await store.wallet(owner: alice.id, environment: .production) == .empty)
        #expect(try await store.entries(owner: alice.id, environment: .production).isEmpty)
    }

    @Test("50 concurrent deliveries of one transaction credit once", arguments: StoreEngine.allCases)
    func concurrentDeliveries(engine: StoreEngine) async throws {
        let store = try await engine.makeStore()
        let alice = Make.user("_aaaaaaaaaaa1")
        try await store.createUser(alice)
        let outcomes = try await withThrowingTaskGroup(of: LedgerOutcome.self) { group in
            for _ in 0..<50 { group.addTask { try await store.apply(Make.purchase("t1", for: alice)).outcome } }
            return try await group.reduce(into: [LedgerOutcome]()) { $0.append($1) }
        }
        #expect(outcomes.filter { $0 == .applied }.count == 1)
        #expect(outcomes.filter { $0 == .duplicate }.count == 49)
        #expect(try await store.wallet(owner: alice.id, environment: .sandbox).balance == 400)
        #expect(try await store.entries(owner: alice.id, environment: .sandbox).count == 1)
    }

    @Test(
        "backups: first write, If-Match versions, conflicts with the current record, admin overwrite",
        arguments: StoreEngine.allCases)
    func backups(engine: StoreEngine) async throws {
        let store = try await engine.makeStore()
        let alice = Make.user("_aaaaaaaaaaa1")
        try await store.createUser(alice)
        #expect(try await store.backup(owner: alice.id, environment: .sandbox) == nil)
        let first = try await store.saveBackup(
            owner: alice.id, environment: .sandbox, value: 5_000, precondition: .absent, writer: .device("phone"),
            at: Make.start)
        let v1 = BackupRecord(value: 5_000, lastUpdated: Make.start, version: 1, writer: .device("phone"))
        #expect(first == .saved(v1))
        let again = try await store.saveBackup(
            owner: alice.id, environment: .sandbox, value: 1, precondition: .absent, writer: .device("phone"),
            at: Make.start)
        #expect(again == .conflict(current: v1))
        let later = Make.start.addingTimeInterval(300)
        let second = try await store.saveBackup(
            owner: alice.id, environment: .sandbox, value: 6_000, precondition: .version(1), writer: .device("tablet"),
            at: later)
        let v2 = BackupRecord(value: 6_000, lastUpdated: later, version: 2, writer: .device("tablet"))
        #expect(second == .saved(v2))
        let stale = try await store.saveBackup(
            owner: alice.id, environment: .sandbox, value: 7_000, precondition: .version(1), writer: .device("phone"),
            at: later)
        #expect(stale == .conflict(current: v2))
        let admin = try await store.saveBackup(
            owner: alice.id, environment: .sandbox, value: 9_000, precondition: .overwrite, writer: .admin("support"),
            at: later)
        #expect(admin == .saved(BackupRecord(value: 9_000, lastUpdated: later, version: 3, writer: .admin("support"))))
        #expect(try await store.backup(owner: alice.id, environment: .sandbox)?.value == 9_000)
        #expect(try await store.backup(owner: alice.id, environment: .production) == nil)
        await #expect(throws: StoreError.self) {
            try await store.saveBackup(
                owner: alice.id, environment: .production, value: 1, precondition: .overwrite, writer: .admin("x"),
                at: later)
        }
    }

    @Test(
        "grants: listed by status and recipient, claimed once by their recipient only", arguments: StoreEngine.allCases)
    func grants(engine: StoreEngine) async throws {
        let store = try await engine.makeStore()
        let alice = Make.user("_aaaaaaaaaaa1")
        let bob = Make.user("_bbbbbbbbbbb2")
        try await store.createUser(alice)
        try await store.createUser(bob)
        let grant = Grant(
            environment: .sandbox, recipient: alice.id, credits: 400_000, reason: "Ticket #42", createdBy: "support",
            createdAt: Make.start)
        let other = Grant(
            environment: .sandbox, recipient: bob.id, credits: 5, reason: "sorry", createdBy: "support",
            createdAt: Make.start.addingTimeInterval(1))
        try await store.createGrant(grant)
        try await store.createGrant(other)
        await #expect(throws: StoreError.self) { try await store.createGrant(grant) }
        var orphan = grant
        orphan.id = UUID()
        orphan.environment = .production
        await #expect(throws: StoreError.self) { try await store.createGrant(orphan) }

        #expect(
            try await store.grants(environment: .sandbox, recipient: nil, status: nil, limit: 10) == [other, grant])
        #expect(
            try await store.grants(environment: .sandbox, recipient: alice.id, status: .pending, limit: 10) == [grant])
        #expect(try await store.grants(environment: .production, recipient: nil, status: nil, limit: 10).isEmpty)

        await #expect(throws: StoreError.wrongUser("grant \(grant.id)")) {
            try await store.claimGrant(
                id: grant.id, recipient: bob.id, environment: .sandbox, crediting: .collect, at: Make.start)
        }
        await #expect(throws: StoreError.notFound("grant \(grant.id)")) {
            try await store.claimGrant(
                id: grant.id, recipient: alice.id, environment: .production, crediting: nil, at: Make.start)
        }
        let claimedAt = Make.start.addingTimeInterval(60)
        let claimed = try await store.claimGrant(
            id: grant.id, recipient: alice.id, environment: .sandbox, crediting: .collect, at: claimedAt)
        #expect(claimed.claimedAt == claimedAt)
        let again = try await store.claimGrant(
            id: grant.id, recipient: alice.id, environment: .sandbox, crediting: .collect,
            at: Make.start.addingTimeInterval(120))
        #expect(again == claimed)
        #expect(try await store.wallet(owner: alice.id, environment: .sandbox).balance == 400_000)
        let entries = try await store.entries(owner: alice.id, environment: .sandbox)
        #expect(entries.map(\.key) == [IdempotencyKey(.grant, grant.id.uuidString.lowercased())])
        #expect(entries.first?.reason == "Ticket #42")
        #expect(try await store.grants(environment: .sandbox, recipient: nil, status: .claimed, limit: 10) == [claimed])
        // Device wallet: claiming records the claim and leaves the server ledger alone.
        _ = try await store.claimGrant(
            id: other.id, recipient: bob.id, environment: .sandbox, crediting: nil, at: claimedAt)
        #expect(try await store.entries(owner: bob.id, environment: .sandbox).isEmpty)
    }

    @Test(
        "the audit log keeps who, what, before and after, newest first, per environment",
        arguments: StoreEngine.allCases)
    func audit(engine: StoreEngine) async throws {
        let store = try await engine.makeStore()
        let first = AuditEvent(
            environment: .sandbox, actor: "support", action: "grant.create", subject: "_aaaaaaaaaaa1", before: nil,
            after: #"{"credits":5}"#, at: Make.start)
        let second = AuditEvent(
            environment: .sandbox, actor: "admin", action: "balance.set", subject: "_aaaaaaaaaaa1", before: "10",
            after: "20",
            at: Make.start.addingTimeInterval(1))
        let elsewhere = AuditEvent(environment: .production, actor: "admin", action: "x", subject: "y", at: Make.start)
        for event in [first, second, elsewhere] { try await store.recordAudit(event) }
        #expect(try await store.auditEvents(environment: .sandbox, subject: nil, limit: 10) == [second, first])
        #expect(try await store.auditEvents(environment: .sandbox, subject: nil, limit: 1) == [second])
        #expect(try await store.auditEvents(environment: .production, subject: nil, limit: 10) == [elsewhere])
        #expect(
            try await store.auditEvents(environment: .sandbox, subject: "_aaaaaaaaaaa1", limit: 10) == [second, first])
        #expect(try await store.auditEvents(environment: .sandbox, subject: "y", limit: 10).isEmpty)
    }

    @Test(
        "a notification is recorded once per notificationUUID and environment, and found by transaction and outcome",
        arguments: StoreEngine.allCases)
    func notifications(engine: StoreEngine) async throws {
        let store = try await engine.makeStore()
        let alice = Make.user("_aaaaaaaaaaa1")
        try await store.createUser(alice)
        let refund = NotificationRecord(
            uuid: "n-1", environment: .sandbox, type: "REFUND", transactionId: "t2", originalTransactionId: "t1",
            owner: alice.id, signedDate: Make.start, receivedAt: Make.start.addingTimeInterval(1), outcome: .applied)
        let orphan = NotificationRecord(
            uuid: "n-2", environment: .sandbox, type: "REVOKE", subtype: nil, transactionId: "t9",
            originalTransactionId: "t9", owner: nil, signedDate: Make.start,
            receivedAt: Make.start.addingTimeInterval(2), outcome: .unattributed, source: "recovery")
        #expect(try await store.recordNotification(refund))
        #expect(try await store.recordNotification(orphan))
        var again = refund
        again.type = "REFUND_REVERSED"
        #expect(try await store.recordNotification(again) == false)
        #expect(try await store.notification(uuid: "n-1", environment: .sandbox) == refund)
        #expect(try await store.notification(uuid: "n-1", environment: .production) == nil)
        var production = refund
        production.environment = .production
        #expect(try await store.recordNotification(production))

        let sandbox = try await store.notifications(environment: .sandbox, transactionId: nil, outcome: nil, limit: 10)
        #expect(sandbox == [orphan, refund])
        #expect(
            try await store.notifications(environment: .sandbox, transactionId: "t1", outcome: nil, limit: 10)
                == [refund])
        #expect(
            try await store.notifications(environment: .sandbox, transactionId: "t2", outcome: nil, limit: 10)
                == [refund])
        #expect(
            try await store.notifications(environment: .sandbox, transactionId: nil, outcome: .unattributed, limit: 10)
                == [orphan])
        #expect(
            try await store.notifications(environment: .sandbox, transactionId: nil, outcome: nil, limit: 1) == [orphan]
        )
    }

    @Test(
        "a renewal state never replaces one signed later; receipts are found by their chain; cursors persist",
        arguments: StoreEngine.allCases)
    func renewalsAndCursors(engine: StoreEngine) async throws {
        let store = try await engine.makeStore()
        let alice = Make.user("_aaaaaaaaaaa1")
        try await store.createUser(alice)
        let grace = RenewalState(
            originalTransactionId: "orig-t1", environment: .sandbox, owner: alice.id,
            autoRenewProductId: "com.example.monthly", autoRenews: true, inBillingRetry: true,
            gracePeriodExpiresDate: Make.start.addingTimeInterval(86_400), signedDate: Make.start.addingTimeInterval(10)
        )
        #expect(try await store.saveRenewalState(grace))
        var older = grace
        older.inBillingRetry = false
        older.gracePeriodExpiresDate = nil
        older.signedDate = Make.start
        #expect(try await store.saveRenewalState(older) == false)
        #expect(try await store.renewalStates(owner: alice.id, environment: .sandbox) == [grace])
        var newer = older
        newer.signedDate = Make.start.addingTimeInterval(20)
        newer.autoRenews = false
        #expect(try await store.saveRenewalState(newer))
        #expect(try await store.renewalStates(owner: alice.id, environment: .sandbox) == [newer])
        #expect(try await store.renewalStates(owner: alice.id, environment: .production).isEmpty)
        var stranger = grace
        stranger.owner = UUID()
        await #expect(throws: StoreError.self) { try await store.saveRenewalState(stranger) }

        _ = try await store.apply(Make.purchase("t1", for: alice))
        _ = try await store.apply(Make.purchase("t2", for: alice))
        var other = Make.purchase("t3", for: alice)
        if case .purchase(var fact, let credits) = other.event {
            fact.productId = "com.example.noads"
            other.event = .purchase(fact, credits: credits)
        }
        _ = try await store.apply(other)
        let noAds = try await store.receipts(
            owner: alice.id, environment: .sandbox, productIds: ["com.example.noads", "com.example.elsewhere"])
        #expect(noAds.map(\.transaction.transactionId) == ["t3"])
        #expect(try await store.receipts(owner: alice.id, environment: .sandbox, productIds: []).isEmpty)
        #expect(
            try await store.receipts(owner: alice.id, environment: .production, productIds: ["com.example.noads"])
                .isEmpty)
        let chain = try await store.receipts(originalTransactionId: "orig-t1", environment: .sandbox)
        #expect(chain.map(\.transaction.transactionId) == ["t1"])
        #expect(try await store.receipts(originalTransactionId: "orig-t1", environment: .production).isEmpty)

        #expect(try await store.cursor("notification-history", environment: .sandbox) == nil)
        try await store.saveCursor("notification-history", value: "token-1", environment: .sandbox)
        try await store.saveCursor("notification-history", value: "token-2", environment: .sandbox)
        #expect(try await store.cursor("notification-history", environment: .sandbox) == "token-2")
        #expect(try await store.cursor("notification-history", environment: .production) == nil)
    }
}
