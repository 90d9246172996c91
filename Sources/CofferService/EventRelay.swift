import CofferAPI
import CofferStore
import Foundation
import Logging
import ServiceLifecycle
import Synchronization

/// Carries events between instances that share a database: what this instance's ``EventHub`` publishes goes
/// out through the ``EventBroadcast`` (queued, so a request never waits on it), and what other instances
/// publish comes in to this hub's open streams. Listening starts again a second after the connection drops.
/// Events are hints either way: a lost one costs the app only a later refresh.
public final class EventRelay: Service, Sendable {
    private let broadcast: any EventBroadcast
    private let logger: Logger
    /// This instance, in the messages it sends.
    public let origin = UUID()
    private let hub = Mutex<EventHub?>(nil)
    private let outbound: AsyncStream<BroadcastMessage>
    private let continuation: AsyncStream<BroadcastMessage>.Continuation

    /// A relay over `broadcast`.
    public init(broadcast: any EventBroadcast, logger: Logger) {
        self.broadcast = broadcast
        self.logger = logger
        (outbound, continuation) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(10_000))
    }

    /// The hub incoming events are delivered to.
    public func connect(_ hub: EventHub) { self.hub.withLock { $0 = hub } }

    /// Queues an event this instance published for the others; returns at once.
    public func send(_ event: ServerEventBody, to user: UUID) {
        continuation.yield(BroadcastMessage(origin: origin, user: user, kind: event.type.rawValue, key: event.key))
    }

    /// Sends and hears events until the server shuts down.
    public func run() async throws {
        await withDiscardingTaskGroup { group in
            group.addTask {
                for await message in self.outbound.cancelOnGracefulShutdown() {
                    do {
                        try await self.broadcast.broadcast(message)
                    } catch {
                        self.logger.warning("events: cannot tell the other instances: \(error)")
                    }
                }
            }
            group.addTask {
                while !Task.isCancelled && !Task.isShuttingDownGracefully {
                    do {
                        try await cancelWhenGracefulShutdown {
                            try await self.broadcast.listen { message in await self.receive(message) }
                        }
                    } catch {
                        guard !Task.isCancelled && !Task.isShuttingDownGracefully else { return }
                        self.logger.warning("events: listening stopped (\(error)); listening again in a second")
                        try? await Task.sleep(for: .seconds(1))
                    }
                }
            }
        }
    }

    private func receive(_ message: BroadcastMessage) async {
        guard message.origin != origin, let kind = ServerEventKind(rawValue: message.kind),
            let hub = hub.withLock({ $0 })
        else { return }
        await hub.deliver(ServerEventBody(type: kind, key: message.key), to: message.user)
    }
}
