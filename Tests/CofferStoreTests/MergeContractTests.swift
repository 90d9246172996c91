import CofferCore
import CofferStore
import CofferTestSupport
import Foundation
import Testing

/// What every engine keeps when support merges a customer that a CloudKit claim reached: the claim's tokens end,
/// only tokens of installs that registered themselves move, and the merged customer's import is settled.
@Suite("UserStore contract: merges and claims")
struct MergeContractTests {
    /// An imported customer, and an Apple account's customer to merge it into.
    static func customers(_ store: any CofferStore) async throws -> (imported: User, account: User) {
        let imported = Make.user("_aaaaaaaaaaa1")
        var account = Make.user("_bbbbbbbbbbb2")
        account.appleAccount = AppleAccount(appTransactionId: "705000000000001", environment: .sandbox)
        try await store.createUser(imported)
        try await store.createUser(account)
        return (imported, account)
    }

    @Test(
        "grants made while a merge runs: the merge counts exactly the grants it moved",
        arguments: StoreEngine.allCases)
    func grantsDuringMerge(engine: StoreEngine) async throws {
        let store = try await engine.makeStore()
        let (from, into) = try await Self.customers(store)
        let grant: @Sendable (Int) -> Grant = { index in
            Grant(
                environment: .sandbox, recipient: from.id, credits: 10, reason: "Ticket #\(index)",
                createdBy: "ada", createdAt: Make.start)
        }
        try await store.createGrant(grant(0))
        let result = try await withThrowingTaskGroup(of: UserMergeResult?.self) { group in
            for index in 1...20 {
                group.addTask {
                    try await store.createGrant(grant(index))
                    return nil
                }
            }
            group.addTask {
                try await store.mergeUser(
                    UserMerge(
                        from: from.id, into: into.id, environment: .sandbox,
                        movesBackup: false, at: Make.start))
            }
            var merged: UserMergeResult?
            for try await done in group { merged = merged ?? done }
            return try #require(merged)
        }
        let moved = try await store.grants(environment: .sandbox, recipient: into.id, status: nil, limit: 100)
        #expect(moved.count == result.grants)
        let left = try await store.grants(environment: .sandbox, recipient: from.id, status: nil, limit: 100)
        #expect(moved.count + left.count == 21)
    }

