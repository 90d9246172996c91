import CofferAPI
import CofferCore
import CofferHTTP
import CofferService
import CofferStore
import Foundation
import Hummingbird
import NIOCore
import ServiceLifecycle

/// The device wallet's mailbox of server-detected changes, and the event stream that says when to look.
struct EventsAPI: Sendable {
    let api: ClientAPI

    /// The routes, each answered by a handler below.
    var routes: RouteCollection<CofferRequestContext> {
        let routes = RouteCollection(context: CofferRequestContext.self)
        routes.get("v1/me/adjustments", use: adjustments)
        routes.get("v1/me/events", use: events)
        return routes
    }

    /// `GET /v1/me/adjustments[?currencies=1]`: the device wallet's mailbox, with the other currencies' when asked.
    func adjustments(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        let currencies = try Self.asksCurrencies(request)
        return try api.json(
            AdjustmentsResponse(
                adjustments: try await api.service.mailbox(of: api.authenticate(request), currencies: currencies)))
    }

    /// Whether the app asks for the other currencies' items (`?currencies=1`): an app from before several
    /// currencies does not, and is never handed what it would apply to the default currency.
    ///
    /// - Throws: ``ServiceError/badRequest(_:)`` for another value than 1, 0, true or false.
    static func asksCurrencies(_ request: Request) throws -> Bool {
        switch request.uri.queryParameters.get("currencies") {
        case nil, "0", "false": false
        case "1", "true": true
        default: throw ServiceError.badRequest("currencies is 1 or 0")
        }
    }

    /// `GET /v1/me/events`: Server-Sent Events of what changed for the user, with a keep-alive comment now and
    /// then.
    func events(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        let stream = try await api.service.events(
            of: try await api.authenticate(request), address: context.clientAddress)
        let keepAlive = api.configuration.eventKeepAlive
        let clock = api.dependencies.timerClock
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
                        try await clock.sleep(for: .seconds(keepAlive))
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

    /// One Server-Sent Event: `event:` the kind, `data:` the JSON body.
    static func frame(_ event: ServerEventBody) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let data = (try? encoder.encode(event)).flatMap { String(data: $0, encoding: .utf8) } ?? "{}"
        return "event: \(event.type.rawValue)\ndata: \(data)\n\n"
    }
}
