import Crypto
import Foundation

/// Signs what StoreKit takes for subscription offers with the app's In-App Purchase key, as Apple's App Store
/// Server Library does (`PromotionalOfferV2SignatureCreator`, `IntroductoryOfferEligibilitySignatureCreator`,
/// `PromotionalOfferSignatureCreator`): the JWS of Apple's "Generating JWS to sign App Store requests" for a
/// promotional offer and for introductory-offer eligibility, and the earlier (v1) promotional offer signature.
///
/// ```swift
/// let signer = OfferSignatureCreator(credentials: credentials)
/// let jws = try signer.promotionalOffer(productId: "com.example.pro.monthly", offerIdentifier: "winback")
/// ```
public struct OfferSignatureCreator: Sendable {
    /// The JWS audience of a promotional offer signature.
    public static let promotionalOfferAudience = "promotional-offer"
    /// The JWS audience of an introductory-offer eligibility signature.
    public static let introductoryOfferEligibilityAudience = "introductory-offer-eligibility"

    private let credentials: AppStoreServerAPIClient.Credentials
    private let now: @Sendable () -> Date
    private let nonce: @Sendable () -> UUID

    /// Creates a signer.
    ///
    /// - Parameters:
    ///   - credentials: The In-App Purchase key (key id, issuer id, bundle id, private key).
    ///   - now: The clock, for `iat` and the v1 timestamp.
    ///   - nonce: Where each signature's one-time nonce comes from (a random UUID).
    public init(
        credentials: AppStoreServerAPIClient.Credentials, now: @escaping @Sendable () -> Date = Date.init,
        nonce: @escaping @Sendable () -> UUID = UUID.init
    ) {
        self.credentials = credentials
        self.now = now
        self.nonce = nonce
    }

    /// A promotional offer signature (v2), for `Product.PurchaseOption.promotionalOffer(_:compactJWS:)`.
    ///
    /// - Parameters:
    ///   - productId: The subscription's product identifier.
    ///   - offerIdentifier: The promotional offer's identifier in App Store Connect.
    ///   - transactionId: Any transaction of the customer's (their `appTransactionId` will do), so the signature
    ///     serves that customer alone; `nil` leaves the claim out, as Apple allows.
    /// - Returns: The compact JWS.
    public func promotionalOffer(productId: String, offerIdentifier: String, transactionId: String? = nil) throws
        -> String
    {
        var claims: [String: any Sendable] = ["productId": productId, "offerIdentifier": offerIdentifier]
        if let transactionId { claims["transactionId"] = transactionId }
        return try sign(claims, audience: Self.promotionalOfferAudience)
    }

    /// An introductory-offer eligibility signature, for `Product.PurchaseOption.introductoryOfferEligibility(compactJWS:)`:
    /// the app's word on whether the customer may take the subscription's introductory offer.
    ///
    /// - Parameters:
    ///   - productId: The subscription's product identifier.
    ///   - allowIntroductoryOffer: Whether the customer may take the introductory offer.
    ///   - transactionId: Any transaction of the customer's (their `appTransactionId` will do); Apple requires it.
    /// - Returns: The compact JWS.
    public func introductoryOfferEligibility(productId: String, allowIntroductoryOffer: Bool, transactionId: String)
        throws -> String
    {
        try sign(
            ["productId": productId, "allowIntroductoryOffer": allowIntroductoryOffer, "transactionId": transactionId],
            audience: Self.introductoryOfferEligibilityAudience)
    }

    /// A promotional offer signature of the earlier kind (v1), for
    /// `Product.PurchaseOption.promotionalOffer(offerID:keyID:nonce:signature:timestamp:)`: ECDSA P-256 with SHA-256
    /// (DER, base64) over the bundle id, key id, product id, offer id, the app account token and the nonce (both
    /// lowercase) and the timestamp in milliseconds, joined by U+2063 (invisible separator).
    ///
    /// - Parameters:
    ///   - productId: The subscription's product identifier.
    ///   - offerIdentifier: The promotional offer's identifier in App Store Connect.
    ///   - appAccountToken: The token the purchase passes StoreKit (`appAccountToken`); `nil` signs the empty string.
    /// - Returns: The signature with what StoreKit is handed beside it.
    public func promotionalOfferV1(productId: String, offerIdentifier: String, appAccountToken: UUID?) throws
        -> SignatureV1
    {
        let nonce = nonce()
        let timestamp = Int64((now().timeIntervalSince1970 * 1_000).rounded(.down))
        let username = appAccountToken?.uuidString.lowercased() ?? ""
        let payload = [
            credentials.bundleId, credentials.keyId, productId, offerIdentifier, username,
            nonce.uuidString.lowercased(), String(timestamp),
        ].joined(separator: "\u{2063}")
        let signature = try credentials.privateKey.signature(for: Data(payload.utf8))
        return SignatureV1(
            keyId: credentials.keyId, nonce: nonce, timestamp: timestamp,
            encodedSignature: signature.derRepresentation.base64EncodedString(), appAccountToken: appAccountToken)
    }

    /// A v1 promotional offer signature and what StoreKit is given with it.
    public struct SignatureV1: Sendable, Equatable {
        /// The In-App Purchase key's id.
        public var keyId: String
        /// The one-time nonce (StoreKit takes it lowercase).
        public var nonce: UUID
        /// When it was signed, in milliseconds since 1970: StoreKit takes it for 24 hours.
        public var timestamp: Int64
        /// The DER ECDSA signature, base64.
        public var encodedSignature: String
        /// The app account token signed (the purchase must pass the same).
        public var appAccountToken: UUID?
    }

    private func sign(_ featureClaims: [String: any Sendable], audience: String) throws -> String {
        var claims = featureClaims
        claims["bid"] = credentials.bundleId
        claims["iss"] = credentials.issuerId
        claims["aud"] = audience
        claims["iat"] = Int64(now().timeIntervalSince1970)
        claims["nonce"] = nonce().uuidString.lowercased()
        return try CompactJWT.sign(
            header: ["kid": credentials.keyId, "typ": "JWT"], claims: claims, key: credentials.privateKey)
    }
}

extension AppStoreServerAPIClient {
    /// Signs offers with this client's In-App Purchase key (the key that authenticates its calls), dated by `now`
    /// (the caller's clock; the client's own by default).
    public func offerSignatures(now: (@Sendable () -> Date)? = nil) -> OfferSignatureCreator {
        OfferSignatureCreator(credentials: credentials, now: now ?? self.now)
    }
}
