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
    /// customer's `appAccountToken`, which the SDK passes with the purchase). Both are tied to the customer's
    /// `appTransactionId`, else to their latest transaction, when they have one.
    ///
    /// - Throws: ``ServiceError/unavailable(code:message:)`` (`offers-unavailable`) without an In-App Purchase
    ///   key; ``ServiceError/unknownProduct(_:)``, ``ServiceError/badRequest(_:)`` or
    ///   ``ServiceError/notFound(_:)`` for an offer the catalog's rules refuse (``SubscriptionOffers``).
    public func signOffer(_ request: OfferSignatureRequest, for user: User) async throws -> OfferSignatureResponse {
        let signer = try offerSigner()
        let product = try SubscriptionOffers.promotionalOffer(
            request.offerId, productId: request.productId, in: catalog)
        let transactionId = try await anyTransactionId(of: user)
        do {
            let jws = try signer.promotionalOffer(
                productId: product.id, offerIdentifier: request.offerId, transactionId: transactionId)
            let v1 = try signer.promotionalOfferV1(
                productId: product.id, offerIdentifier: request.offerId, appAccountToken: user.appAccountToken)
            return OfferSignatureResponse(
                productId: product.id, offerId: request.offerId, transactionId: transactionId,
                promotionalOfferSignatureV2: jws,
                promotionalOfferSignatureV1: PromotionalOfferSignatureV1(
                    encodedSignature: v1.encodedSignature, productId: product.id,
                    nonce: v1.nonce.uuidString.lowercased(), timestamp: v1.timestamp, keyId: v1.keyId,
                    offerIdentifier: request.offerId, appAccountToken: v1.appAccountToken?.uuidString.lowercased()))
        } catch {
            throw ServiceError.internalError("the offer could not be signed: \(error)")
        }
    }

    /// Signs whether the customer may take a subscription's introductory offer: yes only when Coffer recorded no
    /// purchase of a subscription of its group for them (``SubscriptionOffers/allowsIntroductoryOffer(productId:purchased:in:)``).
    ///
    /// - Throws: As ``signOffer(_:for:)``, and ``ServiceError/notFound(_:)`` for a customer with neither an Apple
    ///   account nor a transaction (Apple requires one in the signature): StoreKit's own eligibility applies then.
    public func signIntroductoryOfferEligibility(_ request: IntroductoryOfferRequest, for user: User) async throws
        -> IntroductoryOfferResponse
    {
        let signer = try offerSigner()
        let group = try SubscriptionOffers.groupProducts(of: request.productId, in: catalog)
        let purchased = try await store.receipts(owner: user.id, environment: user.environment, productIds: group)
        let allowed = try SubscriptionOffers.allowsIntroductoryOffer(
            productId: request.productId, purchased: purchased.map { $0.transaction.productId }, in: catalog)
        guard let transactionId = try await anyTransactionId(of: user) else {
            throw ServiceError.notFound(
                "this customer has no Apple account nor transaction to tie the signature to; "
                    + "StoreKit's own eligibility applies")
        }
        do {
            let jws = try signer.introductoryOfferEligibility(
                productId: request.productId, allowIntroductoryOffer: allowed, transactionId: transactionId)
            return IntroductoryOfferResponse(
                productId: request.productId, allowIntroductoryOffer: allowed, transactionId: transactionId,
                signature: jws)
        } catch {
            throw ServiceError.internalError("the eligibility could not be signed: \(error)")
        }
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

    /// The customer's `appTransactionId` (the same on every device of their Apple account), else the id of their
    /// latest recorded transaction, else `nil`.
    private func anyTransactionId(of user: User) async throws -> String? {
        if let account = user.appleAccount { return account.appTransactionId }
        let receipts = try await store.receipts(owner: user.id, environment: user.environment)
        return receipts.last?.transaction.transactionId
    }

    private var catalog: Catalog { dependencies.catalog }
}
