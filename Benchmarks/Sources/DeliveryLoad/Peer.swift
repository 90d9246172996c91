// The limit Coffer is compared with: a bare Hummingbird route doing one ES256 verification per request and
// nothing else (no storage, no JSON decoding, no chain): `POST /v1/transactions` with Coffer's body
// `{"signedTransaction":"HEADER.PAYLOAD.SIGNATURE"}`, the signature checked with the leaf's key.
import Crypto
import Foundation
import Hummingbird

enum Peer {
    /// Serves the peer on `port` until terminated.
    static func run(port: Int, publicKeyPEM: String) async throws {
        let key = try P256.Signing.PublicKey(pemRepresentation: publicKeyPEM)
        let router = Router()
        router.get("readyz") { _, _ in "ready" }
        router.post("v1/transactions") { request, _ -> Response in
            let body = try await request.body.collect(upTo: 64 * 1024)
            let prefix = #"{"signedTransaction":""#.utf8.count
            let bytes = Array(body.readableBytesView)
            guard bytes.count > prefix + 2 else { return Response(status: .badRequest) }
            let jws = bytes[prefix..<(bytes.count - 2)]
            let dots = jws.indices.filter { jws[$0] == UInt8(ascii: ".") }
            guard dots.count == 2, let signature = base64URL(jws[(dots[1] + 1)...]),
                let ecdsa = try? P256.Signing.ECDSASignature(rawRepresentation: signature),
                key.isValidSignature(ecdsa, for: Data(jws[..<dots[1]]))
            else { return Response(status: .unprocessableContent) }
            return Response(
                status: .ok, headers: [.contentType: "application/json"],
                body: .init(byteBuffer: ByteBuffer(string: #"{"outcome":"verified"}"#)))
        }
        let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: port)))
        try await app.runService()
    }

    private static func base64URL(_ bytes: ArraySlice<UInt8>) -> Data? {
        var text = String(decoding: bytes, as: UTF8.self).replacingOccurrences(of: "-", with: "+")
            .replacingOccurrences(of: "_", with: "/")
        while text.utf8.count % 4 != 0 { text += "=" }
        return Data(base64Encoded: text)
    }
}
