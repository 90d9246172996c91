import AsyncHTTPClient
import CofferAPI
import CofferServer
import CofferService
import CofferStore
import CofferTestSupport
import Foundation
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

/// Health, readiness, metrics, request ids, and the event stream over a real socket.
@Suite("Operations and events", .timeLimit(.minutes(1)))
struct OperationsTests {
    @Test("healthz and readyz answer; metrics count requests, deliveries and refusals; request ids are echoed")
    func operations() async throws {
        let setup = try NotificationTests.Setup()
        try await setup.app.test(.router) { client in
            #expect(try await client.execute(uri: "/healthz", method: .get).status == .ok)
            #expect(try await client.execute(uri: "/readyz", method: .get).status == .ok)
            let user = try await NotificationTests.createUser(client)
            _ = try await setup.apple.purchase(
                account: "hal", productId: "com.example.credits", appAccountToken: user.appAccountToken)
            _ = try await setup.deliver(after: 0, with: client)
            _ = try await NotificationTests.post("not.a.jws", with: client)

            let echoed = try await client.execute(
                uri: "/healthz", method: .get, headers: [.init("X-Request-Id")!: "support-ticket-42"])
            #expect(echoed.headers[.init("X-Request-Id")!] == "support-ticket-42")
            let generated = try await client.execute(
                uri: "/healthz", method: .get, headers: [.init("X-Request-Id")!: "bad id with spaces"])
            let id = try #require(generated.headers[.init("X-Request-Id")!])
            #expect(id != "bad id with spaces" && !id.isEmpty)

            let metrics = String(buffer: try await client.execute(uri: "/metrics", method: .get).body)
            #expect(metrics.contains(#"coffer_http_requests_total{route="/v1/users",method="POST",status="201"} 1"#))
            #expect(metrics.contains(#"coffer_deliveries_total{source="notification"} 1"#))
            #expect(metrics.contains(#"coffer_notifications_total{type="ONE_TIME_CHARGE"} 1"#))
            #expect(metrics.contains(#"coffer_verification_failures_total{status="VERIFICATION_FAILURE"} 1"#))
            #expect(metrics.contains("coffer_notification_lag_seconds_bucket"))
            #expect(metrics.contains("coffer_http_request_duration_seconds_bucket"))
        }
    }

    @Test("readyz answers 503 when the store does not answer")
    func notReady() async throws {
        let setup = try NotificationTests.Setup(store: FailingStore())
        try await setup.app.test(.router) { client in
            #expect(try await client.execute(uri: "/healthz", method: .get).status == .ok)
            #expect(try await client.execute(uri: "/readyz", method: .get).status == .serviceUnavailable)
            // A notification the store cannot keep is answered 5xx, so Apple retries it.
            _ = try await setup.apple.purchase(account: "ida", productId: "com.example.credits")
            let notification = try #require(await setup.apple.sentNotifications().first)
            let answer = try await NotificationTests.post(notification.signedPayload, with: client)
            #expect(answer.status == .internalServerError)
        }
    }

    @Test("a database that is unavailable answers 503 database-unavailable with Retry-After, so Apple and apps retry")
    func databaseUnavailable() async throws {
        let setup = try NotificationTests.Setup(store: FailingStore(error: .unavailable("no answer within 5 s")))
        try await setup.app.test(.router) { client in
            _ = try await setup.apple.purchase(account: "ida", productId: "com.example.credits")
            let notification = try #require(await setup.apple.sentNotifications().first)
            let answer = try await NotificationTests.post(notification.signedPayload, with: client)
            #expect(answer.status == .serviceUnavailable)
            #expect(answer.headers[.retryAfter] == "1")
            #expect(try ClientAPITests.decode(ErrorResponse.self, answer).error.code == "database-unavailable")
            let me = try await client.execute(uri: "/v1/me", method: .get, headers: ClientAPITests.bearer("any token"))
            #expect(me.status == .serviceUnavailable && me.headers[.retryAfter] == "1")
        }
    }