    @Test(
        "a merge moves the tokens of installs that registered themselves, ends a claim's, and settles the import",
        arguments: StoreEngine.allCases)
    func claimTokens(engine: StoreEngine) async throws {
        let store = try await engine.makeStore()
        let (imported, account) = try await Self.customers(store)
        let record = ImportedCustomer(
            environment: .sandbox, source: "cloudkit", externalId: "_0123abcd", user: imported.id,
            importedAt: Make.start)
        _ = try await store.recordImport(record)
        // An import's user holds no install's token: its first token was never given out.
        #expect(try await store.tokenCounts(owner: imported.id) == TokenCounts(devices: 0, claims: 0))
        _ = try await store.claimImport(
            source: "cloudkit", externalId: "_0123abcd", environment: .sandbox, keyHash: "key-1", at: Make.start)
        try await store.addToken(tokenHash: "claimed-phone", owner: imported.id, origin: .claim, at: Make.start)
        try await store.addToken(tokenHash: "old-tablet", owner: imported.id, at: Make.start)
        #expect(try await store.tokenCounts(owner: imported.id) == TokenCounts(devices: 1, claims: 1))
        // The account's own first token counts as a device's.
        #expect(try await store.tokenCounts(owner: account.id) == TokenCounts(devices: 1, claims: 0))

        let result = try await store.mergeUser(
            UserMerge(
                from: imported.id, into: account.id, environment: .sandbox,
                movesBackup: false, movesTokens: true, at: Make.start.addingTimeInterval(60)))
        #expect(result.tokensMoved == 1 && result.claimTokensEnded == 1 && result.tokensEnded == 0)
        // The claim's token signs in as nobody; the install that registered itself is the account's now.
        #expect(try await store.user(tokenHash: "claimed-phone") == nil)
        #expect(try await store.user(tokenHash: "old-tablet")?.id == account.id)
        #expect(try await store.tokenCounts(owner: imported.id) == TokenCounts(devices: 0, claims: 0))
        #expect(try await store.tokenCounts(owner: account.id) == TokenCounts(devices: 2, claims: 0))
        // The merged customer is settled: its record name claims nothing, not even with the first key.
        let settled = try await store.importedCustomer(
            source: "cloudkit", externalId: "_0123abcd", environment: .sandbox)
        #expect(settled?.claimKeyHash == ImportedCustomer.mergedKeyHash && settled?.claimedAt == Make.start)
        for key in ["key-1", "key-2"] {
            #expect(
                try await store.claimImport(
                    source: "cloudkit", externalId: "_0123abcd", environment: .sandbox, keyHash: key,
                    at: Make.start.addingTimeInterval(120)) == nil)
        }
        // No token is added to a merged customer.
        await #expect(throws: StoreError.self) {
            try await store.addToken(
                tokenHash: "late-claim", owner: imported.id, origin: .claim, at: Make.start.addingTimeInterval(120))
        }
        #expect(try await store.user(tokenHash: "late-claim") == nil)
    }

    @Test(
        "without the account owner's word a merge ends every token of the merged user: none signs in as the account",
        arguments: StoreEngine.allCases)
    func tokensEnd(engine: StoreEngine) async throws {
        let store = try await engine.makeStore()
        let (anonymous, account) = try await Self.customers(store)
        try await store.addToken(tokenHash: "old-tablet", owner: anonymous.id, at: Make.start)
        #expect(try await store.tokenCounts(owner: anonymous.id) == TokenCounts(devices: 2, claims: 0))
        let result = try await store.mergeUser(
            UserMerge(
                from: anonymous.id, into: account.id, environment: .sandbox,
                movesBackup: false, at: Make.start.addingTimeInterval(60)))
        #expect(result.tokensMoved == 0 && result.tokensEnded == 2 && result.claimTokensEnded == 0)
        for hash in [anonymous.tokenHash, "old-tablet"] { #expect(try await store.user(tokenHash: hash) == nil) }
        #expect(try await store.tokenCounts(owner: anonymous.id) == TokenCounts(devices: 0, claims: 0))
        #expect(try await store.tokenCounts(owner: account.id) == TokenCounts(devices: 1, claims: 0))
        #expect(try await store.user(tokenHash: account.tokenHash)?.id == account.id)
    }

    @Test("a merge settles an import no install claimed yet", arguments: StoreEngine.allCases)
    func unclaimedImport(engine: StoreEngine) async throws {
        let store = try await engine.makeStore()
        let (imported, account) = try await Self.customers(store)
        _ = try await store.recordImport(
            ImportedCustomer(
                environment: .sandbox, source: "cloudkit", externalId: "_feed", user: imported.id,
                importedAt: Make.start))
        let at = Make.start.addingTimeInterval(60)
        let result = try await store.mergeUser(
            UserMerge(
                from: imported.id, into: account.id, environment: .sandbox,
                movesBackup: false, at: at))
        #expect(result.tokensMoved == 0 && result.claimTokensEnded == 0)
        let settled = try await store.importedCustomer(source: "cloudkit", externalId: "_feed", environment: .sandbox)
        #expect(settled?.claimedAt == at && settled?.claimKeyHash == ImportedCustomer.mergedKeyHash)
        #expect(
            try await store.claimImport(
                source: "cloudkit", externalId: "_feed", environment: .sandbox, keyHash: "first-key", at: at) == nil)
    }

    struct Refused: Error {}

    @Test(
        "a merge, a deletion and a grant write their audit entries in their own transaction; one that cannot be made changes nothing",
        arguments: StoreEngine.allCases)
    func auditedInTransaction(engine: StoreEngine) async throws {
        let store = try await engine.makeStore()
        let (anonymous, account) = try await Self.customers(store)
        let merge = UserMerge(
            from: anonymous.id, into: account.id, environment: .sandbox,
            movesBackup: false, at: Make.start)
        @Sendable func entry(_ subject: String, id: UUID = UUID()) -> AuditEvent {
            AuditEvent(id: id, environment: .sandbox, actor: "ada", action: "test", subject: subject, at: Make.start)
        }
        await #expect(throws: Refused.self) { try await store.mergeUser(merge) { _ in throw Refused() } }
        #expect(try await store.user(id: anonymous.id)?.mergedInto == nil)
        _ = try await store.mergeUser(merge) { result in [entry("merged-\(result.receipts)")] }
        #expect(try await store.user(id: anonymous.id)?.mergedInto == account.id)
        #expect(try await store.auditEvents(environment: .sandbox, subject: "merged-0", limit: 5).count == 1)

        // A grant whose audit id another entry holds is audited under an id of its own.
        let grant = Grant(
            environment: .sandbox, recipient: account.id, credits: 5, reason: "ticket", createdBy: "ada",
            createdAt: Make.start)
        try await store.recordAudit(entry("taken", id: grant.id))
        try await store.createGrant(grant, audit: [entry("granted", id: grant.id)])
        #expect(try await store.auditEvents(environment: .sandbox, subject: "granted", limit: 5).count == 1)
        #expect(try await store.auditEvents(environment: .sandbox, subject: "taken", limit: 5).count == 1)

        let deletion = UserDeletion(user: account.id, environment: .sandbox, actor: "ada", at: Make.start)
        await #expect(throws: Refused.self) { try await store.deleteUser(deletion) { _ in throw Refused() } }
        #expect(try await store.user(id: account.id)?.deletedAt == nil)
        _ = try await store.deleteUser(deletion) { result in [entry("deleted-\(result.users)")] }
        #expect(try await store.user(id: account.id)?.deletedAt != nil)
        #expect(try await store.auditEvents(environment: .sandbox, subject: "deleted-2", limit: 5).count == 1)
    }

    @Test(
        "a balance edit works out its difference and writes its audit entry inside its own transaction; one that cannot be audited changes nothing",
        arguments: StoreEngine.allCases)
    func balanceEditAudited(engine: StoreEngine) async throws {
        let store = try await engine.makeStore()
        let (customer, _) = try await Self.customers(store)
        _ = try await store.apply(
            LedgerRequest(
                owner: customer.id, environment: .sandbox, event: .adjustment(id: "start", delta: 100, reason: "start"),
                at: Make.start))
        func edit(_ balance: Int64) -> BalanceEdit {
            BalanceEdit(
                owner: customer.id, environment: .sandbox, balance: balance, entryId: UUID().uuidString,
                reason: "Ticket #5", at: Make.start)
        }
        @Sendable func entry(_ subject: String) -> AuditEvent {
            AuditEvent(environment: .sandbox, actor: "ada", action: "balance.set", subject: subject, at: Make.start)
        }
        await #expect(throws: Refused.self) { try await store.setBalance(edit(40)) { _ in throw Refused() } }
        #expect(try await store.wallet(owner: customer.id, environment: .sandbox).balance == 100)
        #expect(try await store.entries(owner: customer.id, environment: .sandbox).count == 1)

        let done = try await store.setBalance(edit(40)) { result in
            [entry("set-\(result.before.balance)-\(result.after.balance)")]
        }
        #expect(done.before.balance == 100 && done.after.balance == 40 && done.entry?.balanceDelta == -60)
        #expect(try await store.wallet(owner: customer.id, environment: .sandbox).balance == 40)
        #expect(try await store.auditEvents(environment: .sandbox, subject: "set-100-40", limit: 5).count == 1)
        // The balance it holds already: no entry, and the audit is the caller's to decide.
        let same = try await store.setBalance(edit(40)) { _ in [] }
        #expect(same.entry == nil && same.before == same.after)
        #expect(try await store.entries(owner: customer.id, environment: .sandbox).count == 2)
        // The balance support saw, checked inside the transaction: 100 seen, 40 there; refused, nothing written.
        var stale = edit(90)
        stale.expected = 100
        await #expect(throws: BalanceChanged(expected: 100, current: 40)) {
            try await store.setBalance(stale) { _ in [entry("stale")] }
        }
        #expect(try await store.wallet(owner: customer.id, environment: .sandbox).balance == 40)
        #expect(try await store.entries(owner: customer.id, environment: .sandbox).count == 2)
        #expect(try await store.auditEvents(environment: .sandbox, subject: "stale", limit: 5).isEmpty)
        stale.expected = 40
        #expect(try await store.setBalance(stale) { _ in [] }.after.balance == 90)

        // The device wallet's edit is a backup written by an admin, audited in the same transaction.
        await #expect(throws: Refused.self) {
            try await store.saveBackup(
                owner: customer.id, environment: .sandbox, value: 70, precondition: .overwrite,
                writer: .admin("ada"), at: Make.start
            ) { _, _ in throw Refused() }
        }
        #expect(try await store.backup(owner: customer.id, environment: .sandbox) == nil)
        _ = try await store.saveBackup(
            owner: customer.id, environment: .sandbox, value: 70, precondition: .overwrite, writer: .admin("ada"),
            at: Make.start
        ) { before, written in [entry("backup-\(before?.value ?? 0)-\(written.value)")] }
        #expect(try await store.backup(owner: customer.id, environment: .sandbox)?.value == 70)
        #expect(try await store.auditEvents(environment: .sandbox, subject: "backup-0-70", limit: 5).count == 1)
        // An unknown customer: nothing.
        await #expect(throws: StoreError.self) {
            try await store.setBalance(
                BalanceEdit(
                    owner: UUID(), environment: .sandbox, balance: 1, entryId: "x", reason: "x", at: Make.start)
            ) { _ in [] }
        }
    }
}
