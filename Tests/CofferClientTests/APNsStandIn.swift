import Crypto
import Foundation
import Hummingbird
import HummingbirdHTTP2
import NIOFoundationCompat
import NIOSSL
import SwiftASN1
import Synchronization
import X509

/// APNs, which no machine here can reach, played on loopback in the simulator's style: an HTTP/2 server over
/// TLS (a certificate made for the test) that checks each push as Apple's provider API does (HTTP/2, the path,
/// `apns-push-type`, `apns-priority`, `apns-topic`, the ES256 provider token against the team's key) and
/// answers what the test scripts.
final class APNsStandIn: Sendable {
    /// One push as it arrived.
    struct Push: Sendable, Equatable {
        var deviceToken: String
        var headers: [String: String]
        var payload: [String: String]
        var contentAvailable: Int?
        var overHTTP2: Bool
        /// Why the stand-in refused it, if it did (a header, the token, the body).
        var refusal: String?
    }

    let key = P256.Signing.PrivateKey()
    let keyId = "ABC123DEFG"
    let teamId = "TEAM123456"
    let topic: String
    let certificateDER: [UInt8]
    private let tlsKeyPEM: String
    private let pushes = Mutex<[Push]>([])
    /// Answers to give, in order, before 200s: `(status, reason)`.
    private let script = Mutex<[(Int, String)]>([])

    init(topic: String) throws {
        self.topic = topic
        let tlsKey = P256.Signing.PrivateKey()
        let name = try DistinguishedName { CommonName("localhost") }
        let now = Date()
        let certificate = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: .init(tlsKey.publicKey),
            notValidBefore: now.addingTimeInterval(-3_600), notValidAfter: now.addingTimeInterval(86_400),
            issuer: name, subject: name, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                SubjectAlternativeNames([
                    .dnsName("localhost"), .ipAddress(ASN1OctetString(contentBytes: [127, 0, 0, 1])),
                ])
                try ExtendedKeyUsage([.serverAuth])
            }, issuerPrivateKey: .init(tlsKey))
        var serializer = DER.Serializer()
        try serializer.serialize(certificate)
        certificateDER = serializer.serializedBytes
        tlsKeyPEM = tlsKey.pemRepresentation
    }

    /// The pushes received, oldest first.
    var received: [Push] { pushes.withLock { $0 } }

    /// The next answers, before 200s.
    func answer(_ answers: [(Int, String)]) { script.withLock { $0 += answers } }

    /// A TLS configuration for a client that trusts the stand-in's certificate.
    func clientTLS() throws -> TLSConfiguration {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .certificates([try NIOSSLCertificate(bytes: certificateDER, format: .der)])
        return tls
    }

    /// Runs the stand-in on a free loopback port until `body` returns.
    func run<T: Sendable>(_ body: @Sendable (_ baseURL: String) async throws -> T) async throws -> T {
        let router = Router()
        router.post("3/device/:token") { [self] request, context -> Response in
            let token = context.parameters.get("token") ?? ""
            let data = Data(buffer: try await request.body.collect(upTo: 4_096))
            var push = Push(
                deviceToken: token, headers: [:], payload: [:], contentAvailable: nil,
                overHTTP2: request.head.scheme == "https")
            for field in request.headers { push.headers[field.name.canonicalName] = field.value }
            let json = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
            push.contentAvailable = (json?["aps"] as? [String: Any])?["content-available"] as? Int
            push.payload = json?["coffer"] as? [String: String] ?? [:]
            push.refusal = check(push)
            pushes.withLock { $0.append(push) }
            if let refusal = push.refusal { return Self.answer(403, refusal) }
            if let scripted = script.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) {
                return Self.answer(scripted.0, scripted.1)
            }
            return Response(status: .ok)
        }
        var tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: [.certificate(try NIOSSLCertificate(bytes: certificateDER, format: .der))],
            privateKey: .privateKey(try NIOSSLPrivateKey(bytes: Array(tlsKeyPEM.utf8), format: .pem)))
        tls.minimumTLSVersion = .tlsv12
        let port = Mutex<Int?>(nil)
        let (started, startedContinuation) = AsyncStream<Void>.makeStream()
        let server = Application(
            router: router, server: try .http2Upgrade(tlsConfiguration: tls),
            configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { channel in
                port.withLock { $0 = channel.localAddress?.port }
                startedContinuation.yield()
            })
        return try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask {
                try await server.runService(gracefulShutdownSignals: [])
                return nil
            }
            for await _ in started { break }
            let base = "https://localhost:\(port.withLock { $0 } ?? 0)"
            let result = try await body(base)
            group.cancelAll()
            return result
        }
    }

    /// What Apple's provider API would refuse in a push, or `nil`.
    private func check(_ push: Push) -> String? {
        guard push.overHTTP2 else { return "HTTP/2 is required" }
        guard push.headers["apns-push-type"] == "background" else { return "InvalidPushType" }
        guard push.headers["apns-priority"] == "5" else { return "BadPriority: background pushes use 5" }
        guard push.headers["apns-topic"] == topic else { return "TopicDisallowed" }
        guard push.contentAvailable == 1 else { return "BadPayload: content-available must be 1" }
        guard let bearer = push.headers["authorization"], bearer.hasPrefix("bearer ") else {
            return "MissingProviderToken"
        }
        let parts = bearer.dropFirst(7).split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 3, let header = Self.json(parts[0]), let claims = Self.json(parts[1]),
            let signature = Self.base64URL(parts[2]),
            let ecdsa = try? P256.Signing.ECDSASignature(rawRepresentation: signature),
            key.publicKey.isValidSignature(ecdsa, for: Data((parts[0] + "." + parts[1]).utf8))
        else { return "InvalidProviderToken" }
        guard header["alg"] as? String == "ES256", header["kid"] as? String == keyId,
            claims["iss"] as? String == teamId, let issuedAt = claims["iat"] as? Int,
            abs(Date().timeIntervalSince1970 - Double(issuedAt)) < 3_600
        else { return "InvalidProviderToken" }
        return nil
    }

    private static func answer(_ status: Int, _ reason: String) -> Response {
        let body = (try? JSONSerialization.data(withJSONObject: ["reason": reason])) ?? Data()
        return Response(
            status: HTTPResponse.Status(code: status), headers: [.contentType: "application/json"],
            body: .init(byteBuffer: ByteBuffer(data: body)))
    }

    private static func base64URL(_ text: String) -> Data? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        return Data(base64Encoded: base64)
    }

    private static func json(_ part: String) -> [String: Any]? {
        base64URL(part).flatMap { try? JSONSerialization.jsonObject(with: $0) as? [String: Any] }
    }
}
