import CofferAPI
import CofferCore

extension BackupBody {
    /// A backup record as the API shows it.
    public init(_ record: BackupRecord) {
        let writer: String = if case .admin = record.writer { "admin" } else { "device" }
        self.init(
            value: record.value, lastUpdated: record.lastUpdated, version: record.version, writer: writer,
            deficit: record.deficit, applied: record.applied.isEmpty ? nil : record.applied,
            currencies: record.currencies.isEmpty ? nil : BackupCurrency.wire(record.currencies))
    }
}
