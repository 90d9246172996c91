import CofferAPI
import CofferAppStore
import CofferCore
import CofferStore
import Foundation

/// Subscription offers signed for the customer with the app's In-App Purchase key: what StoreKit needs to apply a
/// promotional offer, or the app's word on introductory-offer eligibility.
extension ClientService {
    /// Signs a promotional offer of a subscription for the customer, both ways StoreKit takes it: the JWS
    /// (`promotionalOfferSignatureV2`) and the earlier signature (`promotionalOfferSignatureV1`, over the
    /// customer's `appAccountToken`, which the SDK passes with the purchase). The JWS is tied to the customer's
    /// `appTransactionId`, else to their latest transaction of the subscription's group, so no other Apple account
    /// can redeem a copy.
    ///
    /// - Throws: ``ServiceError/unavailable(code:message:)`` (`offers-unavailable`) without an In-App Purchase
    ///   key; ``ServiceError/unknownProduct(_:)``, ``ServiceError/badRequest(_:)`` or
    ///   ``ServiceError/notFound(_:)`` for an offer the catalog's rules refuse (``SubscriptionOffers``), and
    ///   ``ServiceError/notFound(_:)`` for a customer with neither an Apple account nor a transaction of the group.
    public func signOffer(_ request: OfferSignatureRequest, for user: User) async throws -> OfferSignatureResponse {
        let signer = try offerSigner()
        let product = try SubscriptionOffers.promotionalOffer(
            request.offerId, productId: request.productId, in: catalog)
        var transactionId = user.appleAccount?.appTransactionId
        if transactionId == nil {
            transactionId = try await groupPurchases(of: user, productId: product.id).last?.transaction.transactionId
        }
        guard let transactionId else {
            throw ServiceError.notFound(
                "this customer has neither an Apple account nor a subscription of this group to tie the offer to")
        }
        let (jws, v1) = try signed {
            (
                try signer.promotionalOffer(
                    productId: product.id, offerIdentifier: request.offerId, transactionId: transactionId),
                try signer.promotionalOfferV1(
                    productId: product.id, offerIdentifier: request.offerId, appAccountToken: user.appAccountToken)
            )
        }
        return OfferSignatureResponse(
            productId: product.id, offerId: request.offerId, transactionId: transactionId,
            promotionalOfferSignatureV2: jws,
            promotionalOfferSignatureV1: PromotionalOfferSignatureV1(
                encodedSignature: v1.encodedSignature, productId: product.id, nonce: v1.nonce.uuidString.lowercased(),
                timestamp: v1.timestamp, keyId: v1.keyId, offerIdentifier: request.offerId,
                appAccountToken: v1.appAccountToken?.uuidString.lowercased()))
    }

    /// Whether the customer may take a subscription's introductory offer, by the ledger: only one with no purchase
    /// of a subscription of its group (``SubscriptionOffers/allowsIntroductoryOffer(productId:purchased:in:)``).
    ///
    /// A "no" is always signed, tied to that purchase. A "yes" is signed only for a customer of an Apple account
    /// (every device and reinstall of the account is that one customer, and the SDK records what was bought before
    /// Coffer): an anonymous customer is a fresh one after each reinstall, so their "yes" would be a free trial again
    /// and again. Then the answer carries no signature, and StoreKit's own eligibility applies.
    ///
    /// - Throws: As ``signOffer(_:for:)`` for the key and the product.
    public func signIntroductoryOfferEligibility(_ request: IntroductoryOfferRequest, for user: User) async throws
        -> IntroductoryOfferResponse
    {
        let signer = try offerSigner()
        let group = try await groupPurchases(of: user, productId: request.productId)
        let allowed = try SubscriptionOffers.allowsIntroductoryOffer(
            productId: request.productId, purchased: group.map { $0.transaction.productId }, in: catalog)
        let transactionId = user.appleAccount?.appTransactionId ?? group.last?.transaction.transactionId
        guard let transactionId, !allowed || user.appleAccount != nil else {
            return IntroductoryOfferResponse(
                productId: request.productId, allowIntroductoryOffer: allowed, transactionId: nil, signature: nil)
        }
        let jws = try signed {
            try signer.introductoryOfferEligibility(
                productId: request.productId, allowIntroductoryOffer: allowed, transactionId: transactionId)
        }
        return IntroductoryOfferResponse(
            productId: request.productId, allowIntroductoryOffer: allowed, transactionId: transactionId,
            signature: jws)
    }

    private func offerSigner() throws -> OfferSignatureCreator {
        guard let api = dependencies.appStoreAPI else {
            throw ServiceError.unavailable(
                code: "offers-unavailable",
                message: "this server has no In-App Purchase key to sign offers with: set appstore.key.id, "
                    + "appstore.issuer.id and appstore.private.key")
        }
        return api.offerSignatures(now: dependencies.now)
    }

    /// The customer's purchases of the subscriptions of `productId`'s group, oldest first (renewals included: a
    /// year of a monthly subscription is twelve).
    private func groupPurchases(of user: User, productId: String) async throws -> [Receipt] {
        let group = try SubscriptionOffers.groupProducts(of: productId, in: catalog)
        return try await store.receipts(owner: user.id, environment: user.environment, productIds: group)
    }

    /// Signs; a signing failure (which the key's checks at start-up leave no room for) is logged, and answered
    /// without its detail.
    private func signed<T>(_ sign: () throws -> T) throws -> T {
        do {
            return try sign()
        } catch {
            dependencies.logger.error("offer signing failed: \(error)")
            throw ServiceError.internalError("the offer could not be signed now")
        }
    }

    private var catalog: Catalog { dependencies.catalog }
}
