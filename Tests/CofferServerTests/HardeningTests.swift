import CofferAPI
import CofferAdmin
import CofferAppStore
import CofferCore
import CofferServer
import CofferService
import CofferSimulator
import CofferStore
import CofferTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Floods, slow clients, proxies and DNS rebinding, tried against a real server on loopback.
@Suite("Hardening", .timeLimit(.minutes(2)))
struct HardeningTests {
    typealias Fixture = ClientAPITests

    /// A server like the fixture's, with its configuration changed.
    static func server(store: any CofferStore = InMemoryStore(), _ change: (inout ServerConfiguration) -> Void) throws
        -> some ApplicationProtocol
    {
        var configuration = ServerConfiguration(bundleId: Fixture.bundleId)
        configuration.port = 0
        change(&configuration)
        return try buildApplication(
            configuration: configuration,
            dependencies: try ServerDependencies(
                store: store,
                verifier: try SignedDataVerifier(
                    rootCertificates: [], bundleId: Fixture.bundleId, appAppleId: nil, environment: .sandbox),
                catalog: try Catalog(products: [
                    CatalogProduct(id: "com.example.credits", kind: .consumable, credits: 100)
                ]),
                now: { AdminAPITests.now }, passwordHasher: PasswordHasher(cost: 4)))
    }

    static func from(_ address: String) -> HTTPFields { [HTTPField.Name("X-Forwarded-For")!: address] }

    static let loopbackProxy = TrustedProxies([AddressRange("127.0.0.1")!])

    @Test("POST /v1/users is limited per client address; behind a trusted proxy by the forwarded address only")
    func userCreationLimit() async throws {
        let proxied = try Self.server {
            $0.userCreationLimit = RateLimit(burst: 3, perSecond: 0.001)
            $0.trustedProxies = Self.loopbackProxy
        }
        try await proxied.test(.live) { client in
            for _ in 0..<3 {
                let created = try await client.execute(
                    uri: "/v1/users", method: .post, headers: Self.from("203.0.113.1"))
                #expect(created.status == .created)
            }
            let refused = try await client.execute(uri: "/v1/users", method: .post, headers: Self.from("203.0.113.1"))
            #expect(refused.status == .tooManyRequests)
            #expect(Int(refused.headers[.retryAfter] ?? "") ?? 0 >= 1)
            #expect(String(buffer: refused.body).contains("rate-limited"))
            let neighbour = try await client.execute(uri: "/v1/users", method: .post, headers: Self.from("203.0.113.2"))
            #expect(neighbour.status == .created)
        }
        // Without trusted proxies a forged X-Forwarded-For changes nothing: the peer is the client.
        let direct = try Self.server { $0.userCreationLimit = RateLimit(burst: 3, perSecond: 0.001) }
        try await direct.test(.live) { client in
            var statuses: [HTTPResponse.Status] = []
            for index in 0..<5 {
                statuses.append(
                    try await client.execute(
                        uri: "/v1/users", method: .post, headers: Self.from("198.51.100.\(index)")
                    ).status)
            }
            #expect(statuses == [.created, .created, .created, .tooManyRequests, .tooManyRequests])
        }
    }

