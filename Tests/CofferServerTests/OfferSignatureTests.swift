import AsyncHTTPClient
import CofferAPI
import CofferAppStore
import CofferCore
import CofferServer
import CofferService
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

/// `POST /v1/me/offers/sign` and `POST /v1/me/offers/introductory-eligibility`: offers signed for the customer with
/// the In-App Purchase key, each signature checked here with the key's public half (Apple's own library compares
/// its claims in `AppleLibraryOfferTests`).
@Suite("Offer signatures", .timeLimit(.minutes(2)))
struct OfferSignatureTests {
    static let keyId = "OFFERKEY01"
    static let issuerId = "57246542-96fe-1a63-e053-0824d011072a"

    /// An App Store Server API client holding `key`; signing offers calls no one, so its host is unreachable.
    static func withKey(
        _ key: P256.Signing.PrivateKey, _ body: @Sendable (AppStoreServerAPIClient) async throws -> Void
    ) async throws {
        let http = HTTPClient(eventLoopGroupProvider: .singleton)
        let api = AppStoreServerAPIClient(
            httpClient: http,
            credentials: .init(keyId: keyId, issuerId: issuerId, bundleId: NotificationTests.bundleId, privateKey: key),
            environment: .sandbox, baseURL: "http://127.0.0.1:9")
        do {
            try await body(api)
        } catch {
            try await http.shutdown()
            throw error
        }
        try await http.shutdown()
    }

    /// A compact JWS checked with `key`: its header and claims.
    static func verified(_ jws: String, key: P256.Signing.PublicKey) throws -> (
        header: [String: String], claims: [String: Any]
    ) {
        let parts = jws.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        try #require(parts.count == 3)
        func bytes(_ segment: String) throws -> Data {
            var text = segment.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
            text += String(repeating: "=", count: (4 - text.count % 4) % 4)
            return try #require(Data(base64Encoded: text))
        }
        let signature = try P256.Signing.ECDSASignature(rawRepresentation: try bytes(parts[2]))
        #expect(key.isValidSignature(signature, for: Data((parts[0] + "." + parts[1]).utf8)), "the JWS does not verify")
        let header = try #require(try JSONSerialization.jsonObject(with: try bytes(parts[0])) as? [String: String])
        let claims = try #require(try JSONSerialization.jsonObject(with: try bytes(parts[1])) as? [String: Any])
        return (header, claims)
    }

    /// A customer of Apple account `account`, and their `appTransactionId`.
    static func register(_ account: String, _ setup: NotificationTests.Setup, _ client: some TestClientProtocol)
        async throws -> (CreateUserResponse, appTransactionId: String)
    {
        let signed = try await setup.apple.signedAppTransaction(account: account)
        let response = try await client.execute(
            uri: "/v1/users", method: .post,
            body: ByteBuffer(
                data: try JSONEncoder().encode(
                    CreateUserRequest(signedAppTransaction: signed))))
        let user = try ClientAPITests.decode(CreateUserResponse.self, response)
        let id = try #require(try await setup.verifier.verifyAppTransaction(signed).appTransactionId)
        return (user, id)
    }

    static func post(
        _ path: String, _ body: some Encodable, token: String, _ client: some TestClientProtocol
    ) async throws -> TestResponse {
        try await client.execute(
            uri: path, method: .post, headers: [.authorization: "Bearer \(token)", .contentType: "application/json"],
            body: ByteBuffer(data: try JSONEncoder().encode(body)))
    }

