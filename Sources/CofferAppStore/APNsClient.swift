import AsyncHTTPClient
import CofferCore
import Crypto
import Foundation
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
import Synchronization

/// Which Apple Push Notification service a device token belongs to.
public enum APNsGateway: String, Sendable, Hashable, Codable, CaseIterable {
    /// `api.sandbox.push.apple.com`: apps built for development.
    case sandbox
    /// `api.push.apple.com`: App Store and TestFlight builds.
    case production

    /// Apple's host for the gateway.
    public var host: String {
        switch self {
        case .sandbox: "https://api.sandbox.push.apple.com"
        case .production: "https://api.push.apple.com"
        }
    }
}

/// What APNs answered to one push.
public enum APNsResult: Sendable, Equatable {
    /// APNs accepted it (200).
    case delivered
    /// The token is no longer valid (410 Unregistered, 400 BadDeviceToken): forget it, unless the device
    /// registered it again after `since` (Apple's 410 timestamp: when APNs last knew it invalid).
    case unregistered(reason: String, since: Date? = nil)
    /// APNs refused it, or did not answer after the retries (the status, 0 when unreachable, and Apple's
    /// reason).
    case failed(status: Int, reason: String)
}

/// Background pushes through Apple's APNs provider API: HTTP/2, token authentication with an ES256 JWT
/// (`kid` the key id, `iss` the team id, `iat`; made again every 30 minutes, as Apple allows between 20 and
/// 60), `apns-push-type: background`, `apns-priority: 5`, `apns-topic` the app's bundle id, and a body of
/// `{"aps":{"content-available":1}}` plus what the app should refresh. Retries 429 and 5xx answers (and an
/// expired provider token, once with a new one) with a short backoff.
public final class APNsClient: Sendable {
    /// The team's APNs key.
    public struct Credentials: Sendable {
        /// The key id (10 characters, from the Apple Developer site).
        public var keyId: String
        /// The team id.
        public var teamId: String
        /// The key.
        public var privateKey: P256.Signing.PrivateKey

        /// Credentials from the `.p8` PEM file the Developer site hands out.
        public init(keyId: String, teamId: String, privateKeyPEM: String) throws(APNsError) {
            do {
                self.init(
                    keyId: keyId, teamId: teamId,
                    privateKey: try P256.Signing.PrivateKey(pemRepresentation: privateKeyPEM))
            } catch {
                throw APNsError("the APNs key is not a P-256 PEM key: \(error)")
            }
        }

        /// Credentials from a key.
        public init(keyId: String, teamId: String, privateKey: P256.Signing.PrivateKey) {
            self.keyId = keyId
            self.teamId = teamId
            self.privateKey = privateKey
        }
    }

    private let httpClient: HTTPClient
    private let credentials: Credentials
    /// The app's bundle id (`apns-topic`).
    public let topic: String
    private let baseURL: String?
    /// The gateway every push goes to, whatever the device registered; `nil` for each token's own.
    public let gateway: APNsGateway?
    private let now: @Sendable () -> Date
    private let timeout: TimeAmount
    private let retryDelays: [Duration]
    private let timerClock: any TimerClock
    private let token = Mutex<(value: String, issuedAt: Date)?>(nil)

    /// A client.
    ///
    /// - Parameters:
    ///   - httpClient: The HTTP client (HTTP/2 is negotiated with APNs over TLS).
    ///   - credentials: The team's APNs key.
    ///   - topic: The app's bundle id.
    ///   - baseURL: Another host for both gateways (a local stand-in for tests); Apple's when `nil`.
    ///   - gateway: The gateway every push goes to (`apns.environment`); `nil` for the one each device
    ///     registered its token with.
    ///   - timeout: The deadline of one request.
    ///   - retryDelays: The waits before each retry of a 429 or 5xx answer.
    ///   - now: The clock.
    ///   - timerClock: The clock the waits are kept on (the system's; a test's own to step them).
    public init(
        httpClient: HTTPClient, credentials: Credentials, topic: String, baseURL: String? = nil,
        gateway: APNsGateway? = nil, timeout: TimeAmount = .seconds(10),
        retryDelays: [Duration] = [.milliseconds(500), .seconds(2)],
        now: @escaping @Sendable () -> Date = Date.init, timerClock: any TimerClock = SystemTimerClock()
    ) {
        self.timerClock = timerClock
        self.httpClient = httpClient
        self.credentials = credentials
        self.topic = topic
        self.baseURL = baseURL
        self.gateway = gateway
        self.timeout = timeout
        self.retryDelays = retryDelays
        self.now = now
    }

