import Foundation

/// What support sees of a customer's balance backup.
public struct BackupView: Sendable, Hashable, Codable {
    /// Who wrote a backup.
    public enum Writer: String, Sendable, Hashable, Codable, CaseIterable {
        /// The customer's device.
        case device
        /// An admin (a balance edit in device-wallet mode, or the move-in).
        case admin
    }

    /// The balance backed up.
    public var value: Int64
    /// When it was written.
    public var lastUpdated: Date
    /// Its version.
    public var version: Int64
    /// Who wrote it.
    public var writer: Writer
    /// The device or admin that wrote it.
    public var writerName: String

    /// The other currencies' balances backed up, by catalog id (those holding something); absent when none.
    public var currencies: [String: Int64]?

    /// Creates the view.
    public init(
        value: Int64, lastUpdated: Date, version: Int64, writer: Writer, writerName: String,
        currencies: [String: Int64]? = nil
    ) {
        self.currencies = currencies
        self.value = value
        self.lastUpdated = lastUpdated
        self.version = version
        self.writer = writer
        self.writerName = writerName
    }
}