    @Test("a promotional offer is signed for the customer: the JWS and the v1 signature verify, tied to their account")
    func promotionalOffer() async throws {
        let setup = try NotificationTests.Setup(wallet: .server)
        let key = P256.Signing.PrivateKey()
        try await Self.withKey(key) { api in
            try await setup.application(api: api).test(.router) { client in
                let (alice, appTransactionId) = try await Self.register("alice", setup, client)
                let response = try await Self.post(
                    "/v1/me/offers/sign",
                    OfferSignatureRequest(productId: "com.example.pro.monthly", offerId: "winback"),
                    token: alice.token, client)
                #expect(response.status == .ok)
                let answer = try ClientAPITests.decode(OfferSignatureResponse.self, response)
                #expect(answer.productId == "com.example.pro.monthly" && answer.offerId == "winback")
                #expect(answer.transactionId == appTransactionId)
                let (header, claims) = try Self.verified(answer.promotionalOfferSignatureV2, key: key.publicKey)
                #expect(header == ["alg": "ES256", "kid": Self.keyId, "typ": "JWT"])
                #expect(claims["productId"] as? String == "com.example.pro.monthly")
                #expect(claims["offerIdentifier"] as? String == "winback")
                #expect(claims["transactionId"] as? String == appTransactionId)
                #expect(claims["bid"] as? String == NotificationTests.bundleId)
                #expect(claims["iss"] as? String == Self.issuerId)
                #expect(claims["aud"] as? String == "promotional-offer")
                #expect((claims["iat"] as? NSNumber)?.int64Value == Int64(setup.clock.now().timeIntervalSince1970))
                #expect(
                    Set(claims.keys) == [
                        "productId", "offerIdentifier", "transactionId", "bid", "iss", "aud", "iat", "nonce",
                    ])

                // v1: ECDSA over Apple's fields joined by U+2063, the account token and nonce lowercase.
                let v1 = answer.promotionalOfferSignatureV1
                #expect(v1.keyId == Self.keyId && v1.offerIdentifier == "winback")
                #expect(v1.appAccountToken == alice.appAccountToken.uuidString.lowercased())
                #expect(v1.timestamp == Int64(setup.clock.now().timeIntervalSince1970 * 1_000))
                let payload = [
                    NotificationTests.bundleId, Self.keyId, "com.example.pro.monthly", "winback",
                    alice.appAccountToken.uuidString.lowercased(), v1.nonce, String(v1.timestamp),
                ].joined(separator: "\u{2063}")
                let signature = try P256.Signing.ECDSASignature(
                    derRepresentation: try #require(Data(base64Encoded: v1.encodedSignature)))
                #expect(key.publicKey.isValidSignature(signature, for: Data(payload.utf8)))
                #expect(!key.publicKey.isValidSignature(signature, for: Data((payload + "0").utf8)))

                // Each signature has a nonce of its own.
                let again = try ClientAPITests.decode(
                    OfferSignatureResponse.self,
                    try await Self.post(
                        "/v1/me/offers/sign",
                        OfferSignatureRequest(productId: "com.example.pro.monthly", offerId: "winback"),
                        token: alice.token, client))
                #expect(again.promotionalOfferSignatureV1.nonce != v1.nonce)
                let second = try Self.verified(again.promotionalOfferSignatureV2, key: key.publicKey).claims
                #expect(second["nonce"] as? String != claims["nonce"] as? String)
            }
        }
    }

    @Test("introductory-offer eligibility is signed from the ledger: yes before the first subscription, no after")
    func introductoryEligibility() async throws {
        let setup = try NotificationTests.Setup(wallet: .server)
        let key = P256.Signing.PrivateKey()
        try await Self.withKey(key) { api in
            try await setup.application(api: api).test(.router) { client in
                let (bea, appTransactionId) = try await Self.register("bea", setup, client)
                let request = IntroductoryOfferRequest(productId: "com.example.pro.monthly")
                let before = try ClientAPITests.decode(
                    IntroductoryOfferResponse.self,
                    try await Self.post("/v1/me/offers/introductory-eligibility", request, token: bea.token, client))
                #expect(before.allowIntroductoryOffer && before.transactionId == appTransactionId)
                let (header, claims) = try Self.verified(try #require(before.signature), key: key.publicKey)
                #expect(header["kid"] == Self.keyId)
                #expect(claims["aud"] as? String == "introductory-offer-eligibility")
                #expect(claims["allowIntroductoryOffer"] as? Bool == true)
                #expect(claims["transactionId"] as? String == appTransactionId)
                #expect(claims["productId"] as? String == "com.example.pro.monthly")

                _ = try await setup.apple.purchase(
                    account: "bea", productId: "com.example.pro.monthly", appAccountToken: bea.appAccountToken)
                #expect(try await setup.deliver(after: 0, with: client) == ["applied"])
                let after = try ClientAPITests.decode(
                    IntroductoryOfferResponse.self,
                    try await Self.post("/v1/me/offers/introductory-eligibility", request, token: bea.token, client))
                #expect(!after.allowIntroductoryOffer)
                #expect(
                    try Self.verified(try #require(after.signature), key: key.publicKey).claims[
                        "allowIntroductoryOffer"] as? Bool == false)
            }
        }
    }

