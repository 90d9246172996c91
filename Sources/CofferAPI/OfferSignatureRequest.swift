/// `POST /v1/me/offers/sign`: a promotional offer of a subscription, to be signed for the customer.
public struct OfferSignatureRequest: Codable, Sendable, Equatable {
    /// The subscription's product identifier.
    public var productId: String
    /// The promotional offer's identifier in App Store Connect.
    public var offerId: String

    /// Creates the request.
    public init(productId: String, offerId: String) {
        self.productId = productId
        self.offerId = offerId
    }
}

/// What `POST /v1/me/offers/sign` answers: the offer signed both ways StoreKit takes it, with Apple's names
/// (the Retention Messaging API's `promotionalOfferSignatureV2` and `promotionalOfferSignatureV1`).
public struct OfferSignatureResponse: Codable, Sendable, Equatable {
    /// The subscription's product identifier.
    public var productId: String
    /// The promotional offer's identifier.
    public var offerId: String
    /// The transaction the JWS is tied to (the customer's `appTransactionId`, else their latest purchase of the
    /// subscription's group), so it serves this customer alone.
    public var transactionId: String
    /// The compact JWS, for `Product.PurchaseOption.promotionalOffer(_:compactJWS:)`.
    public var promotionalOfferSignatureV2: String
    /// The earlier signature, for `Product.PurchaseOption.promotionalOffer(offerID:keyID:nonce:signature:timestamp:)`
    /// (before Xcode 26).
    public var promotionalOfferSignatureV1: PromotionalOfferSignatureV1

    /// Creates the answer.
    public init(
        productId: String, offerId: String, transactionId: String, promotionalOfferSignatureV2: String,
        promotionalOfferSignatureV1: PromotionalOfferSignatureV1
    ) {
        self.productId = productId
        self.offerId = offerId
        self.transactionId = transactionId
        self.promotionalOfferSignatureV2 = promotionalOfferSignatureV2
        self.promotionalOfferSignatureV1 = promotionalOfferSignatureV1
    }
}

/// A promotional offer signature of the earlier kind, with Apple's field names (`PromotionalOfferSignatureV1`).
public struct PromotionalOfferSignatureV1: Codable, Sendable, Equatable {
    /// The DER ECDSA signature, base64.
    public var encodedSignature: String
    /// The subscription's product identifier.
    public var productId: String
    /// The one-time nonce, a lowercase UUID.
    public var nonce: String
    /// When it was signed, in milliseconds since 1970 (StoreKit takes it for 24 hours).
    public var timestamp: Int64
    /// The In-App Purchase key's id.
    public var keyId: String
    /// The offer's identifier.
    public var offerIdentifier: String
    /// The app account token signed, lowercase: the purchase must pass the same (`appAccountToken`).
    public var appAccountToken: String?

    /// Creates the signature.
    public init(
        encodedSignature: String, productId: String, nonce: String, timestamp: Int64, keyId: String,
        offerIdentifier: String, appAccountToken: String?
    ) {
        self.encodedSignature = encodedSignature
        self.productId = productId
        self.nonce = nonce
        self.timestamp = timestamp
        self.keyId = keyId
        self.offerIdentifier = offerIdentifier
        self.appAccountToken = appAccountToken
    }
}