    /// Wakes the app on a device with a background push carrying `data` (under the `coffer` key).
    ///
    /// - Parameters:
    ///   - deviceToken: The device token, hex.
    ///   - gateway: The APNs it belongs to.
    ///   - data: What the app should refresh, e.g. `["type": "grant"]`.
    public func sendBackground(deviceToken: String, gateway: APNsGateway, data: [String: String]) async -> APNsResult {
        guard Self.isDeviceToken(deviceToken) else { return .unregistered(reason: "BadDeviceToken", since: nil) }
        let body: Data
        do {
            body = try JSONSerialization.data(
                withJSONObject: ["aps": ["content-available": 1], "coffer": data], options: [.sortedKeys])
        } catch {
            return .failed(status: 0, reason: "the payload does not encode: \(error)")
        }
        var renewedToken = false
        var attempt = 0
        while true {
            let (status, reason, since) = await post(
                deviceToken: deviceToken, gateway: self.gateway ?? gateway, body: body)
            switch (status, reason) {
            case (200, _):
                return .delivered
            case (410, _), (400, "BadDeviceToken"):
                // DeviceTokenNotForTopic is not here: it says the topic (a setting) is wrong as often as the
                // token, and forgetting every token over one wrong setting would silence every device.
                return .unregistered(reason: reason.isEmpty ? "Unregistered" : reason, since: since)
            case (403, "ExpiredProviderToken") where !renewedToken:
                renewedToken = true
                token.withLock { $0 = nil }
                continue
            case (429, _), (500...599, _), (0, _):
                guard attempt < retryDelays.count else { return .failed(status: status, reason: reason) }
                try? await timerClock.sleep(for: retryDelays[attempt])
                attempt += 1
            default:
                return .failed(status: status, reason: reason)
            }
        }
    }

    /// Whether `text` can be a device token: hex, 16 to 100 bytes (Apple's tokens are 32 today; the length may
    /// change, so Apple asks providers not to fix it).
    public static func isDeviceToken(_ text: String) -> Bool {
        (32...200).contains(text.utf8.count) && text.utf8.count % 2 == 0
            && text.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) || (65...70).contains($0) }
    }

    /// The provider token: an ES256 JWT of the team's key, made again after 30 minutes.
    public func providerToken() throws(APNsError) -> String {
        let current = now()
        if let cached = token.withLock({ $0 }), current.timeIntervalSince(cached.issuedAt) < 1_800,
            current >= cached.issuedAt
        {
            return cached.value
        }
        let claims: [String: any Sendable] = [
            "iss": credentials.teamId, "iat": Int64(current.timeIntervalSince1970),
        ]
        do {
            let value = try CompactJWT.sign(
                header: ["kid": credentials.keyId], claims: claims, key: credentials.privateKey)
            token.withLock { $0 = (value, current) }
            return value
        } catch {
            throw APNsError("cannot sign the provider token: \(error)")
        }
    }

    /// One request, answered within ``timeout`` (the answer's head and body both): the status, Apple's
    /// reason, and the 410 answer's timestamp.
    private func post(deviceToken: String, gateway: APNsGateway, body: Data) async -> (Int, String, Date?) {
        let bearer: String
        do {
            bearer = try providerToken()
        } catch {
            return (0, error.description, nil)
        }
        var request = HTTPClientRequest(url: "\(baseURL ?? gateway.host)/3/device/\(deviceToken.lowercased())")
        request.method = .POST
        request.headers.add(name: "authorization", value: "bearer \(bearer)")
        request.headers.add(name: "apns-push-type", value: "background")
        request.headers.add(name: "apns-priority", value: "5")
        request.headers.add(name: "apns-topic", value: topic)
        request.headers.add(
            name: "apns-expiration", value: String(Int64(now().timeIntervalSince1970) + 3_600))
        request.headers.add(name: "content-type", value: "application/json")
        request.body = .bytes(ByteBuffer(data: body))
        let client = httpClient
        let deadline = timeout
        let prepared = request
        do {
            return try await withThrowingTaskGroup(of: (Int, String, Date?).self) { group in
                group.addTask {
                    let response = try await client.execute(prepared, timeout: deadline)
                    let answer = try await response.body.collect(upTo: 64 * 1_024)
                    let json = try? JSONSerialization.jsonObject(with: Data(buffer: answer)) as? [String: Any]
                    let since = (json?["timestamp"] as? NSNumber).map {
                        Date(timeIntervalSince1970: $0.doubleValue / 1_000)
                    }
                    return (Int(response.status.code), json?["reason"] as? String ?? "", since)
                }
                group.addTask {
                    try await Task.sleep(for: .nanoseconds(deadline.nanoseconds))
                    throw APNsError("APNs did not answer within \(deadline.nanoseconds / 1_000_000_000) s")
                }
                defer { group.cancelAll() }
                return try await group.next() ?? (0, "no answer", nil)
            }
        } catch {
            return (0, "APNs is out of reach: \(error)", nil)
        }
    }
}

/// Why an APNs key or token could not be used.
public struct APNsError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What is wrong.
    public let description: String

    /// An error.
    public init(_ description: String) { self.description = description }
}
