/// The body of `PUT /v1/me/backup`. Send the version you read in `If-Match` (none for a first write).
public struct BackupRequest: Codable, Sendable, Equatable {
    /// The balance to back up.
    public var value: Int64
    /// A name for the device writing it.
    public var device: String?
    /// The deficit to back up with it (what refunds could not take back); 0 when absent.
    public var deficit: Int64?
    /// The keys of the mailbox (`GET /v1/me/adjustments`) this balance already holds, at most 1,000; the server keeps
    /// those in the customer's mailbox. Absent: none.
    public var applied: [String]?
    /// The balances and deficits of the catalog's other currencies than the default, by id: each named is set (0
    /// clears it); one left out keeps what the server holds, so an app from before several currencies, or whose
    /// catalog lacks one, never erases it.
    public var currencies: [String: BackupCurrency]?

    /// Creates the body.
    public init(
        value: Int64, device: String? = nil, deficit: Int64? = nil, applied: [String]? = nil,
        currencies: [String: BackupCurrency]? = nil
    ) {
        self.value = value
        self.device = device
        self.deficit = deficit
        self.applied = applied
        self.currencies = currencies
    }
}
