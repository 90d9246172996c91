import Foundation

/// A subscription offer applied to a purchase, with what StoreKit's purchase options take for it
/// (`Product.PurchaseOption`).
public enum StorePurchaseOffer: Sendable, Equatable, Hashable, Codable {
    /// A promotional offer, signed by the app's server both ways: StoreKit takes the JWS
    /// (`promotionalOffer(_:compactJWS:)`) from an SDK built with Xcode 26, the earlier signature
    /// (`promotionalOffer(offerID:keyID:nonce:signature:timestamp:)`) from one built before.
    case promotional(offerId: String, compactJWS: String, signature: StoreOfferSignature)
    /// The app server's signed word on whether the customer may take the introductory offer
    /// (`introductoryOfferEligibility(compactJWS:)`).
    case introductoryEligibility(compactJWS: String)
    /// A win-back offer the App Store lists for the subscription, by its id (`winBackOffer(_:)`, iOS 18).
    case winBack(offerId: String)
}

/// A promotional offer signature of the earlier kind, as StoreKit takes it.
public struct StoreOfferSignature: Sendable, Equatable, Hashable, Codable {
    /// The In-App Purchase key's id.
    public var keyId: String
    /// The one-time nonce.
    public var nonce: UUID
    /// The signature's bytes (the server's base64, decoded).
    public var signature: Data
    /// When it was signed, in milliseconds since 1970.
    public var timestamp: Int

    /// Creates a signature.
    public init(keyId: String, nonce: UUID, signature: Data, timestamp: Int) {
        self.keyId = keyId
        self.nonce = nonce
        self.signature = signature
        self.timestamp = timestamp
    }
}

/// What a ``StoreKitProvider`` refuses of an offer.
public enum StorePurchaseOfferError: Error, Sendable, Equatable {
    /// This StoreKit cannot apply offers.
    case unsupported
    /// The App Store lists no such offer for the product (a win-back offer's id).
    case unknownOffer(String)
    /// The offer needs a newer system (a win-back offer before iOS 18).
    case needsNewerSystem(String)
}

extension StoreKitProvider {
    /// Buys with an offer, as `Product.purchase(options:)` with the offer's purchase options does. This default
    /// buys without one when `offer` is `nil` and refuses an offer (``StorePurchaseOfferError/unsupported``);
    /// StoreKit's adapter and the simulator's devices apply it.
    public func purchase(productId: String, quantity: Int, appAccountToken: UUID?, offer: StorePurchaseOffer?)
        async throws -> StorePurchaseResult
    {
        guard offer == nil else { throw StorePurchaseOfferError.unsupported }
        return try await purchase(productId: productId, quantity: quantity, appAccountToken: appAccountToken)
    }
}
