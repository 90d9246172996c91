import AsyncHTTPClient
import CofferAppStore
import Crypto
import Foundation
import Testing

/// The App Store Server API token check the simulator makes, against the client's own tokens.
@Suite("App Store Server API tokens")
struct APITokenVerifierTests {
    let key = P256.Signing.PrivateKey()

    func token(header: String, claims: String) throws -> String {
        let input = Base64URL.encode(Data(header.utf8)) + "." + Base64URL.encode(Data(claims.utf8))
        return input + "." + Base64URL.encode(try key.signature(for: Data(input.utf8)).rawRepresentation)
    }

    @Test("the client's token passes; a repeated claim, a foreign key or an expired token is refused")
    func verdicts() async throws {
        let verifier = APITokenVerifier(keys: ["K1": key.publicKey], issuerId: "issuer", bundleId: "com.example")
        let http = HTTPClient(eventLoopGroupProvider: .singleton)
        let client = AppStoreServerAPIClient(
            httpClient: http,
            credentials: .init(keyId: "K1", issuerId: "issuer", bundleId: "com.example", privateKey: key),
            environment: .sandbox)
        let made = try client.makeToken()
        try await http.shutdown()
        try verifier.verify(made)

        let now = Int(Date().timeIntervalSince1970)
        let header = #"{"alg":"ES256","kid":"K1","typ":"JWT"}"#
        let claims = #"{"iss":"issuer","aud":"appstoreconnect-v1","iat":\#(now),"exp":\#(now + 300),"#
        try verifier.verify(token(header: header, claims: claims + #""bid":"com.example"}"#))
        // Two bids: parsers disagree on which wins, so the token is refused outright.
        #expect(throws: APITokenVerifier.Refusal.self) {
            try verifier.verify(token(header: header, claims: claims + #""bid":"com.other","bid":"com.example"}"#))
        }
        #expect(throws: APITokenVerifier.Refusal.self) {
            try verifier.verify(token(header: header, claims: claims + #""bid":"com.example"}"#), now: Date() + 600)
        }
        let stranger = APITokenVerifier(
            keys: ["K1": P256.Signing.PrivateKey().publicKey], issuerId: "issuer", bundleId: "com.example")
        #expect(throws: APITokenVerifier.Refusal.self) { try stranger.verify(made) }
    }
}
