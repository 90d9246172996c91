import CofferCore
import CofferStore
import Foundation
import Logging
import PostgresNIO

extension PostgresStore: EventBroadcast {
    /// The channel instances tell each other's events on.
    static let eventChannel = "coffer_events"

    /// `NOTIFY coffer_events` with the message as JSON.
    public func broadcast(_ message: BroadcastMessage) async throws {
        let payload = String(decoding: try JSONEncoder().encode(message), as: UTF8.self)
        try await read { connection in
            _ = try await connection.query("SELECT pg_notify(\(Self.eventChannel), \(payload))", logger: self.logger)
        }
    }

    /// `LISTEN coffer_events` on a connection of its own, for as long as it lasts.
    public func listen(_ deliver: @escaping @Sendable (BroadcastMessage) async -> Void) async throws {
        do {
            try await client.withConnection { connection in
                try await connection.listen(on: Self.eventChannel) { notifications in
                    for try await notification in notifications {
                        guard
                            let message = try? JSONDecoder().decode(
                                BroadcastMessage.self, from: Data(notification.payload.utf8))
                        else {
                            self.logger.warning("an event on \(Self.eventChannel) does not decode: ignored")
                            continue
                        }
                        await deliver(message)
                    }
                }
            }
        } catch let error as PSQLError {
            throw Self.storeError(error)
        } catch let error where Self.isPoolRefusal(error) {
            throw StoreError.unavailable("PostgreSQL cannot be reached: \(error)")
        }
    }
}
