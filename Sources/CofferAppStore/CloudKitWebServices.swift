import AsyncHTTPClient
import CofferCore
import Crypto
import Foundation
import NIOCore
import NIOFoundationCompat
import NIOHTTP1

/// CloudKit Web Services' server-to-server key: made with `openssl ecparam -name prime256v1 -genkey -noout`, its
/// public half registered in CloudKit Console, which gives the key id.
public struct CloudKitKey: Sendable {
    /// The key id CloudKit Console shows.
    public var keyId: String
    /// The private key.
    public var privateKey: P256.Signing.PrivateKey

    /// A key from its id and private key.
    public init(keyId: String, privateKey: P256.Signing.PrivateKey) {
        self.keyId = keyId
        self.privateKey = privateKey
    }

    /// A key from its id and a PEM file (`EC PRIVATE KEY`, as openssl writes it, or PKCS #8 `PRIVATE KEY`).
    public init(keyId: String, pemFile path: String) throws(CloudKitError) {
        guard !keyId.isEmpty, keyId.count <= 128, keyId.allSatisfy({ $0.isASCII && !$0.isWhitespace }) else {
            throw .invalidRequest("the key id must be the one CloudKit Console shows (no spaces)")
        }
        let text: String
        do {
            text = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw .invalidRequest("cannot read the server-to-server key \(path): \(error.localizedDescription)")
        }
        do {
            self.init(keyId: keyId, privateKey: try P256.Signing.PrivateKey(pemRepresentation: text))
        } catch {
            throw .invalidRequest("\(path) is not a P-256 private key in PEM (openssl ecparam -name prime256v1)")
        }
    }
}

/// The server-to-server request signature CloudKit Web Services checks: three headers, the signature an ECDSA
/// P-256 SHA-256 one (DER, base64) over `date:base64(sha256(body)):subpath`, where the date is ISO 8601 in UTC
/// without fractions and the subpath is the URL's path from `/database/` on.
public enum CloudKitSignature {
    /// The key id header.
    public static let keyIdHeader = "X-Apple-CloudKit-Request-KeyID"
    /// The date header.
    public static let dateHeader = "X-Apple-CloudKit-Request-ISO8601Date"
    /// The signature header.
    public static let signatureHeader = "X-Apple-CloudKit-Request-SignatureV1"
    /// How far a request's date may be from the receiver's clock.
    public static let tolerance: TimeInterval = 600

    /// The date as the header carries it: `2026-11-26T09:30:00Z`.
    public static func dateText(_ date: Date) -> String {
        date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: false, timeZone: .gmt))
    }

    /// What is signed.
    public static func message(date: String, body: Data, subpath: String) -> Data {
        Data("\(date):\(Data(SHA256.hash(data: body)).base64EncodedString()):\(subpath)".utf8)
    }

    /// The three headers for a request.
    public static func headers(key: CloudKitKey, body: Data, subpath: String, at date: Date) throws -> [(
        String, String
    )] {
        let dateText = dateText(date)
        let signature = try key.privateKey.signature(for: message(date: dateText, body: body, subpath: subpath))
        return [
            (keyIdHeader, key.keyId), (dateHeader, dateText),
            (signatureHeader, signature.derRepresentation.base64EncodedString()),
        ]
    }

    /// Checks a request's signature as CloudKit does: a known key id, a date within ``tolerance`` of `now`, and
    /// a signature by that key over this body and subpath.
    ///
    /// - Returns: Why the request is refused, or `nil` when it is signed.
    public static func refusal(
        header: (String) -> String?, body: Data, subpath: String, keys: [String: P256.Signing.PublicKey], now: Date
    ) -> String? {
        guard let keyId = header(keyIdHeader), let key = keys[keyId] else { return "unknown key id" }
        guard let dateText = header(dateHeader), dateText.count == 20,
            let date = try? Date(dateText, strategy: Date.ISO8601FormatStyle(timeZone: .gmt))
        else { return "missing or malformed \(dateHeader)" }
        guard abs(date.timeIntervalSince(now)) <= tolerance else { return "the request's date is too far from now" }
        guard let text = header(signatureHeader), text.count <= 200, let der = Data(base64Encoded: text),
            let signature = try? P256.Signing.ECDSASignature(derRepresentation: der),
            key.isValidSignature(signature, for: message(date: dateText, body: body, subpath: subpath))
        else { return "the signature does not verify" }
        return nil
    }
}

