import Foundation

/// What Coffer needs to know about one App Store transaction, independent of how it arrived (a StoreKit 2
/// signed transaction, a notification, a legacy receipt or the simulator).
public struct TransactionFact: Sendable, Hashable, Codable {
    /// Apple's `transactionId`.
    public var transactionId: String
    /// Apple's `originalTransactionId`: the first transaction of a subscription chain.
    public var originalTransactionId: String
    /// Apple's `productId`.
    public var productId: String
    /// Units bought (Apple's `quantity`, at least 1).
    public var quantity: Int
    /// Apple's `purchaseDate`: for a subscription, the start of the period this transaction paid for.
    public var purchaseDate: Date
    /// Apple's `expiresDate`, for subscriptions.
    public var expiresDate: Date?
    /// Apple's `revocationDate`: set when Apple refunded or revoked the transaction.
    public var revocationDate: Date?
    /// Whether the user received this through Family Sharing (`inAppOwnershipType` = `FAMILY_SHARED`).
    public var isFamilyShared: Bool
    /// Whether the period was free (an introductory free trial): it unlocks access but is not a paid period.
    public var isTrial: Bool
    /// Apple's `isUpgraded`: the subscription was replaced by a higher one in its group.
    public var isUpgraded: Bool
    /// The environment Apple's data names (`environment`), or `nil` where the source did not say. On a
    /// Production server it can be Sandbox: App Review and TestFlight buy in the sandbox with the production
    /// build, and such a purchase stays marked Sandbox on its receipt and ledger entries.
    public var environment: AppStoreEnvironment?
    /// Whether Xcode's StoreKit testing signed the data (its `environment` says `Xcode`; ``environment`` is then
    /// Sandbox, whose rules it follows), so it is marked Xcode wherever data is marked (``dataEnvironment``).
    public var signedByXcode: Bool
    /// What the customer paid (Apple's `price`, in milliunits of ``currency``), or `nil` where the source did not
    /// say (a legacy receipt). Always in ``Payment/prices``.
    public var price: Int64?
    /// Apple's `currency` (ISO 4217, three capital letters) of ``price``.
    public var currency: String?
    /// Apple's `storefront` (ISO 3166-1 alpha-3, three capital letters).
    public var storefront: String?
    /// Why Apple refunded it (Apple's `revocationReason`: 0 for another reason, such as an accidental purchase; 1
    /// for an issue in the app), or `nil` where the source did not say.
    public var revocationReason: Int?
    /// The share Apple says it refunded, in milliunits of a percent: 1-99999 for a prorated refund (Apple's
    /// `revocationPercentage` of a `REFUND_PRORATED` revocation), 100000 when Apple says the refund is full
    /// (`REFUND_FULL`); `nil` when the source did not say (a legacy receipt, an older device): a first refund then
    /// counts as full, but never takes more after a prorated one. A value outside the range is not kept.
    public var revocationPercentage: Int?

    /// Creates a transaction fact.
    public init(
        transactionId: String, originalTransactionId: String? = nil, productId: String, quantity: Int = 1,
        purchaseDate: Date, expiresDate: Date? = nil, revocationDate: Date? = nil, isFamilyShared: Bool = false,
        isTrial: Bool = false, isUpgraded: Bool = false, environment: AppStoreEnvironment? = nil, price: Int64? = nil,
        currency: String? = nil, storefront: String? = nil, revocationReason: Int? = nil, signedByXcode: Bool = false,
        revocationPercentage: Int? = nil
    ) {
        self.signedByXcode = signedByXcode
        self.transactionId = transactionId
        self.originalTransactionId = originalTransactionId ?? transactionId
        self.productId = productId
        self.quantity = quantity
        self.purchaseDate = purchaseDate
        self.expiresDate = expiresDate
        self.revocationDate = revocationDate
        self.isFamilyShared = isFamilyShared
        self.isTrial = isTrial
        self.isUpgraded = isUpgraded
        self.environment = environment
        self.price = price.flatMap { Payment.prices.contains($0) ? $0 : nil }
        self.currency = currency.flatMap(Payment.code)
        self.storefront = storefront.flatMap(Payment.code)
        self.revocationReason = revocationReason.flatMap { Payment.revocationReasons.contains($0) ? $0 : nil }
        self.revocationPercentage = revocationPercentage.flatMap { Payment.statedShares.contains($0) ? $0 : nil }
    }

    /// Whether Apple says the refund is prorated (a share below 100%).
    public var isProratedRefund: Bool { revocationPercentage.map(Payment.proratedShares.contains) ?? false }

