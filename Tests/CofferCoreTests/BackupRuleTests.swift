import CofferCore
import CofferTestSupport
import Foundation
import Testing

@Suite("Backup rule")
struct BackupRuleTests {
    let defaultBalance: Int64 = 1_000
    let lastBackup = Fixture.start

    func server(_ value: Int64, updated: TimeInterval, by writer: BackupWriter = .device("phone")) -> BackupRecord {
        BackupRecord(value: value, lastUpdated: lastBackup.addingTimeInterval(updated), version: 3, writer: writer)
    }

    @Test("default bankroll restore: a fresh install with the default balance restores a higher backup")
    func restoresOnReinstall() {
        #expect(
            BackupRule.decide(
                localBalance: 1_000, defaultBalance: defaultBalance, lastBackupAt: nil,
                server: server(52_000, updated: -60))
                == .restore(52_000))
        #expect(
            BackupRule.decide(
                localBalance: 1_000, defaultBalance: defaultBalance, lastBackupAt: lastBackup,
                server: server(52_000, updated: -60))
                == .restore(52_000))
    }

    @Test("admin edit accepted: a server value written after the app's last backup wins")
    func acceptsAdminEdit() {
        #expect(
            BackupRule.decide(
                localBalance: 7_000, defaultBalance: defaultBalance, lastBackupAt: lastBackup,
                server: server(9_000, updated: 60, by: .admin("support")))
                == .acceptServer(9_000))
        // Lower values too: an admin correcting a balance down is accepted.
        #expect(
            BackupRule.decide(
                localBalance: 7_000, defaultBalance: defaultBalance, lastBackupAt: lastBackup,
                server: server(500, updated: 60, by: .admin("support")))
                == .acceptServer(500))
    }

    @Test("otherwise the app's value is pushed")
    func pushes() {
        #expect(
            BackupRule.decide(
                localBalance: 7_000, defaultBalance: defaultBalance, lastBackupAt: lastBackup,
                server: server(6_000, updated: 0))
                == .push(7_000))
        #expect(
            BackupRule.decide(
                localBalance: 7_000, defaultBalance: defaultBalance, lastBackupAt: lastBackup,
                server: server(6_000, updated: -30))
                == .push(7_000))
        #expect(
            BackupRule.decide(localBalance: 7_000, defaultBalance: defaultBalance, lastBackupAt: nil, server: nil)
                == .push(7_000))
        #expect(
            BackupRule.decide(localBalance: 1_000, defaultBalance: defaultBalance, lastBackupAt: nil, server: nil)
                == .push(1_000))
    }

    @Test("the default balance with a lower server value: restore does not apply, the newer server value does")
    func defaultWithLowerServer() {
        #expect(
            BackupRule.decide(
                localBalance: 1_000, defaultBalance: defaultBalance, lastBackupAt: nil,
                server: server(200, updated: -60))
                == .acceptServer(200))
        #expect(
            BackupRule.decide(
                localBalance: 1_000, defaultBalance: defaultBalance, lastBackupAt: lastBackup,
                server: server(200, updated: -60))
                == .push(1_000))
    }

    @Test("with the version the app last saw, newer means a later version, whatever the dates say")
    func newerByVersion() {
        // Written in the same second as the app's last backup (dates on the wire carry whole seconds).
        #expect(
            BackupRule.decide(
                localBalance: 7_000, defaultBalance: defaultBalance, lastBackupAt: lastBackup, lastVersion: 2,
                server: server(9_000, updated: 0, by: .admin("support")))
                == .acceptServer(9_000))
        // The app's own write, even with a later date than the app kept: its value is pushed.
        #expect(
            BackupRule.decide(
                localBalance: 7_000, defaultBalance: defaultBalance, lastBackupAt: lastBackup, lastVersion: 3,
                server: server(6_000, updated: 60))
                == .push(7_000))
        // A version without a date (never backed up) is not enough to say the server is older.
        #expect(
            BackupRule.decide(
                localBalance: 7_000, defaultBalance: defaultBalance, lastBackupAt: nil, lastVersion: 3,
                server: server(6_000, updated: -60))
                == .acceptServer(6_000))
    }

    @Test("nothing to do when the server already holds the app's value")
    func upToDate() {
        #expect(
            BackupRule.decide(
                localBalance: 7_000, defaultBalance: defaultBalance, lastBackupAt: lastBackup,
                server: server(7_000, updated: 0))
                == .upToDate)
        #expect(
            BackupRule.decide(
                localBalance: 7_000, defaultBalance: defaultBalance, lastBackupAt: lastBackup,
                server: server(7_000, updated: 60))
                == .upToDate)
    }
}

@Suite("Verify Purchases")
struct ReconciliationTests {
    @Test("unfinished and unrecorded: deliver now; finished and unrecorded: contact support")
    func classifies() {
        let items = Reconciliation.classify(
            [
                DeviceTransaction(transactionId: "1", productId: "p", isFinished: false),
                DeviceTransaction(transactionId: "2", productId: "p", isFinished: true),
                DeviceTransaction(transactionId: "3", productId: "p", isFinished: true),
                DeviceTransaction(transactionId: "4", productId: "p", isFinished: false),
                DeviceTransaction(transactionId: "5", productId: "p", isFinished: false, isVerified: false),
                DeviceTransaction(transactionId: "1", productId: "p", isFinished: false),
            ],
            recorded: ["3", "4"])
        #expect(items.map(\.transaction.transactionId) == ["1", "2", "3", "4", "5"])
        #expect(
            items.map(\.verdict) == [
                .deliverNow, .couldNotBeVerified, .alreadyRecorded, .finishOnly, .couldNotBeVerified,
            ])
    }
}

@Suite("Support ID")
struct SupportIDTests {
    @Test("parses _ + 12 hex, case-insensitively; refuses anything else")
    func parses() {
        #expect(SupportID("_abc123def456")?.rawValue == "_abc123def456")
        #expect(SupportID(" _ABC123DEF456 ")?.rawValue == "_abc123def456")
        for bad in ["abc123def456", "_abc123def45", "_abc123def4567", "_abc123def45g", "_abc123def45\u{0661}", ""] {
            #expect(SupportID(bad) == nil, "\(bad)")
        }
    }

    @Test("random IDs are well-formed and round-trip through JSON")
    func random() throws {
        var generator = SystemRandomNumberGenerator()
        let id = SupportID.random(using: &generator)
        #expect(SupportID(id.rawValue) == id)
        let data = try JSONEncoder().encode([id])
        #expect(String(decoding: data, as: UTF8.self) == "[\"\(id.rawValue)\"]")
        #expect(try JSONDecoder().decode([SupportID].self, from: data) == [id])
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode([SupportID].self, from: Data(#"["nope"]"#.utf8))
        }
    }
}
