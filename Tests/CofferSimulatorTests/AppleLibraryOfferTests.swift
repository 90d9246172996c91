import CofferAppStore
import CofferTestSupport
import Crypto
import Foundation
import Testing

/// Coffer's offer signatures beside those Apple's own Python library makes for the same inputs
/// (`PromotionalOfferV2SignatureCreator`, `IntroductoryOfferEligibilitySignatureCreator`,
/// `PromotionalOfferSignatureCreator`): each verifies with the In-App Purchase key's public half, and their headers
/// and claims are the same but for the one-time nonce and the issue time.
@Suite("Apple's Python library signs offers as Coffer does", .timeLimit(.minutes(2)))
struct AppleLibraryOfferTests {
    static let issued = Date(timeIntervalSince1970: 1_793_000_000)

    /// What `scripts/apple-library/offers.py` makes of `spec`, run by Apple's library in a child process.
    static func library(python: String, spec: [String: Any]) async throws -> [String: Any] {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("offers-\(UUID()).json")
        try JSONSerialization.data(withJSONObject: spec).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let output = try await blockingWork {
            try AppleLibraryTests.run(
                python: python, script: AppleLibraryTests.script("offers.py"), argument: file.path)
        }
        return try #require(try JSONSerialization.jsonObject(with: output) as? [String: Any])
    }

    @Test("the promotional offer JWS, the introductory-offer eligibility JWS and the v1 signature")
    func sameSignatures() async throws {
        guard let python = AppleLibraryTests.pythonOrSay("Apple's Python library offer check") else { return }
        let key = P256.Signing.PrivateKey()
        let credentials = AppStoreServerAPIClient.Credentials(
            keyId: "OFFERKEY01", issuerId: "57246542-96fe-1a63-e053-0824d011072a", bundleId: "com.example.app",
            privateKey: key)
        let signer = OfferSignatureCreator(credentials: credentials, now: { Self.issued })
        let token = UUID()
        let promotional = try signer.promotionalOffer(
            productId: "com.example.pro.monthly", offerIdentifier: "winback.50", transactionId: "2000000000000042")
        let introductory = try signer.introductoryOfferEligibility(
            productId: "com.example.pro.monthly", allowIntroductoryOffer: false, transactionId: "2000000000000042")
        let v1 = try signer.promotionalOfferV1(
            productId: "com.example.pro.monthly", offerIdentifier: "winback.50", appAccountToken: token)
        let spec: [String: Any] = [
            "key": key.pemRepresentation, "keyId": credentials.keyId, "issuerId": credentials.issuerId,
            "bundleId": credentials.bundleId,
            "promotional": [
                "productId": "com.example.pro.monthly", "offerIdentifier": "winback.50",
                "transactionId": "2000000000000042", "coffer": promotional,
            ],
            "introductory": [
                "productId": "com.example.pro.monthly", "allowIntroductoryOffer": false,
                "transactionId": "2000000000000042", "coffer": introductory,
            ],
            "v1": [
                "productId": "com.example.pro.monthly", "offerIdentifier": "winback.50",
                "appAccountToken": token.uuidString, "nonce": v1.nonce.uuidString, "timestamp": v1.timestamp,
                "coffer": v1.encodedSignature,
            ],
        ]
        let result = try await Self.library(python: python, spec: spec)

        for (name, audience) in [
            ("promotional", "promotional-offer"), ("introductory", "introductory-offer-eligibility"),
        ] {
            let pair = try #require(result[name] as? [String: Any])
            let coffer = try #require(pair["coffer"] as? [String: Any])
            let library = try #require(pair["library"] as? [String: Any])
            let (ours, theirs) = (
                try #require(coffer["claims"] as? NSDictionary), try #require(library["claims"] as? NSDictionary)
            )
            #expect(Set(ours.allKeys.compactMap { $0 as? String }) == Set(theirs.allKeys.compactMap { $0 as? String }))
            for key in ours.allKeys.compactMap({ $0 as? String }) where key != "nonce" && key != "iat" {
                let (mine, apples) = (try #require(ours[key] as? NSObject), try #require(theirs[key] as? NSObject))
                #expect(mine == apples, "\(name): \(key) differs")
            }
            #expect(ours.count == 8, "\(name): \(ours.allKeys)")
            #expect(ours["aud"] as? String == audience)
            #expect((ours["iat"] as? NSNumber)?.int64Value == 1_793_000_000)
            let nonce = try #require(ours["nonce"] as? String)
            #expect(UUID(uuidString: nonce) != nil && nonce == nonce.lowercased())
            let header = try #require(coffer["header"] as? NSDictionary)
            #expect(header == (try #require(library["header"] as? NSDictionary)))
            #expect(header["kid"] as? String == "OFFERKEY01" && header["alg"] as? String == "ES256")
        }
        let promotionalClaims = try #require(
            ((result["promotional"] as? [String: Any])?["coffer"] as? [String: Any])?["claims"] as? [String: Any])
        #expect(promotionalClaims["offerIdentifier"] as? String == "winback.50")
        #expect(promotionalClaims["transactionId"] as? String == "2000000000000042")
        let checkedV1 = try #require(result["v1"] as? [String: Bool])
        #expect(checkedV1 == ["verified": true, "libraryVerified": true])
    }

    @Test("a tampered signature is refused by Apple's library too, so the comparison really checks")
    func tamperedRefused() async throws {
        guard let python = AppleLibraryTests.pythonOrSay("Apple's Python library offer check") else { return }
        let key = P256.Signing.PrivateKey()
        let other = P256.Signing.PrivateKey()
        let credentials = AppStoreServerAPIClient.Credentials(
            keyId: "OFFERKEY01", issuerId: "issuer", bundleId: "com.example.app", privateKey: key)
        let forged = OfferSignatureCreator(
            credentials: .init(keyId: "OFFERKEY01", issuerId: "issuer", bundleId: "com.example.app", privateKey: other),
            now: { Self.issued })
        let v1 = try forged.promotionalOfferV1(productId: "p", offerIdentifier: "o", appAccountToken: nil)
        let good = OfferSignatureCreator(credentials: credentials, now: { Self.issued })
        let spec: [String: Any] = [
            "key": key.pemRepresentation, "keyId": "OFFERKEY01", "issuerId": "issuer", "bundleId": "com.example.app",
            "promotional": [
                "productId": "p", "offerIdentifier": "o", "transactionId": NSNull(),
                "coffer": try good.promotionalOffer(productId: "p", offerIdentifier: "o"),
            ],
            "introductory": [
                "productId": "p", "allowIntroductoryOffer": true, "transactionId": "1",
                "coffer": try good.introductoryOfferEligibility(
                    productId: "p", allowIntroductoryOffer: true, transactionId: "1"),
            ],
            "v1": [
                "productId": "p", "offerIdentifier": "o", "appAccountToken": "", "nonce": v1.nonce.uuidString,
                "timestamp": v1.timestamp, "coffer": v1.encodedSignature,
            ],
        ]
        let result = try await Self.library(python: python, spec: spec)
        // Signed by another key: Apple's library refuses it over the very bytes it signs itself.
        #expect(result["v1"] as? [String: Bool] == ["verified": false, "libraryVerified": true])
        // Without a transaction id the claim is left out, by both.
        let claims = try #require(
            ((result["promotional"] as? [String: Any])?["coffer"] as? [String: Any])?["claims"] as? [String: Any])
        #expect(claims["transactionId"] == nil)
    }
}
