import CofferAPI
import CofferCore
import CofferStoreKit
import Foundation

/// A subscription offer the app applies to a purchase (``CofferSDK/purchase(_:offer:)``).
public enum CofferOffer: Sendable, Equatable, Hashable {
    /// A promotional offer, by its identifier in App Store Connect: Coffer's server signs it for this customer
    /// with the In-App Purchase key.
    case promotional(String)
    /// The subscription's introductory offer, with Coffer's server deciding (and signing) whether this customer may
    /// take it: only one who never bought a subscription of its group.
    case introductory
    /// A win-back offer the App Store lists for the subscription, by its identifier (iOS 18, macOS 15): StoreKit
    /// decides who is eligible, nothing is signed.
    case winBack(String)
}

extension CofferSDK {
    /// Buys a subscription with an offer applied, then delivers it as ``purchase(productId:quantity:)`` does.
    ///
    /// A promotional offer and the introductory offer's eligibility are signed by Coffer's server first
    /// (`POST /v1/me/offers/sign`, `POST /v1/me/offers/introductory-eligibility`); StoreKit checks the signature.
    /// A win-back offer goes to StoreKit's purchase option as it is.
    ///
    /// ```swift
    /// let result = try await coffer.purchase("com.example.pro.monthly", offer: .promotional("winback.50"))
    /// ```
    ///
    /// - Throws: ``SDKError/offerRefused(_:)`` when the server will not sign a promotional offer,
    ///   ``ServerClientError/transport(_:)`` when it cannot be reached or has no In-App Purchase key (503
    ///   `offers-unavailable`: nothing is bought without its signature), and what ``purchase(productId:quantity:)``
    ///   throws.
    public func purchase(_ productId: String, offer: CofferOffer) async throws -> PurchaseResult {
        guard catalog.product(id: productId) != nil else { throw SDKError.unknownProduct(productId) }
        let signed = try await storeOffer(offer, productId: productId)
        configuration.log(.info, .purchase, "purchase \(productId) with \(Self.describe(offer))")
        return try await purchase(productId: productId, quantity: 1, offer: signed)
    }

    /// What StoreKit is handed for `offer`: the server's signatures, fetched now. For the introductory offer, `nil`
    /// (StoreKit's own eligibility applies) when the server signs nothing (a "yes" for a customer without an Apple
    /// account), cannot sign (no In-App Purchase key) or cannot be reached: Apple's rule is the safe one.
    func storeOffer(_ offer: CofferOffer, productId: String) async throws -> StorePurchaseOffer? {
        switch offer {
        case .promotional(let offerId):
            let signed: OfferSignatureResponse
            do {
                signed = try await signedIn {
                    try await server.signOffer(productId: productId, offerId: offerId, token: $0)
                }
            } catch ServerClientError.refused(_, let code, let why) {
                throw SDKError.offerRefused("\(code): \(why)")
            }
            let v1 = signed.promotionalOfferSignatureV1
            guard let nonce = UUID(uuidString: v1.nonce), let bytes = Data(base64Encoded: v1.encodedSignature),
                let timestamp = Int(exactly: v1.timestamp)
            else { throw SDKError.offerRefused("the server's offer signature is malformed") }
            return .promotional(
                offerId: offerId, compactJWS: signed.promotionalOfferSignatureV2,
                signature: StoreOfferSignature(keyId: v1.keyId, nonce: nonce, signature: bytes, timestamp: timestamp))
        case .introductory:
            do {
                let signed = try await signedIn {
                    try await server.introductoryOfferEligibility(productId: productId, token: $0)
                }
                guard let signature = signed.signature else { return nil }
                return .introductoryEligibility(compactJWS: signature)
            } catch let error as ServerClientError {
                configuration.log(
                    .info, .purchase, "purchase \(productId): no signed eligibility (\(error)); StoreKit decides")
                return nil
            }
        case .winBack(let offerId):
            return .winBack(offerId: offerId)
        }
    }

    private static func describe(_ offer: CofferOffer) -> String {
        switch offer {
        case .promotional(let id): "promotional offer \(id)"
        case .introductory: "the introductory offer"
        case .winBack(let id): "win-back offer \(id)"
        }
    }
}
