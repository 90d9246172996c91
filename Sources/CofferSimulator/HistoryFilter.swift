import CofferCore
import Foundation

/// Get Transaction History's filters (version 2), read from the request's query as Apple reads them; a value out
/// of its range is Apple's error for that parameter.
public struct HistoryFilter: Sendable, Equatable {
    /// Transactions bought at or after this time.
    public var start: Date?
    /// Transactions bought before this time.
    public var end: Date?
    /// Only these products (any when empty).
    public var productIds: Set<String> = []
    /// Only these kinds of product (any when empty).
    public var productKinds: Set<ProductKind> = []
    /// Newest change first (Apple's `DESCENDING`); oldest first otherwise.
    public var descending = false
    /// Only these subscription groups, by Apple's identifier (any when empty).
    public var groupIds: Set<String> = []
    /// Only family-shared (`true`) or only purchased (`false`) transactions.
    public var familyShared: Bool?
    /// Only revoked (`true`) or only not revoked (`false`) transactions.
    public var revoked: Bool?

    /// No filter: every transaction, oldest change first.
    public init() {}

    static let invalidStartDate = SimulatedAPIError(
        status: 400, errorCode: 4_000_015, errorMessage: "Invalid start date.")
    static let invalidEndDate = SimulatedAPIError(status: 400, errorCode: 4_000_016, errorMessage: "Invalid end date.")
    static let startAfterEnd = SimulatedAPIError(
        status: 400, errorCode: 4_000_013, errorMessage: "The start date must precede the end date.")
    static let invalidSort = SimulatedAPIError(status: 400, errorCode: 4_000_021, errorMessage: "Invalid sort.")
    static let invalidProductType = SimulatedAPIError(
        status: 400, errorCode: 4_000_022, errorMessage: "Invalid product type.")
    static let invalidOwnership = SimulatedAPIError(
        status: 400, errorCode: 4_000_026, errorMessage: "Invalid in-app ownership type.")
    static let invalidRevoked = SimulatedAPIError(status: 400, errorCode: 4_000_030, errorMessage: "Invalid revoked.")

    /// Reads the filters from a query: `values(name)` gives every value of a parameter, in order.
    public init(query values: (String) -> [String]) throws(SimulatedAPIError) {
        func one(_ name: String) -> String? { values(name).last }
        start = try one("startDate").map { text throws(SimulatedAPIError) in
            try Self.date(text, or: Self.invalidStartDate)
        }
        end = try one("endDate").map { text throws(SimulatedAPIError) in try Self.date(text, or: Self.invalidEndDate) }
        if let start, let end, start >= end { throw Self.startAfterEnd }
        productIds = Set(values("productId"))
        let kinds: [String: ProductKind] = [
            "AUTO_RENEWABLE": .autoRenewable, "NON_RENEWABLE": .nonRenewing, "CONSUMABLE": .consumable,
            "NON_CONSUMABLE": .nonConsumable,
        ]
        for type in values("productType") {
            guard let kind = kinds[type] else { throw Self.invalidProductType }
            productKinds.insert(kind)
        }
        switch one("sort") {
        case nil, "ASCENDING": descending = false
        case "DESCENDING": descending = true
        default: throw Self.invalidSort
        }
        groupIds = Set(values("subscriptionGroupIdentifier"))
        switch one("inAppOwnershipType") {
        case nil: familyShared = nil
        case "FAMILY_SHARED": familyShared = true
        case "PURCHASED": familyShared = false
        default: throw Self.invalidOwnership
        }
        // Apple's Python library writes the boolean as Python prints it (`True`), others as JSON does (`true`).
        switch one("revoked")?.lowercased() {
        case nil: revoked = nil
        case "true": revoked = true
        case "false": revoked = false
        default: throw Self.invalidRevoked
        }
    }

    /// A date in milliseconds since 1970, within what Apple's dates hold.
    private static func date(_ text: String, or error: SimulatedAPIError) throws(SimulatedAPIError) -> Date {
        guard let milliseconds = Int64(text), (0...253_402_300_799_999).contains(milliseconds) else { throw error }
        return Date(timeIntervalSince1970: Double(milliseconds) / 1_000)
    }

    /// Whether a transaction passes the filters.
    func admits(_ record: SimulatedTransaction) -> Bool {
        if let start, record.purchaseDate < start { return false }
        if let end, record.purchaseDate >= end { return false }
        if !productIds.isEmpty, !productIds.contains(record.product.id) { return false }
        if !productKinds.isEmpty, !productKinds.contains(record.product.kind) { return false }
        if !groupIds.isEmpty, !groupIds.contains(record.product.group.map(SimulatedAppStore.groupId) ?? "") {
            return false
        }
        if let familyShared, record.familyShared != familyShared { return false }
        if let revoked, record.isRevoked != revoked { return false }
        return true
    }
}
