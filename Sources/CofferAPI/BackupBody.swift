import CofferCore
import Foundation

/// The device's backup as the server holds it.
public struct BackupBody: Codable, Sendable, Equatable {
    /// The backed-up balance.
    public var value: Int64
    /// When it was last written.
    public var lastUpdated: Date
    /// The version to send in `If-Match` when writing.
    public var version: Int64
    /// Who wrote it: `device` or `admin`.
    public var writer: String
    /// The deficit backed up with the balance.
    public var deficit: Int64
    /// The device wallet's mailbox keys the balance already holds: a device restoring this backup takes them as
    /// applied. Absent when there are none.
    public var applied: [String]?
    /// The other currencies' balances and deficits backed up with it, by currency id (those that hold something).
    /// Absent when there are none.
    public var currencies: [String: BackupCurrency]?

    /// Creates the body.
    public init(
        value: Int64, lastUpdated: Date, version: Int64, writer: String, deficit: Int64 = 0, applied: [String]? = nil,
        currencies: [String: BackupCurrency]? = nil
    ) {
        self.value = value
        self.lastUpdated = lastUpdated
        self.version = version
        self.writer = writer
        self.deficit = deficit
        self.applied = applied
        self.currencies = currencies
    }
}

/// One currency's wallet in a backup.
public struct BackupCurrency: Codable, Sendable, Equatable {
    /// The balance.
    public var value: Int64
    /// The deficit (what refunds could not take back); 0 when absent.
    public var deficit: Int64?

    /// Creates it.
    public init(value: Int64, deficit: Int64? = nil) {
        self.value = value
        self.deficit = deficit
    }

    /// Wallets by currency as the wire names them (an empty one as 0, which clears it).
    public static func wire(_ wallets: [Currency: Wallet]) -> [String: BackupCurrency] {
        Dictionary(
            uniqueKeysWithValues: wallets.map {
                ($0.key.rawValue, BackupCurrency(value: $0.value.balance, deficit: $0.value.deficit))
            })
    }
}