/// Why a CloudKit Web Services call failed.
public enum CloudKitError: Error, Sendable, CustomStringConvertible {
    /// CloudKit answered an error (`AUTHENTICATION_FAILED`, `NOT_FOUND`, ...).
    case server(httpStatus: Int, code: String?, reason: String?)
    /// The connection failed or timed out.
    case transport(String)
    /// The answer could not be read, or broke a bound.
    case malformed(String)
    /// The request could not be made (a bad key, a bad container name).
    case invalidRequest(String)

    /// A one-line explanation.
    public var description: String {
        switch self {
        case .server(let status, let code, let reason):
            "CloudKit answered HTTP \(status)" + (code.map { " \($0)" } ?? "") + (reason.map { ": \($0)" } ?? "")
        case .transport(let detail): "CloudKit unreachable: \(detail)"
        case .malformed(let detail): "CloudKit answered something unreadable: \(detail)"
        case .invalidRequest(let detail): detail
        }
    }
}

/// One field of a CloudKit record, as Web Services writes it: `{"value": ..., "type": "INT64"}`.
public enum CloudKitValue: Codable, Sendable, Hashable {
    /// `INT64` (and `TIMESTAMP`, in milliseconds since 1970).
    case int64(Int64, type: String)
    /// `STRING`.
    case string(String)
    /// `DOUBLE`.
    case double(Double)
    /// Any other type, kept as sent.
    case other(JSONValue, type: String?)

    private enum Keys: String, CodingKey { case value, type }

    /// Reads a field: numbers of an integer type are read exactly, into Int64's range.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        let type = try container.decodeIfPresent(String.self, forKey: .type)
        switch type {
        case "INT64", "TIMESTAMP": self = .int64(try container.decode(Int64.self, forKey: .value), type: type ?? "")
        case "STRING": self = .string(try container.decode(String.self, forKey: .value))
        case "DOUBLE": self = .double(try container.decode(Double.self, forKey: .value))
        default:
            if let number = try? container.decode(Int64.self, forKey: .value) {
                self = .int64(number, type: "INT64")
            } else if let text = try? container.decode(String.self, forKey: .value) {
                self = .string(text)
            } else {
                self = .other(try container.decode(JSONValue.self, forKey: .value), type: type)
            }
        }
    }

    /// Writes the field as Web Services does.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        switch self {
        case .int64(let value, let type):
            try container.encode(value, forKey: .value)
            try container.encode(type, forKey: .type)
        case .string(let value):
            try container.encode(value, forKey: .value)
            try container.encode("STRING", forKey: .type)
        case .double(let value):
            try container.encode(value, forKey: .value)
            try container.encode("DOUBLE", forKey: .type)
        case .other(let value, let type):
            try container.encode(value, forKey: .value)
            try container.encodeIfPresent(type, forKey: .type)
        }
    }

    /// The integer, for `INT64` and `TIMESTAMP` fields.
    public var int64: Int64? {
        if case .int64(let value, _) = self { value } else { nil }
    }

    /// The text, for `STRING` fields.
    public var string: String? {
        if case .string(let value) = self { value } else { nil }
    }
}

/// A record as CloudKit Web Services answers it.
public struct CloudKitRecord: Codable, Sendable, Hashable {
    /// The record's name (its id in the zone).
    public var recordName: String
    /// The record type, e.g. `BankrollBackup`.
    public var recordType: String?
    /// The fields.
    public var fields: [String: CloudKitValue]?
    /// When and by whom the record was created (`timestamp`, `userRecordName`).
    public var created: Stamp?
    /// When and by whom it was last changed.
    public var modified: Stamp?

