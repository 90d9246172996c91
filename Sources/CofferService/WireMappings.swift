import CofferAPI
import CofferCore

extension BackupBody {
    /// A backup record as the API shows it.
    public init(_ record: BackupRecord) {
        let writer: String = if case .admin = record.writer { "admin" } else { "device" }
        self.init(
            value: record.value, lastUpdated: record.lastUpdated, version: record.version, writer: writer,
            deficit: record.deficit, applied: record.applied.isEmpty ? nil : record.applied,
            currencies: record.currencies.isEmpty
                ? nil
                : Dictionary(
                    uniqueKeysWithValues: record.currencies.map {
                        ($0.key.rawValue, BackupCurrency(value: $0.value.balance, deficit: $0.value.deficit))
                    }))
    }
}
