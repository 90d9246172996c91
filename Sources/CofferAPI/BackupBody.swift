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

    /// Creates the body.
    public init(
        value: Int64, lastUpdated: Date, version: Int64, writer: String, deficit: Int64 = 0, applied: [String]? = nil
    ) {
        self.value = value
        self.lastUpdated = lastUpdated
        self.version = version
        self.writer = writer
        self.deficit = deficit
        self.applied = applied
    }
}