    /// A record's creation or change.
    public struct Stamp: Codable, Sendable, Hashable {
        /// Milliseconds since 1970.
        public var timestamp: Int64?
        /// The user record name of whoever did it.
        public var userRecordName: String?

        /// A stamp.
        public init(timestamp: Int64?, userRecordName: String?) {
            self.timestamp = timestamp
            self.userRecordName = userRecordName
        }
    }

    /// A record.
    public init(
        recordName: String, recordType: String?, fields: [String: CloudKitValue]?, created: Stamp? = nil,
        modified: Stamp? = nil
    ) {
        self.recordName = recordName
        self.recordType = recordType
        self.fields = fields
        self.created = created
        self.modified = modified
    }
}

/// A `records/query` request.
public struct CloudKitQueryRequest: Codable, Sendable {
    /// The query.
    public struct Query: Codable, Sendable {
        /// The record type.
        public var recordType: String
    }
    /// The zone (`_defaultZone`).
    public struct Zone: Codable, Sendable {
        /// The zone's name.
        public var zoneName: String
    }
    /// The zone.
    public var zoneID: Zone
    /// At most this many records a page (CloudKit caps it at 200).
    public var resultsLimit: Int
    /// The query.
    public var query: Query
    /// Where the previous page ended.
    public var continuationMarker: String?

    /// A query for every record of a type in the default zone.
    public init(recordType: String, resultsLimit: Int = 200, continuationMarker: String? = nil) {
        zoneID = Zone(zoneName: "_defaultZone")
        self.resultsLimit = resultsLimit
        query = Query(recordType: recordType)
        self.continuationMarker = continuationMarker
    }
}

/// A `records/query` answer.
public struct CloudKitQueryResponse: Codable, Sendable {
    /// The page's records.
    public var records: [CloudKitRecord]
    /// Present when there are more.
    public var continuationMarker: String?

    /// An answer.
    public init(records: [CloudKitRecord], continuationMarker: String?) {
        self.records = records
        self.continuationMarker = continuationMarker
    }
}

/// CloudKit Web Services' error answer.
public struct CloudKitErrorBody: Codable, Sendable {
    /// The request's id.
    public var uuid: String?
    /// The error code, e.g. `AUTHENTICATION_FAILED`.
    public var serverErrorCode: String?
    /// Why, for people.
    public var reason: String?

    /// An error answer.
    public init(uuid: String?, serverErrorCode: String?, reason: String?) {
        self.uuid = uuid
        self.serverErrorCode = serverErrorCode
        self.reason = reason
    }
}

/// Reads a container's public database through CloudKit Web Services with a server-to-server key.
public struct CloudKitClient: Sendable {
    /// Apple's address.
    public static let appleURL = "https://api.apple-cloudkit.com"
    /// The most records read of one type: a bound on memory for an answer that never ends.
    public static let maximumRecords = 5_000_000

    private let httpClient: HTTPClient
    private let baseURL: String
    private let container: String
    private let environment: String
    private let key: CloudKitKey
    private let timeout: Duration
    private let now: @Sendable () -> Date
    private let timerClock: any TimerClock

    /// A client.
    ///
    /// - Parameters:
    ///   - container: The container id, `iCloud.` and the app's.
    ///   - environment: `development` or `production`.
    ///   - baseURL: Apple's address, or the simulator's.
    ///   - timeout: The longest wait for one page.
    ///   - now: The clock the requests are dated by.
    ///   - timerClock: The clock the pauses between retries are kept on (the system's; a test's own to step them).
    public init(
        httpClient: HTTPClient, container: String, environment: String, key: CloudKitKey,
        baseURL: String = CloudKitClient.appleURL, timeout: Duration = .seconds(30),
        now: @escaping @Sendable () -> Date = { Date() }, timerClock: any TimerClock = SystemTimerClock()
    ) throws(CloudKitError) {
        self.timerClock = timerClock
        try Self.check(container: container, environment: environment)
        self.httpClient = httpClient
        self.baseURL = baseURL.hasSuffix("/") ? String(baseURL.dropLast()) : baseURL
        self.container = container
        self.environment = environment
        self.key = key
        self.timeout = timeout
        self.now = now
    }

