import Foundation

/// Who wrote a backup: the app on a device, or an admin overriding the balance.
public enum BackupWriter: Sendable, Hashable, Codable {
    /// The app, from the named device.
    case device(String)
    /// An admin, by name.
    case admin(String)
}

/// The server's copy of a device-owned balance.
public struct BackupRecord: Sendable, Hashable, Codable {
    /// The balance backed up.
    public var value: Int64
    /// When it was written.
    public var lastUpdated: Date
    /// Increases by one on every write; writers send the version they read (`If-Match`).
    public var version: Int64
    /// Who wrote it.
    public var writer: BackupWriter
    /// The deficit backed up with the balance (what refunds could not take back), so a reinstall restores it
    /// too.
    public var deficit: Int64
    /// The keys of the device wallet's mailbox (refunds, reversals, edits the server learned of) the balance already
    /// holds, sorted: a new device that restores this backup takes them as applied, never applying them twice.
    public var applied: [String]
    /// The wallets of the currencies other than the default backed up with it, those that hold something
    /// (``kept(_:)``).
    public var currencies: [Currency: Wallet]

    /// Creates a backup record.
    public init(
        value: Int64, lastUpdated: Date, version: Int64, writer: BackupWriter, deficit: Int64 = 0,
        applied: [String] = [], currencies: [Currency: Wallet] = [:]
    ) {
        self.value = value
        self.lastUpdated = lastUpdated
        self.version = version
        self.writer = writer
        self.deficit = deficit
        self.applied = applied
        self.currencies = Self.kept(currencies)
    }

    /// The wallets a backup keeps of `currencies`: those that hold a balance or a deficit (an empty one is the same
    /// as none).
    public static func kept(_ currencies: [Currency: Wallet]) -> [Currency: Wallet] {
        currencies.filter { $0.value != .empty }
    }

    /// The most mailbox keys a backup keeps.
    public static let maximumApplied = 1_000
}

/// What the app does with its balance on launch.
public enum BackupDecision: Sendable, Hashable {
    /// Fresh install with the default balance while the server holds more: take the server's value.
    case restore(Int64)
    /// The server's copy changed after the app's last backup (an admin edit): take the server's value.
    case acceptServer(Int64)
    /// The app's value is current: write it to the server.
    case push(Int64)
    /// The server already holds the app's value.
    case upToDate
}

/// The launch-time backup rule (True Count's Plan C), as a pure function.
public enum BackupRule {
    /// Decides between restoring, accepting the server value and pushing, in that order:
    ///
    /// 1. The local balance is the default and the server holds more: restore it.
    /// 2. The server's copy is newer than the app's last backup (or the app never backed up): accept it.
    ///    Newer means a later version than the one the app last wrote or took, when the app knows it (versions
    ///    are exact; two writes in the same second are not, once a date has crossed the wire); else a later
    ///    `lastUpdated` than the app's last backup.
    /// 3. Otherwise the app's value wins: push it (or nothing, when the server already has it).
    ///
    /// - Parameters:
    ///   - localBalance: The balance on the device now.
    ///   - localDeficit: The deficit on the device now (backed up with the balance).
    ///   - localCurrencies: The device's wallets of the other currencies (backed up with the balance): a fresh
    ///     install, holding none, restores a backup that holds any.
    ///   - defaultBalance: The balance a fresh install starts with.
    ///   - lastBackupAt: When this app last wrote a backup, `nil` if never.
    ///   - lastVersion: The version of the server's record the app last wrote or took, if it knows it.
    ///   - server: The server's backup, `nil` if none.
    /// - Returns: The decision.
    public static func decide(
        localBalance: Int64,
        localDeficit: Int64 = 0,
        localCurrencies: [Currency: Wallet] = [:],
        defaultBalance: Int64,
        lastBackupAt: Date?,
        lastVersion: Int64? = nil,
        server: BackupRecord?
    ) -> BackupDecision {
        guard let server else { return .push(localBalance) }
        let local = BackupRecord.kept(localCurrencies)
        if localBalance == defaultBalance,
            server.value > localBalance || local.isEmpty && server.currencies.values.contains(where: { $0.balance > 0 })
        {
            return .restore(server.value)
        }
        let newer: Bool
        if let lastVersion, lastBackupAt != nil {
            newer = server.version > lastVersion
        } else {
            newer = lastBackupAt.map { server.lastUpdated > $0 } ?? true
        }
        let same = server.value == localBalance && server.deficit == localDeficit && server.currencies == local
        if newer {
            return same ? .upToDate : .acceptServer(server.value)
        }
        return same ? .upToDate : .push(localBalance)
    }
}
