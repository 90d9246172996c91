import CofferAPI
import Foundation

/// Pushes what changed for a user to that user's open `GET /v1/me/events` streams in this process.
///
/// Events are hints: the app refetches what an event names, so a missed event (a stream opened on
/// another server process, a dropped connection) costs only a later refresh.
public actor EventHub {
    private var subscribers: [UUID: [UUID: AsyncStream<ServerEventBody>.Continuation]] = [:]
    /// The most streams one user may hold open (an app on a few devices).
    public nonisolated let perUser: Int
    /// The most streams open at once on this server.
    public nonisolated let total: Int

    /// Called with every event published here (not those only relayed from another instance): the push
    /// notifier, the relay to other instances.
    private let onPublish: @Sendable (ServerEventBody, UUID, Bool) -> Void

    /// A hub holding at most `perUser` streams per user and `total` in all, telling `onPublish` of each event
    /// published here.
    public init(
        perUser: Int = 4, total: Int = 1_000,
        onPublish: @escaping @Sendable (ServerEventBody, UUID, Bool) -> Void = { _, _, _ in }
    ) {
        self.perUser = perUser
        self.total = total
        self.onPublish = onPublish
    }

    /// Why a stream was not opened.
    public enum Refusal: Error {
        /// The user has ``perUser`` streams open.
        case userFull
        /// The server has ``total`` streams open.
        case serverFull
    }

    /// Opens a stream of a user's events; it ends when the hub removes it or the reader stops.
    ///
    /// - Throws: ``Refusal`` when the user or the server has as many streams open as allowed.
    public func subscribe(user: UUID) throws(Refusal) -> AsyncStream<ServerEventBody> {
        guard (subscribers[user]?.count ?? 0) < perUser else { throw .userFull }
        guard openStreams < total else { throw .serverFull }
        let (stream, continuation) = AsyncStream<ServerEventBody>.makeStream(bufferingPolicy: .bufferingNewest(64))
        let id = UUID()
        subscribers[user, default: [:]][id] = continuation
        continuation.onTermination = { [weak self] _ in
            Task { await self?.remove(user: user, id: id) }
        }
        return stream
    }

    /// Sends an event to every open stream of the user, and to ``onPublish`` (a push, other instances).
    ///
    /// - Parameter wakes: Whether the user's sleeping apps should hear it (a background push); by default a
    ///   grant or an adjustment (a refund, support's edit in the server wallet) does, and what the app did
    ///   itself (its backup) does not.
    public func publish(_ event: ServerEventBody, to user: UUID, wakes: Bool? = nil) {
        deliver(event, to: user)
        onPublish(event, user, wakes ?? PushNotifier.wakes(event.type))
    }

    /// Sends an event another instance published to this instance's open streams of the user.
    public func deliver(_ event: ServerEventBody, to user: UUID) {
        for continuation in subscribers[user]?.values ?? [:].values { continuation.yield(event) }
    }

    /// How many streams are open, for tests and metrics.
    public var openStreams: Int { subscribers.values.reduce(0) { $0 + $1.count } }

    private func remove(user: UUID, id: UUID) {
        subscribers[user]?[id] = nil
        if subscribers[user]?.isEmpty == true { subscribers[user] = nil }
    }
}
