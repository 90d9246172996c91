import CofferAppStore
import CofferCore
import CofferStore
import Foundation

/// How the server answers Apple's CONSUMPTION_REQUEST notifications.
public struct ConsumptionConfiguration: Sendable, Hashable {
    /// The developer's preference for the refund decision, sent as `refundPreference`.
    public enum RefundPreference: String, Sendable, CaseIterable {
        /// No preference declared (0).
        case undeclared
        /// Prefer that Apple grants the refund (1).
        case grant
        /// Prefer that Apple declines the refund (2).
        case decline
        /// No preference (3).
        case none

        var code: Int32 {
            switch self {
            case .undeclared: 0
            case .grant: 1
            case .decline: 2
            case .none: 3
            }
        }
    }

    /// Whether to answer at all. Turn it on only if the app's terms obtain the customer's consent to share
    /// consumption data with Apple: the answer says `customerConsented: true`.
    public var answer = false
    /// The refund preference sent with each answer.
    public var refundPreference: RefundPreference = .undeclared

    /// Creates the configuration: by default requests are logged and not answered.
    public init(answer: Bool = false, refundPreference: RefundPreference = .undeclared) {
        self.answer = answer
        self.refundPreference = refundPreference
    }
}

/// Builds the Send Consumption Information body from what the ledger knows, as a pure function.
enum ConsumptionAnswer {
    /// The answer for one transaction.
    ///
    /// - Consumption: for credits, how much of what the purchase delivered is still in the balance (the
    ///   server's balance in the server wallet, the latest backup in the device wallet); entitlement
    ///   products count as fully consumed once delivered; unknown otherwise.
    /// - Delivery: 0 (delivered and working) once the ledger delivered it, 5 (not delivered) if not.
    /// - Account tenure: Apple's day ranges, from when the user was created.
    static func request(
        receipt: Receipt?,
        product: CatalogProduct?,
        wallet: Wallet,
        backup: BackupRecord?,
        wallet mode: WalletMode,
        user: User,
        refundPreference: ConsumptionConfiguration.RefundPreference,
        now: Date
    ) -> ConsumptionRequestV1 {
        var request = ConsumptionRequestV1()
        request.customerConsented = true
        request.platform = 1
        request.sampleContentProvided = false
        request.appAccountToken = user.appAccountToken.uuidString.lowercased()
        request.accountTenure = tenure(days: now.timeIntervalSince(user.createdAt) / 86_400)
        request.playTime = 0
        request.lifetimeDollarsPurchased = 0
        request.lifetimeDollarsRefunded = 0
        request.userStatus = 1
        request.refundPreference = refundPreference.code
        let delivered = receipt?.deliveredCredits
        request.deliveryStatus = delivered == nil ? 5 : 0
        request.consumptionStatus = consumption(
            delivered: delivered, product: product, balance: mode == .server ? wallet.balance : backup?.value)
        return request
    }

    /// 0 undeclared, 1 not consumed, 2 partly, 3 fully.
    static func consumption(delivered: Int64?, product: CatalogProduct?, balance: Int64?) -> Int32 {
        guard let delivered, let product else { return 0 }
        guard product.kind == .consumable, delivered > 0 else { return 3 }
        guard let balance else { return 0 }
        if balance >= delivered { return 1 }
        return balance == 0 ? 3 : 2
    }

    /// Apple's account tenure codes: 1 under 3 days, 2 under 10, 3 under 30, 4 under 90, 5 under 180,
    /// 6 under 365, 7 a year or more.
    static func tenure(days: Double) -> Int32 {
        let limits: [Double] = [3, 10, 30, 90, 180, 365]
        for (index, limit) in limits.enumerated() where days < limit { return Int32(index + 1) }
        return 7
    }
}
