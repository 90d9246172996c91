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

    @Test(
        "a token as Apple's libraries make it (no iat) passes; its end must be within the hour, and a token's times hold"
    )
    func lifetimes() throws {
        let verifier = APITokenVerifier(keys: ["K1": key.publicKey], issuerId: "issuer", bundleId: "com.example")
        let now = Date(timeIntervalSince1970: 1_767_225_600)
        let at = Int(now.timeIntervalSince1970)
        let header = #"{"alg":"ES256","kid":"K1","typ":"JWT"}"#
        func claims(_ times: String) -> String {
            #"{"bid":"com.example","iss":"issuer","aud":"appstoreconnect-v1",\#(times)}"#
        }
        // Apple's Python library: bid, iss, aud and exp five minutes on, nothing else.
        try verifier.verify(token(header: header, claims: claims(#""exp":\#(at + 300)"#)), now: now)
        try verifier.verify(token(header: header, claims: claims(#""exp":\#(at + 3_600)"#)), now: now)
        let refused: [String] = [
            #""exp":\#(at + 7_200)"#,  // no iat, and the end two hours away
            #""exp":\#(at - 1)"#,  // ended
            #""iat":\#(at)"#,  // no end
            #""iat":\#(at - 100),"exp":\#(at + 3_600)"#,  // a lifetime over an hour
            #""iat":\#(at + 600),"exp":\#(at + 900)"#,  // issued in the future
        ]
        for times in refused {
            #expect(throws: APITokenVerifier.Refusal.self, "\(times)") {
                try verifier.verify(token(header: header, claims: claims(times)), now: now)
            }
        }
        let wrongAudience = #"{"bid":"com.example","iss":"issuer","aud":"appstoreconnect-v2","exp":\#(at + 300)}"#
        #expect(throws: APITokenVerifier.Refusal.self) {
            try verifier.verify(token(header: header, claims: wrongAudience), now: now)
        }
    }
}
