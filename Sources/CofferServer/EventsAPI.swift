import CofferAPI
import CofferCore
import CofferService
import CofferStore
import Foundation
import Hummingbird
import NIOCore
import ServiceLifecycle

/// The device wallet's mailbox of server-detected changes, and the event stream that says when to look.
struct EventsAPI: Sendable {
    let api: ClientAPI

    func addRoutes(to router: Router<CofferRequestContext>) {
        router.get("v1/me/adjustments") { request, _ in
            let user = try await api.authenticate(request)
            let entries = try await api.store.entries(
                owner: user.id, environment: user.environment, kinds: [.revocation, .reversal, .adjustment])
            return try api.json(AdjustmentsResponse(adjustments: entries.compactMap(Self.adjustment)))
        }
        router.get("v1/me/events") { request, context in
            let user = try await api.authenticate(request)
            let stream: AsyncStream<ServerEventBody>
            do {
                stream = try await api.events.subscribe(user: user.id)
            } catch EventHub.Refusal.userFull {
                throw ServiceError.tooManyStreams(api.events.perUser)
            } catch {
                throw ServiceError.unavailable(
                    code: "unavailable",
                    message: "the server has as many event streams open as it allows; try again later")
            }
            let keepAlive = api.configuration.eventKeepAlive
            context.logger.info("event stream opened")
            return Response(
                status: .ok,
                headers: [.contentType: "text/event-stream", .cacheControl: "no-store"],
                body: ResponseBody { writer in
                    // One stream of frames: the user's events and a keep-alive comment now and then.
                    let (frames, sink) = AsyncStream<String>.makeStream(bufferingPolicy: .bufferingNewest(64))
                    let forward = Task {
                        for await event in stream { sink.yield(Self.frame(event)) }
                        sink.finish()
                    }
                    let beat = Task {
                        while !Task.isCancelled {
                            try await Task.sleep(for: .seconds(keepAlive))
                            sink.yield(": keep-alive\n\n")
                        }
                    }
                    defer {
                        forward.cancel()
                        beat.cancel()
                    }
                    try await writer.write(ByteBuffer(string: ": connected\n\n"))
                    // Ends when the client goes away (a write fails), the hub closes the stream, or the
                    // server shuts down gracefully (which waits for open requests).
                    try await withGracefulShutdownHandler {
                        for await frame in frames { try await writer.write(ByteBuffer(string: frame)) }
                    } onGracefulShutdown: {
                        sink.finish()
                    }
                    try await writer.finish(nil)
                })
        }
    }

    /// One Server-Sent Event: `event:` the kind, `data:` the JSON body.
    static func frame(_ event: ServerEventBody) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let data = (try? encoder.encode(event)).flatMap { String(data: $0, encoding: .utf8) } ?? "{}"
        return "event: \(event.type.rawValue)\ndata: \(data)\n\n"
    }

    /// The mailbox entry of a ledger entry the app did not make itself: revocations, reversals and
    /// admin adjustments.
    static func adjustment(_ entry: LedgerEntry) -> AdjustmentBody? {
        switch entry.key.kind {
        case .revocation, .reversal, .adjustment:
            return AdjustmentBody(
                key: entry.key.rawValue, kind: entry.key.kind.rawValue, amount: entry.amount,
                transactionId: entry.transactionId, productId: entry.productId, reason: entry.reason,
                createdAt: entry.createdAt)
        case .purchase, .grant, .spend:
            return nil
        }
    }
}