    /// What a refund of this transaction takes back of `delivered` credits: all of them, or for a prorated refund
    /// its share, rounded down.
    public func refundedShare(of delivered: Int64) -> Int64 {
        guard let percentage = revocationPercentage, Payment.proratedShares.contains(percentage), delivered > 0 else {
            return max(delivered, 0)
        }
        let share = Int64(percentage)
        // delivered × percentage ÷ 100000 without overflow: delivered is at most 2^52, the percentage below 2^17.
        let (whole, rest) = delivered.quotientAndRemainder(dividingBy: 100_000)
        return whole * share + rest * share / 100_000
    }

    /// The environment the data is marked with (Xcode for Xcode's StoreKit testing), or `nil` where the source did
    /// not say.
    public var dataEnvironment: DataEnvironment? {
        environment.map { DataEnvironment($0, signedByXcode: signedByXcode) }
    }

    /// Takes what `earlier` knew and this one does not say: the data's environment (and Xcode's mark), the price,
    /// currency, storefront and refund reason (a legacy receipt or a notification without them must not erase what
    /// Apple's signed data said).
    public mutating func keepPayment(of earlier: TransactionFact?) {
        guard let earlier else { return }
        if environment == nil {
            environment = earlier.environment
            signedByXcode = earlier.signedByXcode
        }
        if price == nil || currency == nil {
            price = earlier.price
            currency = earlier.currency
        }
        storefront = storefront ?? earlier.storefront
        revocationReason = revocationReason ?? earlier.revocationReason
    }

    /// Takes a later end of the period from `newer`, Apple's signed word on the same transaction after a renewal
    /// extension (RENEWAL_EXTENDED, support's or an outage's): the end only ever moves later, so an older copy of the
    /// signed data never shortens it.
    public mutating func learnExtension(from newer: TransactionFact) {
        guard newer.transactionId == transactionId, newer.originalTransactionId == originalTransactionId,
            newer.productId == productId, newer.revocationDate == nil, newer.dataEnvironment == dataEnvironment,
            let later = newer.expiresDate, expiresDate.map({ later > $0 }) ?? false
        else { return }
        expiresDate = later
    }

    /// Takes Apple's word on a refund from `newer`: its refund reason, and what this one does not know of the
    /// payment.
    public mutating func learnRefund(from newer: TransactionFact) {
        revocationReason = newer.revocationReason ?? revocationReason
        revocationPercentage = newer.revocationPercentage
        keepPayment(of: newer)
    }
}

/// The ranges Apple's payment fields are read into: anything outside is not kept (never trusted to arithmetic).
public enum Payment {
    /// Prices kept, in milliunits: up to a thousand million units of any currency, so that sums of prices
    /// over millions of purchases stay far inside 64 bits.
    public static let prices: ClosedRange<Int64> = 0...1_000_000_000_000
    /// Refund reasons kept: Apple's 0 and 1, with room for values Apple may add.
    public static let revocationReasons: ClosedRange<Int> = 0...99
    /// Prorated refund shares, in milliunits of a percent: more than nothing, less than all.
    public static let proratedShares: ClosedRange<Int> = 1...99_999
    /// Refund shares kept as Apple states them: a prorated share, or 100000 for a full refund.
    public static let statedShares: ClosedRange<Int> = 1...100_000

    /// A currency or storefront code as kept: three ASCII capital letters, or `nil`.
    public static func code(_ text: String) -> String? {
        text.utf8.count == 3 && text.utf8.allSatisfy { $0 >= 0x41 && $0 <= 0x5A } ? text : nil
    }

    /// A share in milliunits of a percent as text: `25%`, `33.333%`.
    public static func percentText(_ milliunits: Int) -> String {
        let (whole, fraction) = milliunits.quotientAndRemainder(dividingBy: 1_000)
        guard fraction > 0 else { return "\(whole)%" }
        var digits = String(fraction)
        digits = String(repeating: "0", count: 3 - digits.count) + digits
        while digits.hasSuffix("0") { digits.removeLast() }
        return "\(whole).\(digits)%"
    }

    /// Apple's refund reason in words, for support screens.
    public static func revocationReasonText(_ reason: Int?) -> String? {
        switch reason {
        case nil: nil
        case 0: "Apple refunded for another reason, such as an accidental purchase"
        case 1: "Apple refunded because of an issue in the app"
        case .some(let other): "Apple refunded (reason \(other))"
        }
    }
}
