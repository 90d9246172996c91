import CofferAPI
import CofferCore
import CofferStore
import Foundation
import Logging
import ServiceLifecycle
import Synchronization

/// Carries events between instances that share a database: what this instance's ``EventHub`` publishes goes
/// out through the ``EventBroadcast`` (queued, so a request never waits on it), and what other instances
/// publish comes in to this hub's open streams. The relay sends itself a heartbeat every `heartbeat`; a
/// listening connection that hears nothing, not even that, for three heartbeats (a half-open connection) is
/// dropped, and listening starts again a second after any drop. Events are hints either way: a lost one costs
/// the app only a later refresh.
public final class EventRelay: Service, Sendable {
    private let broadcast: any EventBroadcast
    private let logger: Logger
    private let heartbeat: Duration
    private let clock: any TimerClock
    private let lastHeard = Mutex(Duration.zero)
    /// This instance, in the messages it sends.
    public let origin = UUID()
    private let hub = Mutex<EventHub?>(nil)
    private let outbound: AsyncStream<BroadcastMessage>
    private let continuation: AsyncStream<BroadcastMessage>.Continuation

    /// A relay over `broadcast`, checking its listening connection every `heartbeat` on `clock`.
    public init(
        broadcast: any EventBroadcast, logger: Logger, heartbeat: Duration = .seconds(15),
        clock: any TimerClock = SystemTimerClock()
    ) {
        self.clock = clock
        self.broadcast = broadcast
        self.logger = logger
        self.heartbeat = heartbeat
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
                        try await cancelWhenGracefulShutdown { try await self.listenWhileAlive() }
                    } catch {
                        guard !Task.isCancelled && !Task.isShuttingDownGracefully else { return }
                        self.logger.warning("events: listening stopped (\(error)); listening again in a second")
                    }
                    try? await self.clock.sleep(for: .seconds(1))
                }
            }
        }
    }

    /// Listens until the connection drops or falls silent for three heartbeats.
    private func listenWhileAlive() async throws {
        lastHeard.withLock { $0 = clock.elapsed }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                try await self.broadcast.listen { message in await self.receive(message) }
                throw EventRelayError("the listening connection ended")
            }
            group.addTask {
                while true {
                    try await self.clock.sleep(for: self.heartbeat)
                    try? await self.broadcast.broadcast(
                        BroadcastMessage(origin: self.origin, user: self.origin, kind: "heartbeat", key: nil))
                    if self.clock.elapsed - self.lastHeard.withLock({ $0 }) > self.heartbeat * 3 {
                        throw EventRelayError("nothing heard for three heartbeats")
                    }
                }
            }
            defer { group.cancelAll() }
            try await group.next()
        }
    }

    private func receive(_ message: BroadcastMessage) async {
        lastHeard.withLock { $0 = clock.elapsed }
        guard message.origin != origin, let kind = ServerEventKind(rawValue: message.kind),
            let hub = hub.withLock({ $0 })
        else { return }
        await hub.deliver(ServerEventBody(type: kind, key: message.key), to: message.user)
    }
}

/// Why the relay listens again.
struct EventRelayError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
