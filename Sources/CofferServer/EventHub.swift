import CofferAPI
import Foundation

/// Pushes what changed for a user to that user's open `GET /v1/me/events` streams in this process.
///
/// Events are hints: the app refetches what an event names, so a missed event (a stream opened on
/// another server process, a dropped connection) costs only a later refresh.
actor EventHub {
    private var subscribers: [UUID: [UUID: AsyncStream<ServerEventBody>.Continuation]] = [:]

    /// Opens a stream of a user's events; it ends when the hub removes it or the reader stops.
    func subscribe(user: UUID) -> AsyncStream<ServerEventBody> {
        let (stream, continuation) = AsyncStream<ServerEventBody>.makeStream(bufferingPolicy: .bufferingNewest(64))
        let id = UUID()
        subscribers[user, default: [:]][id] = continuation
        continuation.onTermination = { [weak self] _ in
            Task { await self?.remove(user: user, id: id) }
        }
        return stream
    }

    /// Sends an event to every open stream of the user.
    func publish(_ event: ServerEventBody, to user: UUID) {
        for continuation in subscribers[user]?.values ?? [:].values { continuation.yield(event) }
    }

    /// How many streams are open, for tests and metrics.
    var openStreams: Int { subscribers.values.reduce(0) { $0 + $1.count } }

    private func remove(user: UUID, id: UUID) {
        subscribers[user]?[id] = nil
        if subscribers[user]?.isEmpty == true { subscribers[user] = nil }
    }
}
