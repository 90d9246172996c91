import CofferCore
import CofferStore
import CofferTestSupport
import Foundation
import Testing

/// The ``BackupStore`` contract every engine keeps (``StoreEngine``): backups: versions, conflicts, the deficit beside the balance.
@Suite("BackupStore contract")
struct BackupStoreContractTests {
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
}