    @Test("an anonymous customer's yes goes unsigned (a reinstall would be a new trial); their no is signed")
    func anonymousEligibility() async throws {
        let setup = try NotificationTests.Setup(wallet: .server)
        let key = P256.Signing.PrivateKey()
        try await Self.withKey(key) { api in
            try await setup.application(api: api).test(.router) { client in
                let anonymous = try await NotificationTests.createUser(client)
                let request = IntroductoryOfferRequest(productId: "com.example.pro.monthly")
                let fresh = try ClientAPITests.decode(
                    IntroductoryOfferResponse.self,
                    try await Self.post(
                        "/v1/me/offers/introductory-eligibility", request, token: anonymous.token, client))
                #expect(fresh.allowIntroductoryOffer && fresh.signature == nil && fresh.transactionId == nil)
                // Nothing to tie a promotional offer to either: a copy could serve any Apple account.
                let unsigned = try await Self.post(
                    "/v1/me/offers/sign",
                    OfferSignatureRequest(productId: "com.example.pro.monthly", offerId: "winback"),
                    token: anonymous.token, client)
                #expect(unsigned.status == .notFound)

                // After a subscription of the group (another product of it counts too): no, signed, tied to it.
                let id = try #require(
                    try await setup.apple.purchase(
                        account: "dan", productId: "com.example.pro.monthly", appAccountToken: anonymous.appAccountToken
                    ).transactionIds.first)
                #expect(try await setup.deliver(after: 0, with: client) == ["applied"])
                try await setup.apple.refund(transactionId: id)
                _ = try await setup.deliver(after: 1, with: client)
                let after = try ClientAPITests.decode(
                    IntroductoryOfferResponse.self,
                    try await Self.post(
                        "/v1/me/offers/introductory-eligibility", request, token: anonymous.token, client))
                #expect(!after.allowIntroductoryOffer && after.transactionId == id)
                let claims = try Self.verified(try #require(after.signature), key: key.publicKey).claims
                #expect(claims["allowIntroductoryOffer"] as? Bool == false && claims["transactionId"] as? String == id)
                let offer = try ClientAPITests.decode(
                    OfferSignatureResponse.self,
                    try await Self.post(
                        "/v1/me/offers/sign",
                        OfferSignatureRequest(productId: "com.example.pro.monthly", offerId: "winback"),
                        token: anonymous.token, client))
                #expect(offer.transactionId == id)
            }
        }
    }

    @Test("signatures per customer are bounded: past the burst, 429 with Retry-After")
    func rateLimited() async throws {
        let setup = try NotificationTests.Setup(wallet: .server)
        var configuration = setup.configuration
        configuration.recoveryInterval = 0
        configuration.reconcileInterval = 0
        configuration.offerSigningLimit = RateLimit(burst: 3, perSecond: 0.001)
        let base = try setup.dependencies(api: nil)
        try await Self.withKey(P256.Signing.PrivateKey()) { [base, configuration] api in
            var dependencies = base
            dependencies.appStoreAPI = api
            try await buildApplication(configuration: configuration, dependencies: dependencies).test(.router) {
                client in
                let (erin, _) = try await Self.register("erin", setup, client)
                let (fay, _) = try await Self.register("fay", setup, client)
                let request = OfferSignatureRequest(productId: "com.example.pro.monthly", offerId: "winback")
                for _ in 0..<3 {
                    #expect(try await Self.post("/v1/me/offers/sign", request, token: erin.token, client).status == .ok)
                }
                let refused = try await Self.post("/v1/me/offers/sign", request, token: erin.token, client)
                #expect(refused.status == .tooManyRequests && refused.headers[.retryAfter] != nil)
                // Another customer has a bucket of their own.
                #expect(try await Self.post("/v1/me/offers/sign", request, token: fay.token, client).status == .ok)
            }
        }
    }

