import CofferCore
import CofferStore
import Crypto
import Foundation

/// Admin API requests signed with an ECDSA P-256 key, in CloudKit's server-to-server style: the key id, an
/// ISO 8601 date and a signature travel in three headers. The signature covers, one per line:
///
/// ```text
/// <METHOD>
/// <host, as the Host header carries it>
/// <environment, the `environment` query parameter, empty when absent>
/// <date>
/// <base64(SHA-256(body))>
/// <path with its query>
/// ```
///
/// so neither the method, the server it was meant for, the environment, the body, the path nor the query
/// can be changed under the signature.
public enum AdminRequestSignature {
    /// The header naming the key.
    public static let keyIdHeader = "X-Coffer-Request-KeyID"
    /// The header with the request's date, `yyyy-MM-ddTHH:mm:ssZ` in UTC.
    public static let dateHeader = "X-Coffer-Request-ISO8601Date"
    /// The header with the base64 DER signature.
    public static let signatureHeader = "X-Coffer-Request-SignatureV1"
    /// How far a request's date may be from the server's clock, either way.
    public static let window: TimeInterval = 300

    /// The bytes signed.
    public static func message(
        method: String, host: String, environment: String, date: String, body: some DataProtocol, path: String
    ) -> Data {
        let bodyHash = Data(SHA256.hash(data: body)).base64EncodedString()
        return Data(
            [method.uppercased(), host.lowercased(), environment, date, bodyHash, path].joined(separator: "\n").utf8)
    }

    /// The `environment` query parameter of a path, empty when there is none.
    public static func environment(ofPath path: String) -> String {
        guard let query = path.split(separator: "?", maxSplits: 1).dropFirst().first else { return "" }
        for pair in query.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1)
            if parts.first == "environment" { return parts.count > 1 ? String(parts[1]) : "" }
        }
        return ""
    }

    /// A date as the date header carries it.
    public static func format(_ date: Date) -> String {
        Date.ISO8601FormatStyle().format(date)
    }

    /// A date header's value, or `nil` when it is not `yyyy-MM-ddTHH:mm:ssZ`.
    public static func parse(_ text: String) -> Date? {
        guard text.utf8.count == 20, text.hasSuffix("Z") else { return nil }
        return try? Date.ISO8601FormatStyle().parse(text)
    }

    /// Checks a request's signature with a key's public half; the date must be within ``window`` of `now`.
    ///
    /// - Returns: A digest of the signature (the same for both of its malleable forms), which the caller
    ///   records so the request is accepted once.
    public static func verify(
        publicKeyPEM: String,
        date: String,
        signature: String,
        method: String,
        host: String,
        body: some DataProtocol,
        path: String,
        now: Date
    ) throws(AdminAuthError) -> String {
        guard let signed = parse(date) else { throw .malformedDate(date) }
        guard abs(signed.timeIntervalSince(now)) <= window else { throw .stale(date) }
        guard let der = Data(base64Encoded: signature),
            let ecdsa = try? P256.Signing.ECDSASignature(derRepresentation: der)
        else { throw .badSignature }
        guard let key = try? P256.Signing.PublicKey(pemRepresentation: publicKeyPEM) else {
            throw .badKey
        }
        let covered = message(
            method: method, host: host, environment: environment(ofPath: path), date: date, body: body, path: path)
        guard key.isValidSignature(ecdsa, for: covered) else {
            throw .badSignature
        }
        return Data(SHA256.hash(data: canonical(ecdsa.rawRepresentation))).base64EncodedString()
    }

    /// The order of P-256's group, big-endian.
    static let order: [UInt8] = [
        0xFF, 0xFF, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x00, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
        0xBC, 0xE6, 0xFA, 0xAD, 0xA7, 0x17, 0x9E, 0x84, 0xF3, 0xB9, 0xCA, 0xC2, 0xFC, 0x63, 0x25, 0x51,
    ]

    /// One form of a signature `r || s`: ECDSA signatures are malleable (`s` and `n - s` both verify), so a
    /// replay is recognised by `r` and the smaller of the two.
    static func canonical(_ raw: Data) -> Data {
        let bytes = [UInt8](raw)
        guard bytes.count == 64 else { return raw }
        let r = bytes[0..<32]
        let s = Array(bytes[32..<64])
        var negated = [UInt8](repeating: 0, count: 32)
        var borrow = 0
        for index in stride(from: 31, through: 0, by: -1) {
            var difference = Int(order[index]) - Int(s[index]) - borrow
            borrow = difference < 0 ? 1 : 0
            if difference < 0 { difference += 256 }
            negated[index] = UInt8(difference)
        }
        let smaller = s.lexicographicallyPrecedes(negated) ? s : negated
        return Data(r) + Data(smaller)
    }
}

