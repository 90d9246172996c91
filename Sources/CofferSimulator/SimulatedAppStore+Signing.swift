import CofferAppStore
import CofferCore
import CofferStoreKit
import Foundation

extension SimulatedAppStore {
    /// A transaction signed as the device holds it (`jwsRepresentation`), signed now.
    public func signedTransaction(id: String) throws(SimulatorError) -> String {
        try signedTransaction(existing(id))
    }

    func signedTransaction(_ record: SimulatedTransaction) throws(SimulatorError) -> String {
        // The same payload at the same moment (the transaction unchanged, the clock not moved) is signed once: a
        // device listing an account's transactions asks for every one of them at each look.
        let payload = decoded(record)
        if let signed = signedPayloads[payload] { return signed }
        let signed = try sign(payload)
        if signedPayloads.count >= Self.signedPayloadsKept { signedPayloads.removeAll(keepingCapacity: true) }
        signedPayloads[payload] = signed
        return signed
    }

    /// The JWS a device holds for `record`: signed when the transaction took its present state, kept until it
    /// changes (StoreKit's `jwsRepresentation`); empty when it cannot be signed.
    func deviceSignedTransaction(_ record: SimulatedTransaction) -> String {
        var state = decoded(record)
        state.signedDate = nil
        if let kept = deviceSigned[record.id], kept.state == state { return kept.jws }
        guard let jws = try? signedTransaction(record) else { return "" }
        deviceSigned[record.id] = (state, jws)
        return jws
    }

    func decoded(_ record: SimulatedTransaction) -> JWSTransactionDecodedPayload {
        var payload = JWSTransactionDecodedPayload()
        payload.transactionId = record.id
        payload.originalTransactionId = record.originalId
        payload.webOrderLineItemId = record.webOrderLineItemId
        payload.bundleId = configuration.bundleId
        payload.productId = record.product.id
        payload.subscriptionGroupIdentifier =
            record.product.kind == .autoRenewable ? record.product.group.map(Self.groupId) : nil
        payload.purchaseDate = record.purchaseDate
        payload.originalPurchaseDate = record.originalPurchaseDate
        payload.expiresDate = record.expiresDate
        payload.quantity = Int32(record.quantity)
        payload.rawType = StoreTransaction.ProductType(record.product.kind).rawValue
        payload.appAccountToken = record.appAccountToken
        payload.rawInAppOwnershipType = record.familyShared ? "FAMILY_SHARED" : "PURCHASED"
        payload.signedDate = clock.now()
        payload.revocationDate = record.revocationDate
        payload.rawRevocationReason = record.revocationReason
        if record.isRevoked, !record.familyShared {
            payload.rawRevocationType = record.revocationPercentage == nil ? "REFUND_FULL" : "REFUND_PRORATED"
            payload.revocationPercentage = record.revocationPercentage
        }
        payload.isUpgraded = record.isUpgraded ? true : nil
        if let offer = record.introductoryOffer {
            payload.rawOfferType = 1  // an introductory offer
            payload.rawOfferDiscountType =
                switch offer {
                case .freeTrial: "FREE_TRIAL"
                case .payAsYouGo: "PAY_AS_YOU_GO"
                case .payUpFront: "PAY_UP_FRONT"
                }
        }
        if let offer = record.offer {
            payload.rawOfferType = offer.type.rawValue
            payload.offerIdentifier = offer.identifier
        }
        payload.rawEnvironment = environment(of: record.account).rawValue
        payload.storefront = configuration.storefront
        payload.storefrontId = "143441"
        payload.rawTransactionReason = record.renewal ? "RENEWAL" : "PURCHASE"
        payload.currency = configuration.currency
        payload.price = record.price
        payload.appTransactionId = appTransactionId(record.account)
        return payload
    }

    func signedRenewalInfo(_ subscription: SimulatedSubscription) throws(SimulatorError) -> String {
        var info = JWSRenewalInfoDecodedPayload()
        info.originalTransactionId = subscription.originalId
        info.productId = subscription.productId
        info.autoRenewProductId = subscription.autoRenewProductId
        info.rawAutoRenewStatus = subscription.autoRenew ? 1 : 0
        info.rawExpirationIntent = subscription.expirationIntent
        info.isInBillingRetryPeriod =
            subscription.state == .billingRetry || subscription.state == .gracePeriod ? true : false
        info.gracePeriodExpiresDate = subscription.gracePeriodExpiresDate
        info.signedDate = clock.now()
        info.rawEnvironment = environment(of: subscription.account).rawValue
        info.recentSubscriptionStartDate = subscription.recentStartDate
        info.renewalDate = subscription.autoRenew ? subscription.expiresDate : nil
        info.currency = configuration.currency
        info.renewalPrice = (try? product(subscription.autoRenewProductId)).map { renewalPrice(subscription, $0) }
        if let increase = subscription.priceIncrease {
            info.rawPriceIncreaseStatus = increase.accepted ? 1 : 0
        }
        info.appTransactionId = appTransactionId(subscription.account)
        info.appAccountToken = record(subscription.latestTransactionId)?.appAccountToken
        return try sign(info)
    }

    func sign(_ value: some Encodable) throws(SimulatorError) -> String {
        do {
            return try signer.sign(value)
        } catch {
            throw SimulatorError("signing-failed", "\(error)")
        }
    }
}