    @Test("what is refused: no key, an unknown product, a consumable, a malformed or unlisted offer, no token")
    func refusals() async throws {
        let setup = try NotificationTests.Setup(wallet: .server)
        // Without an In-App Purchase key there is nothing to sign with: 503 offers-unavailable, clearly.
        try await setup.app.test(.router) { client in
            let (user, _) = try await Self.register("cara", setup, client)
            for (path, body) in [
                (
                    "/v1/me/offers/sign",
                    try JSONEncoder().encode(OfferSignatureRequest(productId: "com.example.pro.monthly", offerId: "a"))
                ),
                (
                    "/v1/me/offers/introductory-eligibility",
                    try JSONEncoder().encode(IntroductoryOfferRequest(productId: "com.example.pro.monthly"))
                ),
            ] {
                let response = try await client.execute(
                    uri: path, method: .post, headers: [.authorization: "Bearer \(user.token)"],
                    body: ByteBuffer(data: body))
                #expect(response.status == .serviceUnavailable)
                let error = try ClientAPITests.decode(ErrorResponse.self, response).error
                #expect(error.code == "offers-unavailable" && error.message.contains("appstore.key.id"))
            }
        }
        var configuration = setup.configuration
        configuration.recoveryInterval = 0
        configuration.reconcileInterval = 0
        var listing = try setup.dependencies(api: nil)
        listing.catalog = try Catalog(products: [
            CatalogProduct(id: "com.example.credits", kind: .consumable, credits: 100),
            CatalogProduct(
                id: "com.example.pro.monthly", kind: .autoRenewable, entitlements: ["premium"], group: "pro",
                offers: ["winback", "loyal.20"]),
        ])
        try await Self.withKey(P256.Signing.PrivateKey()) { [listing, configuration] api in
            var dependencies = listing
            dependencies.appStoreAPI = api
            let app = try buildApplication(configuration: configuration, dependencies: dependencies)
            try await app.test(.router) { client in
                let (alice, _) = try await Self.register("alice", setup, client)
                let cases: [(String, any Encodable, HTTPResponse.Status, String)] = [
                    (
                        "/v1/me/offers/sign", OfferSignatureRequest(productId: "com.example.gems", offerId: "winback"),
                        .unprocessableContent, "unknown-product"
                    ),
                    (
                        "/v1/me/offers/sign",
                        OfferSignatureRequest(productId: "com.example.credits", offerId: "winback"),
                        .badRequest, "bad-request"
                    ),
                    (
                        "/v1/me/offers/sign",
                        OfferSignatureRequest(productId: "com.example.pro.monthly", offerId: "a\u{2063}b"),
                        .badRequest, "bad-request"
                    ),
                    (
                        "/v1/me/offers/sign", OfferSignatureRequest(productId: "com.example.pro.monthly", offerId: ""),
                        .badRequest, "bad-request"
                    ),
                    (
                        "/v1/me/offers/sign",
                        OfferSignatureRequest(productId: "com.example.pro.monthly", offerId: "free.forever"),
                        .notFound, "not-found"
                    ),
                    (
                        "/v1/me/offers/introductory-eligibility",
                        IntroductoryOfferRequest(productId: "com.example.credits"),
                        .badRequest, "bad-request"
                    ),
                ]
                for (path, body, status, code) in cases {
                    let response = try await Self.post(path, body, token: alice.token, client)
                    #expect(response.status == status, "\(path) \(body)")
                    #expect(try ClientAPITests.decode(ErrorResponse.self, response).error.code == code)
                }
                // A listed offer is signed.
                let listed = try await Self.post(
                    "/v1/me/offers/sign",
                    OfferSignatureRequest(productId: "com.example.pro.monthly", offerId: "loyal.20"),
                    token: alice.token, client)
                #expect(listed.status == .ok)
                let unauthorized = try await Self.post(
                    "/v1/me/offers/sign",
                    OfferSignatureRequest(productId: "com.example.pro.monthly", offerId: "winback"),
                    token: "not a token", client)
                #expect(unauthorized.status == .unauthorized)
            }
        }
    }
}
