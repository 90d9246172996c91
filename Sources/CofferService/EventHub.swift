import CofferAPI
import Foundation

/// Pushes what changed for a user to that user's open `GET /v1/me/events` streams in this process.
///
/// Events are hints: the app refetches what an event names, so a missed event (a stream opened on
/// another server process, a dropped connection) costs only a later refresh.
public actor EventHub {
    private var subscribers: [UUID: [UUID: AsyncStream<ServerEventBody>.Continuation]] = [:]
    /// Open streams per client address (IPv6 by /64, ``RateLimiter/key(_:)``), and each stream's address.
    private var byAddress: [String: Int] = [:]
    private var streamAddress: [UUID: String] = [:]
    /// The most streams one user may hold open (an app on a few devices).
    public nonisolated let perUser: Int
    /// The most streams one client address may hold open (IPv6 by /64), whoever's tokens it presents.
    public nonisolated let perAddress: Int
    /// The most streams open at once on this server.
    public nonisolated let total: Int

    /// Called with every event published here (not those only relayed from another instance): the push
    /// notifier, the relay to other instances.
    private let onPublish: @Sendable (ServerEventBody, UUID, Bool) -> Void

    /// A hub holding at most `perUser` streams per user, `perAddress` per client address and `total` in all,
    /// telling `onPublish` of each event published here.
    public init(
        perUser: Int = 4, perAddress: Int = 100, total: Int = 1_000,
        onPublish: @escaping @Sendable (ServerEventBody, UUID, Bool) -> Void = { _, _, _ in }
    ) {
        self.perUser = perUser
        self.perAddress = perAddress
        self.total = total
        self.onPublish = onPublish
    }

    /// Why a stream was not opened.
    public enum Refusal: Error {
        /// The user has ``perUser`` streams open.
        case userFull
        /// The client's address has ``perAddress`` streams open.
        case addressFull
        /// The server has ``total`` streams open.
        case serverFull
    }

    /// Opens a stream of a user's events; it ends when the hub removes it or the reader stops.
    ///
    /// - Parameter address: The client's address (`nil`: not known, counted as one address).
    /// - Throws: ``Refusal`` when the user, the address or the server has as many streams open as allowed.
    public func subscribe(user: UUID, address: String? = nil) throws(Refusal) -> AsyncStream<ServerEventBody> {
        let key = RateLimiter.key(address)
        guard (subscribers[user]?.count ?? 0) < perUser else { throw .userFull }
        guard byAddress[key, default: 0] < perAddress else { throw .addressFull }
        guard openStreams < total else { throw .serverFull }
        let (stream, continuation) = AsyncStream<ServerEventBody>.makeStream(bufferingPolicy: .bufferingNewest(64))
        let id = UUID()
        subscribers[user, default: [:]][id] = continuation
        byAddress[key, default: 0] += 1
        streamAddress[id] = key
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
        if let key = streamAddress.removeValue(forKey: id) {
            byAddress[key, default: 1] -= 1
            if byAddress[key] == 0 { byAddress[key] = nil }
        }
        subscribers[user]?[id] = nil
        if subscribers[user]?.isEmpty == true { subscribers[user] = nil }
    }
}