    /// Checks a container id (`iCloud.` and the app's) and a CloudKit environment (`development`, `production`).
    static func check(container: String, environment: String) throws(CloudKitError) {
        guard container.hasPrefix("iCloud."), container.count <= 255,
            container.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "._-".contains($0)) })
        else { throw .invalidRequest("the container id must be iCloud. and the app's, e.g. iCloud.com.example.app") }
        guard ["development", "production"].contains(environment) else {
            throw .invalidRequest("the CloudKit environment is development or production")
        }
    }

    /// A `Duration` as AsyncHTTPClient's deadline.
    static func timeAmount(_ duration: Duration) -> TimeAmount {
        .nanoseconds(duration.components.seconds * 1_000_000_000 + duration.components.attoseconds / 1_000_000_000)
    }

    /// Every record of a type in the public database's default zone, following the continuation markers.
    public func allRecords(ofType recordType: String) async throws(CloudKitError) -> [CloudKitRecord] {
        var records: [CloudKitRecord] = []
        var marker: String?
        var seen: Set<String> = []
        repeat {
            let page = try await queryRetrying(CloudKitQueryRequest(recordType: recordType, continuationMarker: marker))
            records += page.records
            guard records.count <= Self.maximumRecords else {
                throw .malformed("more than \(Self.maximumRecords) \(recordType) records")
            }
            marker = page.continuationMarker
            if let marker, !seen.insert(marker).inserted {
                throw .malformed("CloudKit answered the same continuation marker twice")
            }
        } while marker != nil
        return records
    }

    /// One page, asked up to four times while CloudKit throttles (429, 503) or does not answer: 1, 2, 4 s apart.
    func queryRetrying(_ request: CloudKitQueryRequest) async throws(CloudKitError) -> CloudKitQueryResponse {
        var wait = Duration.seconds(1)
        for _ in 0..<3 {
            do {
                return try await query(request)
            } catch {
                switch error {
                case .server(let status, _, _) where status == 429 || status >= 500: break
                case .transport: break
                default: throw error
                }
            }
            do {
                try await timerClock.sleep(for: wait)
            } catch {
                throw .transport("cancelled")
            }
            wait *= 2
        }
        return try await query(request)
    }

    /// One `records/query` page.
    public func query(_ request: CloudKitQueryRequest) async throws(CloudKitError) -> CloudKitQueryResponse {
        let subpath = "/database/1/\(container)/\(environment)/public/records/query"
        let body: Data
        do {
            body = try JSONEncoder().encode(request)
        } catch {
            throw .invalidRequest("cannot encode the query: \(error)")
        }
        var http = HTTPClientRequest(url: baseURL + subpath)
        http.method = .POST
        http.headers.add(name: "Content-Type", value: "application/json")
        http.headers.add(name: "User-Agent", value: "Coffer")
        do {
            for (name, value) in try CloudKitSignature.headers(key: key, body: body, subpath: subpath, at: now()) {
                http.headers.add(name: name, value: value)
            }
        } catch {
            throw .invalidRequest("cannot sign the request: \(error)")
        }
        http.body = .bytes(ByteBuffer(data: body))
        let status: Int
        let bytes: ByteBuffer
        do {
            let response = try await httpClient.execute(http, timeout: Self.timeAmount(timeout))
            status = Int(response.status.code)
            bytes = try await response.body.collect(upTo: 64 * 1024 * 1024)
        } catch {
            throw .transport("\(baseURL + subpath): \(error)")
        }
        let data = Data(buffer: bytes)
        guard status == 200 else {
            let payload = try? AppleJSON.decode(CloudKitErrorBody.self, from: data)
            throw .server(httpStatus: status, code: payload?.serverErrorCode, reason: payload?.reason)
        }
        do {
            return try AppleJSON.decode(CloudKitQueryResponse.self, from: data)
        } catch {
            throw .malformed("\(error)")
        }
    }
}
