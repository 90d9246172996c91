/// `POST /v1/me/offers/introductory-eligibility`: whether the customer may take a subscription's introductory
/// offer, signed for StoreKit.
public struct IntroductoryOfferRequest: Codable, Sendable, Equatable {
    /// The subscription's product identifier.
    public var productId: String

    /// Creates the request.
    public init(productId: String) { self.productId = productId }
}

/// What `POST /v1/me/offers/introductory-eligibility` answers.
public struct IntroductoryOfferResponse: Codable, Sendable, Equatable {
    /// The subscription's product identifier.
    public var productId: String
    /// Whether the customer may take the introductory offer: only one who never bought a subscription of its
    /// group, by every purchase Coffer recorded for them.
    public var allowIntroductoryOffer: Bool
    /// The transaction the signature is tied to (the customer's `appTransactionId`, else their latest purchase of
    /// the group); `nil` without a signature.
    public var transactionId: String?
    /// The compact JWS, for `Product.PurchaseOption.introductoryOfferEligibility(compactJWS:)`; `nil` when Coffer
    /// signs nothing and StoreKit's own eligibility applies (a "yes" for a customer without an Apple account).
    public var signature: String?

    /// Creates the answer.
    public init(productId: String, allowIntroductoryOffer: Bool, transactionId: String?, signature: String?) {
        self.productId = productId
        self.allowIntroductoryOffer = allowIntroductoryOffer
        self.transactionId = transactionId
        self.signature = signature
    }
}
