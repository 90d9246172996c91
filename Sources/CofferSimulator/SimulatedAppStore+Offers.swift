import CofferAppStore
import CofferCore
import CofferStoreKit
import Crypto
import Foundation

extension SimulatedAppStore {
    /// Buys a subscription with an offer, as StoreKit's purchase options carry it, checked as the App Store checks
    /// it: a promotional offer's JWS and earlier signature by the app's In-App Purchase key
    /// (``SimulatorConfiguration/offerKeys``), for this product and offer, tied (when they say so) to a transaction
    /// of this account's, within 24 hours, each nonce once; the app's signed word on the introductory offer, which
    /// then decides it; a win-back offer the product lists (``SimulatorConfiguration/winBackOffers``) for an account
    /// whose subscription of the group lapsed. The transaction names a promotional (2) or win-back (4) offer.
    ///
    /// - Throws: ``SimulatorError`` `invalid-offer` for what StoreKit refuses (`Product.PurchaseError`'s
    ///   `invalidOfferSignature`, `invalidOfferIdentifier`, `ineligibleForOffer`), with why.
    @discardableResult
    public func purchase(
        account: String, productId: String, appAccountToken: UUID?, offer: StorePurchaseOffer,
        outcome: PurchaseOutcome = .success
    ) throws(SimulatorError) -> SimulatorReport {
        let product = try product(productId)
        guard product.kind == .autoRenewable else {
            throw SimulatorError("invalid-offer", "\(productId) is not an auto-renewable subscription")
        }
        let checked = try check(offer, account: account, product: product, token: appAccountToken)
        guard outcome == .success else {
            return try purchase(
                account: account, productId: productId, appAccountToken: appAccountToken, outcome: outcome)
        }
        let report = try complete(
            account: account, product: product, quantity: 1, token: appAccountToken, offer: checked.offer,
            introductory: checked.introductory)
        // Each nonce once, as the App Store takes it; a signature is refused after 24 hours anyway, so only the
        // nonces of a day are kept.
        let now = clock.now()
        offerNonces = offerNonces.filter { now.timeIntervalSince($0.value) < 86_400 + 60 }
        for nonce in checked.nonces { offerNonces[nonce] = now }
        return report
    }

    private func check(_ offer: StorePurchaseOffer, account: String, product: CatalogProduct, token: UUID?)
        throws(SimulatorError) -> (offer: RedeemedOffer?, introductory: Bool?, nonces: [String])
    {
        switch offer {
        case .promotional(let offerId, let compactJWS, let signature):
            let claims = try verified(
                compactJWS, audience: OfferSignatureCreator.promotionalOfferAudience, account: account, product: product
            )
            guard claims.offerIdentifier == offerId else {
                throw SimulatorError("invalid-offer", "the signature is for offer \(claims.offerIdentifier ?? "none")")
            }
            let nonce = try verifiedV1(signature, offerId: offerId, product: product, token: token)
            return (RedeemedOffer(type: .promotionalOffer, identifier: offerId), nil, [claims.nonce, nonce])
        case .introductoryEligibility(let compactJWS):
            let claims = try verified(
                compactJWS, audience: OfferSignatureCreator.introductoryOfferEligibilityAudience, account: account,
                product: product)
            guard let allowed = claims.allowIntroductoryOffer, claims.transactionId != nil else {
                throw SimulatorError(
                    "invalid-offer", "the eligibility signature lacks allowIntroductoryOffer or transactionId")
            }
            return (nil, allowed, [claims.nonce])
        case .winBack(let offerId):
            guard configuration.winBackOffers[product.id]?.contains(offerId) == true else {
                throw SimulatorError("invalid-offer", "\(product.id) has no win-back offer \(offerId)")
            }
            let group = product.group ?? product.id
            let lapsed = subscriptions[subscriptionKey(account, group)].map { $0.state == .expired } ?? false
            guard lapsed else {
                throw SimulatorError(
                    "invalid-offer", "\(account) is not eligible for \(offerId): no lapsed subscription of \(group)")
            }
            return (RedeemedOffer(type: .winBackOffer, identifier: offerId), nil, [])
        }
    }

    /// A JWS StoreKit was handed, checked with the app's keys, for this product, and tied to this account when it
    /// names a transaction; its nonce not used before.
    private func verified(_ jws: String, audience: String, account: String, product: CatalogProduct)
        throws(SimulatorError) -> APITokenVerifier.OfferClaims
    {
        guard let keys = configuration.offerKeys else {
            throw SimulatorError("invalid-offer", "no In-App Purchase key is known to sign offers with")
        }
        let claims: APITokenVerifier.OfferClaims
        do {
            claims = try keys.verifyOfferSignature(jws, audience: audience, now: clock.now())
        } catch {
            throw SimulatorError("invalid-offer", "the offer signature is refused: \(error)")
        }
        guard claims.productId == product.id else {
            throw SimulatorError("invalid-offer", "the signature is for \(claims.productId), not \(product.id)")
        }
        if let id = claims.transactionId, id != appTransactionId(account),
            !transactions.contains(where: { $0.id == id && $0.account == account })
        {
            throw SimulatorError("invalid-offer", "the signature is tied to transaction \(id), not this account's")
        }
        guard offerNonces[claims.nonce] == nil else {
            throw SimulatorError("invalid-offer", "the signature's nonce was used before")
        }
        return claims
    }

    /// The earlier promotional offer signature: ECDSA over the bundle id, key id, product, offer, account token and
    /// nonce (lowercase) and timestamp, joined by U+2063, within 24 hours. Answers its nonce.
    private func verifiedV1(_ signature: StoreOfferSignature, offerId: String, product: CatalogProduct, token: UUID?)
        throws(SimulatorError) -> String
    {
        guard let keys = configuration.offerKeys, let key = keys.keys[signature.keyId] else {
            throw SimulatorError("invalid-offer", "unknown key id \(signature.keyId) in the earlier signature")
        }
        let nonce = signature.nonce.uuidString.lowercased()
        let payload = [
            configuration.bundleId, signature.keyId, product.id, offerId, token?.uuidString.lowercased() ?? "", nonce,
            String(signature.timestamp),
        ].joined(separator: "\u{2063}")
        guard let ecdsa = try? P256.Signing.ECDSASignature(derRepresentation: signature.signature),
            key.isValidSignature(ecdsa, for: Data(payload.utf8))
        else { throw SimulatorError("invalid-offer", "the earlier offer signature does not verify") }
        let age = clock.now().timeIntervalSince1970 * 1_000 - Double(signature.timestamp)
        guard age <= 86_400_000, age >= -60_000 else {
            throw SimulatorError("invalid-offer", "the earlier offer signature is older than 24 hours or not yet valid")
        }
        guard offerNonces[nonce] == nil else {
            throw SimulatorError("invalid-offer", "the earlier signature's nonce was used before")
        }
        return nonce
    }
}