    @Test("sign-in: parallel guesses cannot pass the throttle together, and an attacker cannot lock the admin out")
    func signInThrottle() async throws {
        let store = InMemoryStore()
        try await PanelTests.admin(in: store)
        let app = try Self.server(store: store) {
            $0.trustedProxies = Self.loopbackProxy
            $0.panel.allowRemote = true
            $0.panel.secureCookies = true
            $0.panel.publicHost = "support.example.com"
        }
        try await app.test(.live) { client in
            var attacker = PanelTests.Browser()
            attacker.extra = Self.from("203.0.113.9")
            for _ in 0..<5 {
                #expect(try await attacker.signIn(client, password: "guess guess guess").status == .unauthorized)
            }
            let waiting = try await attacker.signIn(client, password: "guess guess guess")
            #expect(waiting.status == .tooManyRequests)
            #expect(Int(waiting.headers[.retryAfter] ?? "") ?? 0 >= 1)
            // Even the right password waits from the attacker's address ...
            #expect(try await attacker.signIn(client).status == .tooManyRequests)
            // ... but the admin, elsewhere, signs in.
            var admin = PanelTests.Browser()
            admin.extra = Self.from("198.51.100.7")
            #expect(try await admin.signIn(client).status == .seeOther)

            // Twelve guesses at once from one address: at most five reach the password check.
            let statuses = try await withThrowingTaskGroup(of: HTTPResponse.Status.self) { group in
                for _ in 0..<12 {
                    group.addTask {
                        var browser = PanelTests.Browser()
                        browser.extra = Self.from("203.0.113.50")
                        return try await browser.signIn(client, password: "parallel guess!!").status
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(statuses.count { $0 == .unauthorized } <= 5, "\(statuses)")
            #expect(statuses.allSatisfy { $0 == .unauthorized || $0 == .tooManyRequests })
        }
    }

    @Test("the sign-in page itself is rate limited per address")
    func signInPageLimit() async throws {
        let app = try Self.server {
            $0.panel.signInLimit = RateLimit(burst: 4, perSecond: 0.001)
            $0.trustedProxies = Self.loopbackProxy
            $0.panel.allowRemote = true
            $0.panel.secureCookies = true
            $0.panel.publicHost = "support.example.com"
        }
        try await app.test(.live) { client in
            var statuses: [HTTPResponse.Status] = []
            for _ in 0..<6 {
                statuses.append(
                    try await client.execute(uri: "/admin/login", method: .get, headers: Self.from("203.0.113.4"))
                        .status)
            }
            #expect(statuses == [.ok, .ok, .ok, .ok, .tooManyRequests, .tooManyRequests])
            #expect(
                try await client.execute(uri: "/admin/login", method: .get, headers: Self.from("203.0.113.5")).status
                    == .ok)
        }
    }

    @Test("behind a reverse proxy on this machine, the panel is still this machine only; Host must be loopback")
    func panelBehindProxy() async throws {
        let proxied = try Self.server { $0.trustedProxies = Self.loopbackProxy }
        try await proxied.test(.live) { client in
            #expect(
                try await client.execute(uri: "/admin/login", method: .get, headers: Self.from("127.0.0.1")).status
                    == .ok)
            let remote = try await client.execute(
                uri: "/admin/login", method: .get, headers: Self.from("203.0.113.9"))
            #expect(remote.status == .forbidden)
            // Through the proxy, 64 forged hops ahead of the real one do not make the client loopback.
            let forged = Array(repeating: "127.0.0.1", count: 64).joined(separator: ", ") + ", 203.0.113.9"
            #expect(
                try await client.execute(uri: "/admin/login", method: .get, headers: Self.from(forged)).status
                    == .forbidden)
            // A trusted proxy that does not say who the client is: not this machine.
            #expect(try await client.execute(uri: "/admin/login", method: .get).status == .forbidden)
        }
        let app = try Self.server { _ in }
        try await app.test(.live) { client in
            let port = try #require(client.port)
            #expect(try await client.execute(uri: "/admin/login", method: .get).status == .ok)
            // DNS rebinding: a page on evil.example whose name now points at 127.0.0.1.
            #expect(
                try await RawHTTP.status(port: port, "GET /admin/login HTTP/1.1\r\nHost: evil.example\r\n\r\n") == 421)
            #expect(
                try await RawHTTP.status(port: port, "GET /admin/login HTTP/1.1\r\nHost: evil.example:\(port)\r\n\r\n")
                    == 421)
            #expect(
                try await RawHTTP.status(port: port, "GET /admin/login HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n\r\n")
                    == 200)
            #expect(
                try await RawHTTP.status(port: port, "GET /admin/login HTTP/1.1\r\nHost: [::1]:\(port)\r\n\r\n") == 200)
            // The API is not the panel: any Host reaches it.
            #expect(try await RawHTTP.status(port: port, "GET /healthz HTTP/1.1\r\nHost: api.example\r\n\r\n") == 200)
        }
        // Open to other machines, the panel answers to its public host name too, and to nothing else.
        let open = try Self.server {
            $0.panel.allowRemote = true
            $0.panel.secureCookies = true
            $0.panel.publicHost = "support.example.com"
        }
        try await open.test(.live) { client in
            let port = try #require(client.port)
            #expect(
                try await RawHTTP.status(port: port, "GET /admin/login HTTP/1.1\r\nHost: support.example.com\r\n\r\n")
                    == 200)
            #expect(
                try await RawHTTP.status(port: port, "GET /admin/login HTTP/1.1\r\nHost: evil.example\r\n\r\n") == 421)
        }
    }

    @Test("event streams are capped per user and in total")
    func eventStreamCaps() async throws {
        let app = try Self.server {
            $0.eventStreamsPerUser = 2
            $0.eventStreamsTotal = 3
        }
        try await app.test(.live) { client in
            let port = try #require(client.port)
            let alice = try Fixture.decode(
                CreateUserResponse.self, try await client.execute(uri: "/v1/users", method: .post))
            let bob = try Fixture.decode(
                CreateUserResponse.self, try await client.execute(uri: "/v1/users", method: .post))
            func open(_ user: CreateUserResponse) async throws -> (Int32, Int) {
                let socket = try RawHTTP.connect(port: port)
                try RawHTTP.send(
                    socket,
                    "GET /v1/me/events HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer \(user.token)\r\n\r\n")
                return (socket, RawHTTP.statusLine(await RawHTTP.receive(socket, seconds: 5)))
            }
            var sockets: [Int32] = []
            defer {
                for socket in sockets { close(socket) }
            }
            for (user, expected) in [(alice, 200), (alice, 200), (alice, 429), (bob, 200), (bob, 503)] {
                let (socket, status) = try await open(user)
                sockets.append(socket)
                #expect(status == expected)
            }
        }
    }

    @Test(
        "a client that trickles its request is cut off at the read deadline; connections are capped", .tags(.timing))
    func slowClientsAndConnectionCap() async throws {
        // HummingbirdTesting's live server drops the connection limit, so the server runs as `coffer serve` does.
        let port = Int(try LocalPort.free())
        let app = try Self.server {
            $0.port = port
            $0.readTimeout = 2
            $0.maximumConnections = 2
        }
        let running = Task { try await app.runService() }
        defer { running.cancel() }
        var up = 0
        for _ in 0..<100 where up != 200 {
            up = (try? await RawHTTP.status(port: port, "GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")) ?? 0
            if up != 200 { try await Task.sleep(for: .milliseconds(50)) }
        }
        #expect(up == 200)
        // Half a request head, then nothing: closed after the deadline.
        let slow = try RawHTTP.connect(port: port)
        defer { close(slow) }
        try RawHTTP.send(slow, "GET /healthz HTTP/1.1\r\nHost: local")
        try await Task.sleep(for: .milliseconds(2_500))
        #expect(await RawHTTP.receive(slow, seconds: 3) == "", "the trickling connection is closed")

        // Answered early (a body larger than the limit), then nothing: still closed at the deadline.
        let answered = try RawHTTP.connect(port: port)
        defer { close(answered) }
        try RawHTTP.send(answered, "POST /v1/users HTTP/1.1\r\nHost: localhost\r\nContent-Length: 70000\r\n\r\n")
        #expect(RawHTTP.statusLine(await RawHTTP.receive(answered, seconds: 3)) == 413)
        // The body follows after its answer, then half of the next request: the deadline still runs.
        try? RawHTTP.send(answered, String(repeating: "x", count: 70_000) + "GET /healthz HTTP/1.1\r\nHost: lo")
        try await Task.sleep(for: .milliseconds(2_500))
        #expect(await RawHTTP.receive(answered, seconds: 3) == "", "the early-answered connection is closed")

        // Two idle connections hold both slots: a third waits, and is served once one goes.
        let first = try RawHTTP.connect(port: port)
        let second = try RawHTTP.connect(port: port)
        defer { close(second) }
        try await Task.sleep(for: .milliseconds(300))
        let third = try RawHTTP.connect(port: port)
        defer { close(third) }
        try RawHTTP.send(third, "GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
        let early = await RawHTTP.receive(third, seconds: 0.5)
        #expect(early == nil, "a third connection waits while two are open, got \(early.debugDescription)")
        close(first)
        #expect(RawHTTP.statusLine(await RawHTTP.receive(third, seconds: 5)) == 200)
    }

    @Test("notifications: only those that fail verification count against an address; Apple's never do")
    func notificationFailures() async throws {
        var configuration = NotificationTests.Setup.defaultConfiguration()
        configuration.notificationFailureLimit = RateLimit(burst: 3, perSecond: 0.001)
        configuration.trustedProxies = Self.loopbackProxy
        let setup = try NotificationTests.Setup(configuration: configuration)
        let production = SimulatedAppStore(
            catalog: setup.catalog,
            configuration: SimulatorConfiguration(
                bundleId: NotificationTests.bundleId, appAppleId: 1_234, environment: .production),
            signer: try setup.pki.signer(), clock: setup.clock)
        for account in ["a", "b", "c", "d", "e"] {
            _ = try await setup.apple.purchase(account: account, productId: "com.example.credits")
            _ = try await production.purchase(account: account, productId: "com.example.credits")
        }
        let genuine = await setup.apple.sentNotifications().map(\.signedPayload)
        let foreign = await production.sentNotifications().map(\.signedPayload)
        try await setup.app.test(.live) { client in
            func post(_ payload: String, from address: String) async throws -> HTTPResponse.Status {
                try await client.execute(
                    uri: "/v1/apple/notifications", method: .post,
                    headers: Self.from(address).merging([.contentType: "application/json"]),
                    body: try ClientAPITests.body(NotificationRequest(signedPayload: payload))
                ).status
            }
            // Apple, from one address: every genuine notification is taken, however many.
            for payload in genuine {
                #expect(try await post(payload, from: "17.0.0.1") == .ok)
            }
            // Apple's Sandbox notifications sent to this Production-less server fail as INVALID_ENVIRONMENT:
            // signed by Apple all the same, so never counted.
            for payload in foreign {
                #expect(try await post(payload, from: "17.0.0.2") == .unprocessableContent)
            }
            // Junk from an attacker: three refusals, then the address is turned away before any work.
            var statuses: [HTTPResponse.Status] = []
            for _ in 0..<5 { statuses.append(try await post("e30.e30.AAAA", from: "203.0.113.66")) }
            #expect(
                statuses == [
                    .unprocessableContent, .unprocessableContent, .unprocessableContent,
                    .tooManyRequests, .tooManyRequests,
                ])
            // Apple elsewhere is not affected.
            #expect(try await post(genuine[0], from: "17.0.0.1") == .ok)
        }
    }

    @Test("Apple's notifications hold a failure token only while they verify, however slow the database")
    func slowDatabaseNeverRefusesApple() async throws {
        var configuration = NotificationTests.Setup.defaultConfiguration()
        configuration.notificationFailureLimit = RateLimit(burst: 2, perSecond: 0.001)
        configuration.trustedProxies = Self.loopbackProxy
        let store = CountingStore(base: InMemoryStore(), commitTime: .milliseconds(300))
        let setup = try NotificationTests.Setup(store: store, configuration: configuration)
        try await setup.app.test(.live) { client in
            let user = try await NotificationTests.createUser(client)
            for _ in 0..<6 {
                _ = try await setup.apple.purchase(
                    account: "carol", productId: "com.example.credits", appAccountToken: user.appAccountToken)
            }
            let genuine = await setup.apple.sentNotifications().map(\.signedPayload)
            // Six at once from one of Apple's addresses, each waiting 300 ms on the ledger: none is refused.
            let statuses = try await withThrowingTaskGroup(of: HTTPResponse.Status.self) { group in
                for payload in genuine {
                    group.addTask {
                        try await client.execute(
                            uri: "/v1/apple/notifications", method: .post,
                            headers: Self.from("17.0.0.9").merging([.contentType: "application/json"]),
                            body: try ClientAPITests.body(NotificationRequest(signedPayload: payload))
                        ).status
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(statuses.count == 6)
            #expect(statuses.allSatisfy { $0 == .ok }, "\(statuses)")
            #expect(try await NotificationTests.me(user, client).balance == 600)
            #expect(store.commits >= 1)
        }
    }

    @Test("/metrics with a token answers only that bearer")
    func metricsToken() async throws {
        let app = try Self.server { $0.metricsToken = "metrics-secret-0123456789" }
        try await app.test(.router) { client in
            #expect(try await client.execute(uri: "/metrics", method: .get).status == .unauthorized)
            #expect(
                try await client.execute(uri: "/metrics", method: .get, headers: [.authorization: "Bearer wrong"])
                    .status
                    == .unauthorized)
            let answered = try await client.execute(
                uri: "/metrics", method: .get, headers: [.authorization: "Bearer metrics-secret-0123456789"])
            #expect(answered.status == .ok)
        }
    }

    @Test("a backup's device name is at most 100 characters")
    func deviceNameBound() async throws {
        let app = try Self.server { _ in }
        try await app.test(.router) { client in
            let user = try Fixture.decode(
                CreateUserResponse.self, try await client.execute(uri: "/v1/users", method: .post))
            let long = try await client.execute(
                uri: "/v1/me/backup", method: .put,
                headers: Fixture.bearer(user.token).merging([.contentType: "application/json"]),
                body: ByteBuffer(string: "{\"value\":5,\"device\":\"\(String(repeating: "x", count: 101))\"}"))
            #expect(long.status == .badRequest)
            let fine = try await client.execute(
                uri: "/v1/me/backup", method: .put,
                headers: Fixture.bearer(user.token).merging([.contentType: "application/json"]),
                body: ByteBuffer(string: "{\"value\":5,\"device\":\"\(String(repeating: "x", count: 100))\"}"))
            #expect(fine.status == .ok)
        }
    }

    @Test("trusted proxies: the right-most address that is not a proxy is the client")
    func forwardedFor() throws {
        let proxies = try #require(TrustedProxies(list: "127.0.0.1, 10.0.0.0/8, fd00::/8"))
        #expect(proxies.client(peer: "127.0.0.1", forwardedFor: ["198.51.100.1, 10.1.2.3"]) == "198.51.100.1")
        #expect(proxies.client(peer: "127.0.0.1", forwardedFor: ["6.6.6.6, 198.51.100.1"]) == "198.51.100.1")
        #expect(proxies.client(peer: "203.0.113.9", forwardedFor: ["127.0.0.1"]) == "203.0.113.9")
        #expect(proxies.client(peer: "::ffff:127.0.0.1", forwardedFor: ["2001:db8::1"]) == "2001:db8::1")
        #expect(proxies.client(peer: "127.0.0.1", forwardedFor: ["198.51.100.1:5000"]) == "198.51.100.1")
        #expect(proxies.client(peer: "127.0.0.1", forwardedFor: ["[2001:db8::7]:443"]) == "2001:db8::7")
        #expect(proxies.client(peer: "127.0.0.1", forwardedFor: ["10.0.0.1, 127.0.0.1"]) == "127.0.0.1")
        // A trusted proxy that does not say who the client is never makes the client the proxy (loopback).
        #expect(proxies.client(peer: "127.0.0.1", forwardedFor: ["not an address"]) == TrustedProxies.unknown)
        #expect(proxies.client(peer: "fd00::5", forwardedFor: []) == TrustedProxies.unknown)
        #expect(proxies.client(peer: "127.0.0.1", forwardedFor: ["6.6.6.6, , 127.0.0.1"]) == TrustedProxies.unknown)
        let long = Array(repeating: "127.0.0.1", count: 64).joined(separator: ",") + ",203.0.113.9"
        #expect(proxies.client(peer: "127.0.0.1", forwardedFor: [long]) == TrustedProxies.unknown)
        // Without trusted proxies the peer is the client, whatever it forwards; a loopback peer that forwards is a
        // proxy nobody listed, and never this machine.
        #expect(TrustedProxies().client(peer: "203.0.113.7", forwardedFor: ["127.0.0.1"]) == "203.0.113.7")
        #expect(TrustedProxies().client(peer: "127.0.0.1", forwardedFor: ["203.0.113.9"]) == TrustedProxies.unknown)
        #expect(TrustedProxies().client(peer: "::1", forwardedFor: [], forwarded: true) == TrustedProxies.unknown)
        #expect(TrustedProxies().client(peer: "127.0.0.1", forwardedFor: []) == "127.0.0.1")
        #expect(TrustedProxies(list: "10.0.0.0/33") == nil)
        #expect(TrustedProxies(list: "example.com") == nil)
    }
}

extension HTTPFields {
    fileprivate func merging(_ other: HTTPFields) -> HTTPFields {
        var merged = self
        for field in other { merged.append(field) }
        return merged
    }
}

/// Requests written by hand over a socket, for what HTTP clients will not send: another Host header, half a
/// request, a connection held open.
enum RawHTTP {
    struct Failure: Error { var what: String }

    static func connect(port: Int) throws -> Int32 {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { throw Failure(what: "socket") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard result == 0 else {
            close(socket)
            throw Failure(what: "connect")
        }
        return socket
    }

    static func send(_ socket: Int32, _ text: String) throws {
        let bytes = Array(text.utf8)
        guard Glibc.send(socket, bytes, bytes.count, Int32(MSG_NOSIGNAL)) == bytes.count else {
            throw Failure(what: "send")
        }
    }

    /// What arrives within `seconds`: the text, "" when the server closed the connection, `nil` when nothing
    /// came. The wait blocks a thread of its own, never one of Swift's cooperative threads (which the server
    /// under test needs).
    static func receive(_ socket: Int32, seconds: Double) async -> String? {
        await withCheckedContinuation { continuation in
            Thread { continuation.resume(returning: blockingReceive(socket, seconds: seconds)) }.start()
        }
    }

    private static func blockingReceive(_ socket: Int32, seconds: Double) -> String? {
        var timeout = timeval(tv_sec: Int(seconds), tv_usec: Int((seconds - seconds.rounded(.down)) * 1_000_000))
        setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var buffer = [UInt8](repeating: 0, count: 4_096)
        let count = recv(socket, &buffer, buffer.count, 0)
        if count == 0 { return "" }
        if count < 0 { return errno == ECONNRESET ? "" : nil }
        return String(decoding: buffer.prefix(count), as: UTF8.self)
    }

    /// The status code of an answer's first line, 0 when there is none.
    static func statusLine(_ text: String?) -> Int {
        guard let text, text.hasPrefix("HTTP/1.1 ") else { return 0 }
        return Int(text.dropFirst(9).prefix(3)) ?? 0
    }

    /// Sends one request on a new connection and answers its status code.
    static func status(port: Int, _ request: String) async throws -> Int {
        let socket = try connect(port: port)
        defer { close(socket) }
        try send(socket, request)
        return statusLine(await receive(socket, seconds: 5))
    }
}
