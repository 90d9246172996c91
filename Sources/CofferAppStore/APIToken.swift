import CofferCore
import Crypto
import Foundation

/// Checks a bearer token of the App Store Server API the way Apple's servers do: an ES256 JWT with a known key id,
/// the issuer id, audience `appstoreconnect-v1`, the app's bundle id, and an end at most an hour away (after `iat`
/// when the token has one; Apple's own libraries send none). The App Store simulator answers only requests that carry
/// one, and checks the offer signatures StoreKit takes, made with the same keys, as the App Store does
/// (``verifyOfferSignature(_:audience:now:)``).
public struct APITokenVerifier: Sendable {
    /// Why a token was refused.
    public struct Refusal: Error, Sendable, Equatable, CustomStringConvertible {
        /// What is wrong.
        public var description: String
    }

    /// The In-App Purchase keys the server knows, by key id.
    public let keys: [String: P256.Signing.PublicKey]
    /// The issuer id tokens must name.
    public let issuerId: String
    /// The bundle id tokens must name.
    public let bundleId: String

    /// Creates a verifier.
    public init(keys: [String: P256.Signing.PublicKey], issuerId: String, bundleId: String) {
        self.keys = keys
        self.issuerId = issuerId
        self.bundleId = bundleId
    }

    /// Checks `token` at `now`.
    public func verify(_ token: String, now: Date = Date()) throws(Refusal) {
        let claims = try signedClaims(token)
        guard claims.iss == issuerId else { throw Refusal(description: "the token's issuer is wrong") }
        guard claims.aud == "appstoreconnect-v1" else {
            throw Refusal(description: "the token's audience is not appstoreconnect-v1")
        }
        guard claims.bid == bundleId else { throw Refusal(description: "the token is for another app") }
        guard let expires = claims.exp else { throw Refusal(description: "the token lacks exp") }
        let current = now.timeIntervalSince1970
        guard current < expires else { throw Refusal(description: "the token is expired") }
        // Apple's own libraries send no `iat`, and Apple accepts their tokens: without it, the token may not end more
        // than an hour from now; with it, not more than an hour after it, and it may not be issued in the future.
        if let issuedAt = claims.iat {
            guard expires - issuedAt <= 3_600 else { throw Refusal(description: "the token lives longer than an hour") }
            guard issuedAt <= current + 60 else { throw Refusal(description: "the token is not yet valid") }
        } else {
            guard expires <= current + 3_600 + 60 else {
                throw Refusal(description: "the token ends more than an hour from now")
            }
        }
    }

    /// The claims of a signature StoreKit takes for an offer (a promotional offer's, or introductory-offer
    /// eligibility's), checked as the App Store checks it: ES256 by a known key, this app's bundle id and issuer,
    /// `audience`, a nonce, and issued within the last 24 hours.
    ///
    /// - Returns: The offer's claims.
    public func verifyOfferSignature(_ jws: String, audience: String, now: Date) throws(Refusal) -> OfferClaims {
        let claims = try signedClaims(jws)
        guard claims.iss == issuerId else { throw Refusal(description: "the signature's issuer is wrong") }
        guard claims.aud == audience else { throw Refusal(description: "the signature's audience is not \(audience)") }
        guard claims.bid == bundleId else { throw Refusal(description: "the signature is for another app") }
        guard let nonce = claims.nonce, !nonce.isEmpty else { throw Refusal(description: "the signature has no nonce") }
        guard let issuedAt = claims.iat else { throw Refusal(description: "the signature lacks iat") }
        let age = now.timeIntervalSince1970 - issuedAt
        guard age <= 86_400, age >= -60 else {
            throw Refusal(description: "the signature is older than 24 hours or not yet valid")
        }
        guard let productId = claims.productId else { throw Refusal(description: "the signature names no product") }
        return OfferClaims(
            productId: productId, offerIdentifier: claims.offerIdentifier, transactionId: claims.transactionId,
            allowIntroductoryOffer: claims.allowIntroductoryOffer, nonce: nonce)
    }

    /// What an offer signature says.
    public struct OfferClaims: Sendable, Equatable {
        /// The subscription.
        public var productId: String
        /// The promotional offer (a promotional offer's signature).
        public var offerIdentifier: String?
        /// The customer's transaction the signature is tied to, if any.
        public var transactionId: String?
        /// The app's word on the introductory offer (an eligibility signature).
        public var allowIntroductoryOffer: Bool?
        /// The one-time nonce.
        public var nonce: String
    }

    /// The claims of a compact JWS whose ES256 signature verifies with a known key; nothing else is checked yet.
    private func signedClaims(_ token: String) throws(Refusal) -> Claims {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else { throw Refusal(description: "the token is not a compact JWS") }
        let header: Header
        let claims: Claims
        let signature: Data
        do {
            // StrictJSON: a repeated key (two `bid`s, say) is refused, never resolved one way or the other.
            header = try StrictJSON.decode(
                Header.self, from: Base64.decode(url: Array(parts[0].utf8)[...], what: "token header"))
            claims = try StrictJSON.decode(
                Claims.self, from: Base64.decode(url: Array(parts[1].utf8)[...], what: "token claims"))
            signature = try Base64.decode(url: Array(parts[2].utf8)[...], what: "token signature")
        } catch {
            throw Refusal(description: "the token does not decode: \(error)")
        }
        guard header.alg == "ES256" else { throw Refusal(description: "the token is not ES256") }
        guard let keyId = header.kid, let key = keys[keyId] else {
            throw Refusal(description: "unknown key id \(header.kid ?? "none")")
        }
        guard signature.count == 64, let ecdsa = try? P256.Signing.ECDSASignature(rawRepresentation: signature),
            key.isValidSignature(ecdsa, for: Data((parts[0] + "." + parts[1]).utf8))
        else { throw Refusal(description: "the token's signature does not verify") }
        return claims
    }

    private struct Header: Decodable {
        var alg: String?
        var kid: String?
    }

    private struct Claims: Decodable {
        var iss: String?
        var aud: String?
        var bid: String?
        var iat: Double?
        var exp: Double?
        var nonce: String?
        var productId: String?
        var offerIdentifier: String?
        var transactionId: String?
        var allowIntroductoryOffer: Bool?
    }
}
