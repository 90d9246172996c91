import CofferAPI
import CofferAppStore
import CofferCore
import CofferStore
import Foundation
import Logging
import ServiceLifecycle

/// Sends a background push (APNs) to a device: what ``PushNotifier`` needs of ``APNsClient``.
public protocol PushSender: Sendable {
    /// Wakes the app on the device whose token this is, with `data` for it to act on.
    func sendBackground(deviceToken: String, gateway: APNsGateway, data: [String: String]) async -> APNsResult
}

extension APNsClient: PushSender {}

/// Wakes a customer's sleeping apps when support grants or edits a balance, or a refund touches the customer:
/// each such event the ``EventHub`` publishes is queued here and sent, as a background push, to every device
/// token the user registered. A token APNs no longer knows (410, BadDeviceToken) is forgotten. Pushes are
/// hints, like the event stream's events: the app refetches what one names, so a lost one costs only a later
/// refresh, and the queue drops the oldest when it overflows instead of holding requests up.
public final class PushNotifier: Service, Sendable {
    private let store: any CofferStore
    private let sender: any PushSender
    private let environment: AppStoreEnvironment
    private let logger: Logger
    private let queue: AsyncStream<(UUID, ServerEventBody)>
    private let continuation: AsyncStream<(UUID, ServerEventBody)>.Continuation

    /// A notifier sending through `sender` to the tokens `store` holds for users of `environment`.
    public init(store: any CofferStore, sender: any PushSender, environment: AppStoreEnvironment, logger: Logger) {
        self.store = store
        self.sender = sender
        self.environment = environment
        self.logger = logger
        (queue, continuation) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(10_000))
    }

    /// Whether an event of this kind wakes the apps unless its publisher says otherwise: a grant, an adjustment (a
    /// refund or reversal, support's balance edit in the server wallet), and a parent's withdrawn consent. A backup
    /// wakes them
    /// only when support edited it (the device wallet's balance edit); the device's own backup and the
    /// entitlements it sees on its next launch do not.
    public static func wakes(_ kind: ServerEventKind) -> Bool {
        kind == .grant || kind == .adjustment || kind == .consentRescinded
    }

    /// Queues a push for the user; returns at once.
    public func enqueue(_ event: ServerEventBody, to user: UUID) { continuation.yield((user, event)) }

    /// Sends what is queued until the server shuts down: a graceful shutdown ends the queue, and what it
    /// holds then is still sent.
    public func run() async throws {
        await withGracefulShutdownHandler {
            for await (user, event) in queue {
                // Cancelled (not a graceful shutdown): what is still queued is dropped, as pushes are best effort.
                if Task.isCancelled { break }
                await deliver(event, to: user)
            }
        } onGracefulShutdown: {
            self.continuation.finish()
        }
    }

    /// Sends one event to every device of the user, now.
    public func deliver(_ event: ServerEventBody, to user: UUID) async {
        let tokens: [PushToken]
        do {
            tokens = try await store.pushTokens(owner: user, environment: environment)
        } catch {
            logger.warning("push: cannot read the push tokens of \(user): \(error)")
            return
        }
        var data = ["type": event.type.rawValue]
        if let key = event.key { data["key"] = key }
        for token in tokens {
            let gateway: APNsGateway = token.gateway == .sandbox ? .sandbox : .production
            switch await sender.sendBackground(deviceToken: token.token, gateway: gateway, data: data) {
            case .delivered:
                logger.debug("push: \(event.type.rawValue) sent to a device of \(user)")
            case .unregistered(let reason, let since):
                // A token the app registered again after APNs last knew it invalid is kept.
                if let since, token.updatedAt > since { continue }
                logger.info("push: APNs no longer knows a device of \(user) (\(reason)): its token is forgotten")
                _ = try? await store.deletePushToken(token.token, owner: user)
            case .failed(let status, let reason):
                logger.warning("push: APNs refused a push to a device of \(user): \(status) \(reason)")
            }
        }
    }
}
