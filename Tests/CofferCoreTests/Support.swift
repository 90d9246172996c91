import CofferCore
import Foundation

/// Shared fixtures for the core tests.
enum Fixture {
    /// 2026-01-01T00:00:00Z.
    static let start = Date(timeIntervalSince1970: 1_767_225_600)
    static let day: TimeInterval = 86_400
    static let owner = UUID(uuidString: "00000000-0000-0000-0000-0000000000A1")!
    static let otherOwner = UUID(uuidString: "00000000-0000-0000-0000-0000000000B2")!

    /// The catalog of the foundation issue, loaded from the bundled fixture.
    static func catalog() throws -> Catalog {
        let url = try require(
            Bundle.module.url(forResource: "catalog", withExtension: "json", subdirectory: "Fixtures"),
            "catalog fixture")
        return try Catalog(json: Data(contentsOf: url))
    }

    static func consumable(
        _ id: String, quantity: Int = 1, at date: Date = start, revoked: Date? = nil, family: Bool = false
    )
        -> TransactionFact
    {
        TransactionFact(
            transactionId: id, productId: "com.example.credits.400k", quantity: quantity, purchaseDate: date,
            revocationDate: revoked, isFamilyShared: family)
    }

    /// The `month`-th monthly period (0-based) of one subscription chain.
    static func month(_ month: Int, revoked: Bool = false, trial: Bool = false) -> TransactionFact {
        let begin = start.addingTimeInterval(Double(month) * 30 * day)
        return TransactionFact(
            transactionId: "sub-\(month)", originalTransactionId: "sub-0", productId: "com.example.pro.monthly",
            purchaseDate: begin, expiresDate: begin.addingTimeInterval(30 * day),
            revocationDate: revoked ? begin.addingTimeInterval(day) : nil, isTrial: trial)
    }
}

/// `#require` outside a test function: fixtures throw instead.
func require<T>(_ value: T?, _ what: String = "value") throws -> T {
    guard let value else { throw FixtureError.missing(what) }
    return value
}

enum FixtureError: Error { case missing(String) }
