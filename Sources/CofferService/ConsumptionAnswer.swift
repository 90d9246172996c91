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

    /// Whether to answer at all. Even on, an answer is sent only for a customer who consented
    /// (`PUT /v1/me/consent`), with `customerConsented: true`.
    public var answer = false
    /// The refund preference sent with each version 1 answer.
    public var refundPreference: RefundPreference = .undeclared
    /// Which Send Consumption Information to call: 2 (Apple's current one, the default) or 1.
    public var version = 2
    /// How version 2's `refundPreference` is chosen from the share of the purchase used.
    public var policy = ConsumptionPolicy()
    /// Whether the app offers a free sample or trial of what it sells, sent as `sampleContentProvided`.
    public var sampleContentProvided = false

    /// Creates the configuration: by default requests are logged and not answered.
    public init(answer: Bool = false, refundPreference: RefundPreference = .undeclared) {
        self.answer = answer
        self.refundPreference = refundPreference
    }
}

/// How Coffer states its preference on a refund request (Send Consumption Information v2's `refundPreference`),
/// from the share of the purchase the customer used. The setting `consumption.policy` lists its rules, e.g.
/// `grant-unused,decline-above=50`.
public struct ConsumptionPolicy: Sendable, Hashable {
    /// `grant-unused`: GRANT_FULL when nothing of the purchase was used.
    public var grantUnused = true
    /// `decline-above=N`: DECLINE when more than N percent (0-100) was used; `nil` never declines.
    public var declineAbove: Int? = 50
    /// `prorate`: GRANT_PRORATED for a share used that no other rule decides.
    public var prorate = false

    /// The default: grant when nothing was used, decline above half, no preference in between.
    public init() {}

    /// Reads the setting: rules separated by commas (`grant-unused`, `decline-above=N`, `prorate`), or `none` for no
    /// preference ever.
    public init?(_ text: String) {
        (grantUnused, declineAbove, prorate) = (false, nil, false)
        for rule in text.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) {
            if rule == "none", text.trimmingCharacters(in: .whitespaces) == "none" { return }
            if rule == "grant-unused" {
                grantUnused = true
            } else if rule == "prorate" {
                prorate = true
            } else if rule.hasPrefix("decline-above="), let share = Int(rule.dropFirst(14)), (0...100).contains(share) {
                declineAbove = share
            } else {
                return nil
            }
        }
    }

    /// The preference for a purchase of which `used` milliunits of a percent (0-100000) were used, or `nil` for none,
    /// and why.
    public func preference(used: Int32) -> (RefundPreference?, String) {
        if used == 0, grantUnused { return (.grantFull, "nothing was used: grant (grant-unused)") }
        if let declineAbove, Int(used) > declineAbove * 1_000 {
            return (.decline, "more than \(declineAbove)% was used: decline (decline-above=\(declineAbove))")
        }
        if prorate, used > 0, used < 100_000 { return (.grantProrated, "part was used: prorated (prorate)") }
        return (nil, "no rule applies: no preference")
    }
}

/// Builds the Send Consumption Information body from what the ledger knows, as a pure function.
enum ConsumptionAnswer {
    /// The version 2 answer and why, in words for support.
    ///
    /// - Delivery: `DELIVERED` once the ledger delivered it, `UNDELIVERED_OTHER` if not (with nothing consumed).
    /// - Consumption: for credits, the share of what the purchase delivered that was `used` since (from the
    ///   ledger), in milliunits; an entitlement product delivered counts as used in full; none for an
    ///   auto-renewable subscription (Apple computes it from the time elapsed).
    /// - Preference: the policy's, from the share used.
    static func requestV2(
        receipt: Receipt?, product: CatalogProduct?, used: Int64?, configuration: ConsumptionConfiguration
    ) -> (ConsumptionRequest, String) {
        var request = ConsumptionRequest()
        request.customerConsented = true
        request.sampleContentProvided = configuration.sampleContentProvided
        var why: [String] = []
        guard let delivered = receipt?.deliveredCredits else {
            request.rawDeliveryStatus = DeliveryStatus.undeliveredOther.rawValue
            request.consumptionPercentage = product?.kind == .autoRenewable ? nil : 0
            return (request, "not delivered by Coffer: undelivered, nothing used")
        }
        request.rawDeliveryStatus = DeliveryStatus.delivered.rawValue
        switch product?.kind {
        case nil:
            why.append("delivered; the product is not in the catalog: no share used stated")
        case .autoRenewable:
            why.append("a subscription: Apple computes the share used from the time elapsed")
        case .consumable where delivered > 0:
            if let used {
                let spent = min(max(used, 0), delivered)
                // spent ≤ delivered ≤ 2^52: spent × 100000 could pass 64 bits, the ratio cannot.
                let share = (Double(spent) / Double(delivered) * 100_000).rounded(.down)
                request.consumptionPercentage = Int32(min(max(share, 0), 100_000))
                why.append("\(spent) of the \(delivered) credits delivered were used since")
            } else {
                why.append("delivered \(delivered) credits; what was used since is not known (no backup)")
            }
        case .consumable, .nonConsumable, .nonRenewing:
            request.consumptionPercentage = 100_000
            why.append("delivered and unlocked: used in full")
        }
        if let used = request.consumptionPercentage {
            let (preference, reason) = configuration.policy.preference(used: used)
            request.rawRefundPreference = preference?.rawValue
            why.append("\(Payment.percentText(Int(used))) used; \(reason)")
        }
        return (request, why.joined(separator: "; "))
    }

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