    @Test("a request that takes longer than request.timeout is answered 503 timeout", .tags(.timing))
    func timeout() async throws {
        var configuration = NotificationTests.Setup.defaultConfiguration()
        configuration.requestTimeout = 1
        let setup = try NotificationTests.Setup(store: FailingStore(delay: .seconds(50)), configuration: configuration)
        try await setup.app.test(.router) { client in
            let started = ContinuousClock.now
            let answer = try await client.execute(uri: "/readyz", method: .get)
            #expect(answer.status == .serviceUnavailable)
            #expect(try ClientAPITests.decode(ErrorResponse.self, answer).error.code == "timeout")
            // Answered by the timeout, not by the store (which takes 50 s): the bound leaves room for a
            // loaded 2-core machine running every suite at once (a CI run measured 26 s there).
            #expect(ContinuousClock.now - started < .seconds(40))
        }
    }

    @Test("the event stream tells an open app about a refund, as Server-Sent Events")
    func events() async throws {
        let setup = try NotificationTests.Setup()
        try await setup.app.test(.live) { client in
            let port = try #require(client.port)
            let user = try await NotificationTests.createUser(client)
            _ = try await setup.apple.purchase(
                account: "jo", productId: "com.example.credits", appAccountToken: user.appAccountToken)
            let id = try #require(await setup.apple.deviceTransactions(account: "jo").first?.id)

            let http = HTTPClient.shared
            var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)/v1/me/events")
            request.headers.add(name: "Authorization", value: "Bearer \(user.token)")
            let response = try await http.execute(request, timeout: .seconds(30))
            #expect(response.status == .ok)
            #expect(response.headers.first(name: "Content-Type") == "text/event-stream")
            var iterator = response.body.makeAsyncIterator()
            var received = ""
            // The stream is open once its first comment arrives; then Apple's notifications are posted.
            while !received.contains(": connected") {
                received += String(buffer: try #require(try await iterator.next()))
            }
            _ = try await setup.deliver(after: 0, with: client)
            try await setup.apple.refund(transactionId: id)
            _ = try await setup.deliver(after: 1, with: client)
            while !received.contains("event: adjustment") {
                received += String(buffer: try #require(try await iterator.next()))
            }
            #expect(received.contains("event: entitlements"))
            #expect(received.contains(#"data: {"key":"revocation:\#(id)","type":"adjustment"}"#))

            let stranger = try await http.execute(
                HTTPClientRequest(url: "http://127.0.0.1:\(port)/v1/me/events"), timeout: .seconds(5))
            #expect(stranger.status == .unauthorized)
        }
    }
}

/// The API document kept in the repository (`Sources/CofferServer/openapi.json`, written by
/// `scripts/openapi.py`) against the routes the server really has.
@Suite("OpenAPI document")
struct OpenAPITests {
    /// `Sources/CofferServer/openapi.json` in the repository.
    static let documentURL = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Sources/CofferServer/openapi.json")

    @Test("every route is in /openapi.json and every documented path is a route; the served document is the repo's")
    func everyRoute() async throws {
        let setup = try NotificationTests.Setup()
        // The panel's HTML pages (`/admin/...`) are for people, not API clients; everything else is the API.
        let all = try serverRoutes(configuration: setup.configuration, dependencies: try setup.dependencies(api: nil))
        let routes = all.filter { !$0.contains(" /admin") }
        #expect(routes.count >= 16)
        #expect(all.count - routes.count == 43, "the panel's pages: \(all.filter { $0.contains(" /admin") })")
        let kept = try Data(contentsOf: Self.documentURL)
        try await setup.app.test(.router) { client in
            let served = try await client.execute(uri: "/openapi.json", method: .get)
            #expect(served.status == .ok)
            #expect(Data(buffer: served.body) == kept)
        }
        let document = try #require(try JSONSerialization.jsonObject(with: kept) as? [String: Any])
        #expect(document["openapi"] as? String == "3.1.0")
        let paths = try #require(document["paths"] as? [String: [String: Any]])
        var documented: Set<String> = []
        for (path, operations) in paths {
            for method in operations.keys { documented.insert("\(method.uppercased()) \(path)") }
        }
        #expect(Set(routes) == documented, "run scripts/openapi.py after changing the routes")
        // Every schema a path names is defined.
        let schemas = try #require((document["components"] as? [String: Any])?["schemas"] as? [String: Any])
        let text = String(decoding: kept, as: UTF8.self)
        for match in text.matches(of: /#\/components\/schemas\/(\w+)/) {
            #expect(schemas[String(match.1)] != nil, "\(match.1) is not defined")
        }
    }
}
