import AsyncHTTPClient
import CofferAppStore
import Foundation
import NIOCore
import NIOFoundationCompat

/// A notification on its way to the app's server.
public struct OutgoingNotification: Sendable, Equatable {
    /// The notification's `notificationUUID`.
    public var uuid: String
    /// The signed payload Apple posts as `{"signedPayload": ...}`.
    public var signedPayload: String
    /// Its `notificationType`, e.g. `REFUND`.
    public var type: String = ""
    /// The transaction it is about, if any.
    public var transactionId: String?
}

/// Posts every notification of a ``SimulatedAppStore`` to the app's server URL as Apple does: a JSON body
/// `{"signedPayload": ...}`, success on HTTP 200-206, otherwise retried 1, 12, 24, 48 and 72 hours after
/// the previous attempt (divided by `timeScale`, so tests need not wait days). Each attempt is recorded
/// and shows in Get Notification History.
public struct NotificationDelivery: Sendable {
    /// Apple's retry delays after a failed attempt, in hours.
    public static let retryHours: [Double] = [1, 12, 24, 48, 72]

    let store: SimulatedAppStore
    let url: String
    let httpClient: HTTPClient
    let timeScale: Double
    let attemptTimeout: TimeAmount

    /// Creates a delivery service.
    ///
    /// - Parameters:
    ///   - store: Where notifications come from and attempts are recorded.
    ///   - url: The app server's notification URL.
    ///   - httpClient: The client to post with; the caller shuts it down.
    ///   - timeScale: How many times faster than Apple retries happen (1 = Apple's real schedule).
    ///   - attemptTimeout: How long one attempt may take.
    public init(
        store: SimulatedAppStore, url: String, httpClient: HTTPClient, timeScale: Double = 1,
        attemptTimeout: TimeAmount = .seconds(10)
    ) {
        self.store = store
        self.url = url
        self.httpClient = httpClient
        self.timeScale = max(timeScale, 1)
        self.attemptTimeout = attemptTimeout
    }

    /// Delivers notifications until the task is cancelled.
    public func run() async {
        let feed = await store.notificationFeed()
        await withDiscardingTaskGroup { group in
            for await notification in feed {
                group.addTask { await deliver(notification) }
            }
        }
    }

    /// Delivers one notification, retrying on Apple's schedule; returns whether it arrived.
    @discardableResult
    func deliver(_ notification: OutgoingNotification) async -> Bool {
        for attempt in 0...Self.retryHours.count {
            if attempt > 0 {
                let seconds = Self.retryHours[attempt - 1] * 3_600 / timeScale
                do {
                    try await Task.sleep(for: .milliseconds(Int64(seconds * 1_000)))
                } catch {
                    return false
                }
            }
            let result = await post(notification)
            await store.recordAttempt(uuid: notification.uuid, result: result)
            if result == .success { return true }
        }
        return false
    }

    private func post(_ notification: OutgoingNotification) async -> SendAttemptResult {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        let body =
            (try? JSONSerialization.data(withJSONObject: ["signedPayload": notification.signedPayload])) ?? Data()
        request.body = .bytes(ByteBuffer(data: body))
        do {
            let response = try await httpClient.execute(request, timeout: attemptTimeout)
            _ = try? await response.body.collect(upTo: 1 << 16)
            return (200...206).contains(response.status.code) ? .success : .unsuccessfulHttpResponseCode
        } catch let error as HTTPClientError where error == .deadlineExceeded || error == .readTimeout {
            return .timedOut
        } catch {
            return .noResponse
        }
    }
}
