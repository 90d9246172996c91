import CofferCore
import Foundation

/// Shared fixtures for Coffer's test suites.
public enum Fixture {
    /// 2026-01-01T00:00:00Z.
    public static let start = Date(timeIntervalSince1970: 1_767_225_600)
    /// One day in seconds.
    public static let day: TimeInterval = 86_400
    /// The user most tests act for.
    public static let owner = UUID(uuidString: "00000000-0000-0000-0000-0000000000A1")!
    /// Another user.
    public static let otherOwner = UUID(uuidString: "00000000-0000-0000-0000-0000000000B2")!

    /// The catalog of the foundation issue, loaded from the bundled fixture.
    public static func catalog() throws -> Catalog {
        let url = try require(
            Bundle.module.url(forResource: "catalog", withExtension: "json", subdirectory: "Fixtures"),
            "catalog fixture")
        return try Catalog(json: Data(contentsOf: url))
    }

    /// A purchase of the 400k credits consumable.
    public static func consumable(
        _ id: String, quantity: Int = 1, at date: Date = start, revoked: Date? = nil, family: Bool = false
    )
        -> TransactionFact
    {
        TransactionFact(
            transactionId: id, productId: "com.example.credits.400k", quantity: quantity, purchaseDate: date,
            revocationDate: revoked, isFamilyShared: family)
    }

    /// The `month`-th monthly period (0-based) of one subscription chain.
    public static func month(_ month: Int, revoked: Bool = false, trial: Bool = false) -> TransactionFact {
        let begin = start.addingTimeInterval(Double(month) * 30 * day)
        return TransactionFact(
            transactionId: "sub-\(month)", originalTransactionId: "sub-0", productId: "com.example.pro.monthly",
            purchaseDate: begin, expiresDate: begin.addingTimeInterval(30 * day),
            revocationDate: revoked ? begin.addingTimeInterval(day) : nil, isTrial: trial)
    }
}

/// Unwraps a fixture value or throws ``FixtureError/missing(_:)``.
public func require<T>(_ value: T?, _ what: String = "value") throws -> T {
    guard let value else { throw FixtureError.missing(what) }
    return value
}

/// A fixture that could not be loaded.
public enum FixtureError: Error { case missing(String) }

/// Decodes one random integer into a ledger event over a small world (six transactions, four ids per
/// key space), so duplicates, reorderings, refunds and reversals happen often.
public struct RandomEvent {
    /// The event.
    public let event: LedgerEvent

    /// Decodes `code`.
    public init(_ code: Int) {
        let op = code % 8
        let tx = (code >> 3) % 6
        let amount = Int64((code >> 6) % 7 + 1) * 50
        let id = (code >> 9) % 4
        let negative = (code >> 11) % 2 == 1
        let quantity = tx % 3 + 1
        let fact = Fixture.consumable("t\(tx)", quantity: quantity, family: tx == 5)
        let credits: Int64 = tx == 5 ? 0 : 100 * Int64(quantity)
        var refunded = fact
        refunded.revocationDate = Fixture.start.addingTimeInterval(Fixture.day)
        switch op {
        case 0, 1: event = .purchase(fact, credits: credits)
        case 2: event = .revocation(refunded)
        case 3: event = .reversal(fact, at: Fixture.start.addingTimeInterval(2 * Fixture.day))
        case 4: event = .grant(id: "g\(id)", credits: amount, reason: "support")
        case 5: event = .spend(key: "s\(id)", amount: amount)
        case 6: event = .adjustment(id: "a\(id)", delta: negative ? -amount : amount, reason: "admin")
        default: event = .purchase(refunded, credits: credits)
        }
    }
}
