import CofferCore
import Foundation

/// The one mapping from Apple's data to the facts the ledger decides on.
extension TransactionFact {
    /// The facts of a verified StoreKit 2 transaction, or `nil` when it lacks its id, product or purchase date.
    public init?(_ transaction: JWSTransactionDecodedPayload) {
        guard let transactionId = transaction.transactionId, let productId = transaction.productId,
            let purchaseDate = transaction.purchaseDate
        else { return nil }
        self.init(
            transactionId: transactionId, originalTransactionId: transaction.originalTransactionId,
            productId: productId, quantity: Int(transaction.quantity ?? 1), purchaseDate: purchaseDate,
            expiresDate: transaction.expiresDate, revocationDate: transaction.revocationDate,
            isFamilyShared: transaction.inAppOwnershipType == .familyShared,
            isTrial: transaction.offerDiscountType == .freeTrial, isUpgraded: transaction.isUpgraded ?? false,
            environment: transaction.environment?.ledgerEnvironment, price: transaction.price,
            currency: transaction.currency, storefront: transaction.storefront,
            revocationReason: transaction.rawRevocationReason.map(Int.init),
            signedByXcode: transaction.environment == .xcode,
            revocationPercentage: Self.statedShare(transaction))
    }

    /// The share Apple states it refunded: a prorated refund's percentage, 100000 for a full refund, `nil` when the
    /// data says neither (a family revocation, or data from before Apple named the type).
    static func statedShare(_ transaction: JWSTransactionDecodedPayload) -> Int? {
        switch transaction.revocationType {
        case .refundProrated?: transaction.revocationPercentage.map(Int.init)
        case .refundFull?: 100_000
        default: nil
        }
    }

    /// The facts of one in-app purchase record of a legacy app receipt, or `nil` when it lacks its id, product
    /// or date. A cancellation date is Apple's revocation.
    ///
    /// - Parameters:
    ///   - purchase: The record.
    ///   - receiptType: The receipt's `receiptType` (`Production`, `ProductionSandbox`, `Sandbox`), which
    ///     says the purchase's environment.
    public init?(_ purchase: InAppPurchaseReceipt, receiptType: String?) {
        guard let transactionId = purchase.transactionId, !transactionId.isEmpty, let productId = purchase.productId,
            let purchaseDate = purchase.purchaseDate
        else { return nil }
        self.init(
            transactionId: transactionId, originalTransactionId: purchase.originalTransactionId,
            productId: productId, quantity: Int(max(1, purchase.quantity ?? 1)), purchaseDate: purchaseDate,
            expiresDate: purchase.expiresDate, revocationDate: purchase.cancellationDate,
            isTrial: purchase.isTrialPeriod ?? false,
            environment: receiptType.map { $0 == "Production" ? .production : .sandbox })
    }
}