/// Why an admin request was refused.
public enum AdminAuthError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A signature header is missing.
    case unsigned
    /// The key id is not known.
    case unknownKey(String)
    /// The key was revoked.
    case revokedKey(String)
    /// The stored public key cannot be read.
    case badKey
    /// The date header is not `yyyy-MM-ddTHH:mm:ssZ`.
    case malformedDate(String)
    /// The date is more than five minutes from the server's clock.
    case stale(String)
    /// The signature does not match the request.
    case badSignature
    /// The request was accepted before.
    case replayed

    /// The reason, for people.
    public var description: String {
        switch self {
        case .unsigned:
            "the request is not signed: send \(AdminRequestSignature.keyIdHeader), \(AdminRequestSignature.dateHeader) and \(AdminRequestSignature.signatureHeader)"
        case .unknownKey(let id): "no admin key \(id)"
        case .revokedKey(let id): "admin key \(id) is revoked"
        case .badKey: "the admin key on the server cannot be read"
        case .malformedDate(let date): "date \(date) is not yyyy-MM-ddTHH:mm:ssZ"
        case .stale(let date): "date \(date) is more than 5 minutes from the server's clock"
        case .badSignature: "the signature does not match the request"
        case .replayed: "this signed request was already used"
        }
    }
}

/// The CLI's half of a signing key: signs requests for the admin API.
public struct AdminRequestSigner: Sendable {
    /// The key id the server knows the public half by.
    public let keyId: String
    private let privateKey: P256.Signing.PrivateKey

    /// A signer from a PEM private key.
    public init(keyId: String, privateKeyPEM: String) throws {
        self.keyId = keyId
        self.privateKey = try P256.Signing.PrivateKey(pemRepresentation: privateKeyPEM)
    }

    /// The three headers for a request, signed at `date`.
    ///
    /// - Parameters:
    ///   - method: The HTTP method (`GET`, `POST`).
    ///   - host: The server's host as the Host header will carry it (`support.example.com`, `127.0.0.1:8080`).
    ///   - body: The request body.
    ///   - path: The path with its query; writes name their `environment` in it.
    ///   - date: When the request is signed.
    public func headers(method: String, host: String, body: some DataProtocol, path: String, at date: Date) throws
        -> [(name: String, value: String)]
    {
        let dateText = AdminRequestSignature.format(date)
        let signature = try privateKey.signature(
            for: AdminRequestSignature.message(
                method: method, host: host, environment: AdminRequestSignature.environment(ofPath: path),
                date: dateText, body: body, path: path))
        return [
            (AdminRequestSignature.keyIdHeader, keyId),
            (AdminRequestSignature.dateHeader, dateText),
            (AdminRequestSignature.signatureHeader, signature.derRepresentation.base64EncodedString()),
        ]
    }
}

/// A newly made signing key: its public half goes to the database, its private half to a file the CLI keeps.
public struct NewAdminKey: Sendable {
    /// The key record to store.
    public let record: AdminKey
    /// The private key, PEM; shown to no browser, written once to a file with owner-only permissions.
    public let privateKeyPEM: String

    /// Makes a key named `name`, for an owner or, with a grant limit, support.
    public init(name: String, at date: Date, role: AdminRole = .owner, grantLimit: Int64? = nil) {
        let key = P256.Signing.PrivateKey()
        let publicKey = key.publicKey
        let digest = SHA256.hash(data: publicKey.x963Representation)
        let id = Hex.encode(digest.prefix(12))
        record = AdminKey(
            id: id, name: name, publicKeyPEM: publicKey.pemRepresentation, createdAt: date, role: role,
            grantLimit: role == .support ? grantLimit : nil)
        privateKeyPEM = key.pemRepresentation
    }
}

/// The admin API's signed-request check, as a use case with no HTTP in it: the key known and not revoked, the
/// signature over the request's method, host, path, date and body verified within its window, and the signature
/// never seen before (kept in the store, so every instance refuses a replay).
public struct AdminRequestAuthenticator: Sendable {
    private let store: any CofferStore
    private let now: @Sendable () -> Date

    /// Creates the check over the store the keys and seen signatures are kept in.
    public init(store: any CofferStore, now: @escaping @Sendable () -> Date = { Date() }) {
        self.store = store
        self.now = now
    }

    /// Checks a signed request and answers the key that signed it.
    ///
    /// - Parameters:
    ///   - keyId: The `Coffer-Key-Id` header.
    ///   - date: The `Coffer-Date` header.
    ///   - signature: The `Coffer-Signature` header.
    ///   - method: The request's method.
    ///   - host: The request's host (`:authority`).
    ///   - path: The request's path and query.
    ///   - body: The request's body.
    /// - Throws: ``AdminAuthError`` when the request is not signed by a live key, the signature does not verify or
    ///   is stale, or it was seen before.
    public func authenticate(
        keyId: String, date: String, signature: String, method: String, host: String, path: String,
        body: some DataProtocol
    ) async throws -> AdminKey {
        guard let key = try await store.adminKey(id: keyId) else { throw AdminAuthError.unknownKey(keyId) }
        guard key.revokedAt == nil else { throw AdminAuthError.revokedKey(keyId) }
        let now = now()
        let digest = try AdminRequestSignature.verify(
            publicKeyPEM: key.publicKeyPEM, date: date, signature: signature, method: method, host: host, body: body,
            path: path, now: now)
        // Kept a day, far past the signature's own window: a clock stepped forward and back again (an NTP
        // correction) must not forget a signature its date would let through again.
        let fresh = try await store.recordSignature(
            digest, at: now, forgetBefore: now.addingTimeInterval(-max(2 * AdminRequestSignature.window, 86_400)))
        guard fresh else { throw AdminAuthError.replayed }
        return key
    }
}
