// swift-format-ignore-file: AllPublicDeclarationsHaveDocumentation

// The public methods here are the store protocols' requirements, documented there (`CofferStore/Stores`).
import CofferCore
import Foundation

/// The in-memory store's reconciliation records.
extension InMemoryStore {
    public func reconciledCustomers(environment: AppStoreEnvironment, after: UUID?, limit: Int) -> [UUID] {
        let owners = Set(state.receipts.filter { $0.key.environment == environment }.map(\.value.owner.uuidString))
        return owners.filter { $0 > (after?.uuidString ?? "") }.sorted().prefix(max(0, limit)).compactMap(UUID.init)
    }

    public func replaceDiscrepancies(owner: UUID, environment: AppStoreEnvironment, _ records: [DiscrepancyRecord])
        throws
    {
        try Self.checkDiscrepancies(records, owner: owner, environment: environment)
        discrepancyList.removeAll { $0.owner == owner && $0.environment == environment }
        var seen = Set<String>()
        for record in records.reversed() where seen.insert("\(record.transactionId)/\(record.kind.rawValue)").inserted {
            discrepancyList.append(record)
        }
    }

    public func discrepancies(owner: UUID, environment: AppStoreEnvironment) -> [DiscrepancyRecord] {
        Array(
            discrepancyList.filter { $0.owner == owner && $0.environment == environment }
                .sorted { ($0.transactionId, $0.kind.rawValue) < ($1.transactionId, $1.kind.rawValue) }.prefix(200))
    }

    public func swapCursor(_ name: String, environment: AppStoreEnvironment, expected: String?, value: String) -> Bool {
        guard cursors["\(environment.rawValue)/\(name)"] == expected else { return false }
        cursors["\(environment.rawValue)/\(name)"] = value
        return true
    }

    /// Drops a customer's discrepancies (a merge or a deletion: the next run checks whoever holds the receipts).
    func dropDiscrepancies(of owners: Set<UUID>) {
        discrepancyList.removeAll { owners.contains($0.owner) }
    }
}
