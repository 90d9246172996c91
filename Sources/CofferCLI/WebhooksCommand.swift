import ArgumentParser
import CofferAPI
import CofferAdmin
import CofferCore
import CofferStore
import Foundation

/// `coffer webhooks ...`: the endpoints that hear Coffer's signed events, on the server's database (as
/// `coffer serve` finds it), and their deliveries.
struct WebhooksCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "webhooks",
        abstract: "Add, list and remove the endpoints that hear Coffer's signed events; replay and resend them.",
        discussion: """
            Each endpoint gets every event (or those --events names), signed in the Coffer-Signature header \
            (docs/webhooks.md). The endpoint webhook.url names in the settings is listed as "settings" and is \
            changed there. Run it on the server's machine: it works on the server's database.
            """,
        subcommands: [Add.self, List.self, Remove.self, Replay.self, Rotate.self, Deliveries.self, Resend.self],
        defaultSubcommand: List.self)

    /// Runs `body` with support's service on the server's own database.
    static func withService<T>(_ options: SupportOptions, _ body: (LocalSupport) async throws -> T) async throws -> T {
        guard options.server == nil else {
            throw ValidationError("coffer webhooks works on the server's database: drop --server")
        }
        return try await withSupport(options) { backend in
            guard let local = backend as? LocalSupport else {
                throw ValidationError("coffer webhooks works on the server's database: unset COFFER_SERVER")
            }
            return try await body(local)
        }
    }

    static func line(_ endpoint: WebhookEndpointView) -> String {
        let events = endpoint.events.isEmpty ? "every event" : endpoint.events.joined(separator: ", ")
        return "\(endpoint.id)  \(endpoint.url)  \(events)  secret \(endpoint.secretHint)"
            + (endpoint.rotating ? "  (rotating: two secrets sign)" : "")
    }

    /// `coffer webhooks add --url URL [--events a,b] [--secret S]`.
    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Add an endpoint; its secret is printed once.")

        @Option(help: "Where events go: an https:// URL (http:// for a backend on this machine or network).")
        var url: String

        @Option(help: "The events it hears, comma-separated (e.g. purchase.delivered,purchase.refunded). Default all.")
        var events: String = ""

        @Option(help: "The secret that signs its requests (16 to 256 characters). Default: a new random one.")
        var secret: String?

        @OptionGroup var options: SupportOptions

        func run() async throws {
            let made = try await withService(options) { local in
                try await local.service.addWebhookEndpoint(
                    environment: local.environment, url: url, events: events, secret: secret, actor: local.actor)
            }
            if options.json { return print(try JSONText.encode(made)) }
            print("Added \(WebhooksCommand.line(made.endpoint))")
            print("Secret (shown once; verify Coffer-Signature with it): \(made.secret)")
        }
    }

    /// `coffer webhooks list`.
    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the endpoints and the backlog.")

        @OptionGroup var options: SupportOptions

        func run() async throws {
            let (endpoints, backlog) = try await withService(options) { local in
                (
                    try await local.service.webhookEndpoints(environment: local.environment),
                    try await local.service.webhookBacklog(environment: local.environment)
                )
            }
            if options.json { return print(try JSONText.encode(endpoints)) }
            if endpoints.isEmpty {
                print("No endpoints: add one with coffer webhooks add --url URL, or set webhook.url.")
            }
            for endpoint in endpoints { print(WebhooksCommand.line(endpoint)) }
            print("\(backlog.pending + backlog.unrouted) waiting, \(backlog.dead) dead letters")
        }
    }

    /// `coffer webhooks remove ID`.
    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Remove an endpoint and the deliveries it had not received.",
            discussion: """
                settings and forward-N (webhook.url, apple.forward.url) come back when an instance whose settings \
                still name them starts: take them out of the settings first.
                """)

        @Argument(help: "The endpoint's id (wh_..., settings, forward-1).")
        var id: String

        @OptionGroup var options: SupportOptions

        func run() async throws {
            try await withService(options) { local in
                try await local.service.removeWebhookEndpoint(
                    environment: local.environment, id: id, actor: local.actor)
            }
            print("Removed \(id).")
        }
    }

    /// `coffer webhooks replay ID --since DATE`.
    struct Replay: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Send an endpoint every kept event since a date again (the same ids; kept 30 days).")

        @Argument(help: "The endpoint's id (wh_..., or settings).")
        var id: String

        @Option(help: "From when: 2026-11-30 or 2026-11-30T12:00:00Z.")
        var since: String

        @OptionGroup var options: SupportOptions

        func run() async throws {
            guard let date = Self.date(since) else {
                throw ValidationError("--since is \(since); expected a date like 2026-11-30 or 2026-11-30T12:00:00Z")
            }
            let count = try await withService(options) { local in
                try await local.service.replayWebhookEvents(
                    environment: local.environment, id: id, since: date, actor: local.actor)
            }
            if options.json { return print(try JSONText.encode(["replayed": count])) }
            print("\(count) events queued again for \(id).")
        }

        static func date(_ text: String) -> Date? {
            if let date = try? Date(text, strategy: .iso8601) { return date }
            return try? Date(text + "T00:00:00Z", strategy: .iso8601)
        }
    }

    /// `coffer webhooks rotate ID [--done]`.
    struct Rotate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Rotate an endpoint's secret: the new one and the one before both sign until --done.")

        @Argument(help: "The endpoint's id (wh_...).")
        var id: String

        @Flag(help: "End the rotation: only the new secret signs.")
        var done = false

        @OptionGroup var options: SupportOptions

        func run() async throws {
            if done {
                let view = try await withService(options) { local in
                    try await local.service.finishWebhookRotation(
                        environment: local.environment, id: id, actor: local.actor)
                }
                if options.json { return print(try JSONText.encode(view)) }
                return print("Rotation ended: only the new secret signs for \(id).")
            }
            let made = try await withService(options) { local in
                try await local.service.rotateWebhookSecret(environment: local.environment, id: id, actor: local.actor)
            }
            if options.json { return print(try JSONText.encode(made)) }
            print("New secret (shown once): \(made.secret)")
            print("Both secrets sign until: coffer webhooks rotate \(id) --done")
        }
    }

    /// `coffer webhooks deliveries [--state dead]`.
    struct Deliveries: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the latest deliveries, newest first.")

        @Option(help: "pending, delivered or dead (dead letters). Default all.")
        var state: String?

        @Option(help: "How many.")
        var limit = 50

        @OptionGroup var options: SupportOptions

        func run() async throws {
            var wanted: WebhookDeliveryState?
            if let state {
                guard let named = WebhookDeliveryState(rawValue: state) else {
                    throw ValidationError("--state is \(state); expected pending, delivered or dead")
                }
                wanted = named
            }
            guard (1...1_000).contains(limit) else { throw ValidationError("--limit goes from 1 to 1000") }
            let deliveries = try await withService(options) { local in
                try await local.service.webhookDeliveries(environment: local.environment, state: wanted, limit: limit)
            }
            if options.json { return print(try JSONText.encode(deliveries)) }
            if deliveries.isEmpty { print("No deliveries.") }
            for item in deliveries {
                let answer = item.lastStatus.map { "last answer \($0)" } ?? item.lastError ?? "not tried yet"
                print(
                    "\(item.endpoint) #\(item.seq)  \(item.type)  \(item.supportId)  \(item.state)  "
                        + "\(item.attempts) attempts  \(answer)")
            }
        }
    }

    /// `coffer webhooks resend ENDPOINT SEQ`.
    struct Resend: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Send one delivery again (a dead letter, say), with 3 days of retries again.")

        @Argument(help: "The endpoint's id.")
        var endpoint: String

        @Argument(help: "The event's number (#N in coffer webhooks deliveries).")
        var seq: Int64

        @OptionGroup var options: SupportOptions

        func run() async throws {
            try await withService(options) { local in
                try await local.service.resendWebhookDelivery(
                    environment: local.environment, endpoint: endpoint, seq: seq, actor: local.actor)
            }
            print("Delivery #\(seq) to \(endpoint) is queued again.")
        }
    }
}
