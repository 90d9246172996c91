import CofferAPI
import CofferCore
import CofferService
import CofferStore
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The third security round's cheap denial of service on the open operations routes.
extension SecurityTests {
    @Test("a flood of /readyz asks the database at most once a second, with one cheap query")
    func readinessFlood() async throws {
        let store = CountingStore(base: InMemoryStore())
        let setup = try NotificationTests.Setup(store: store)
        try await setup.app.test(.router) { client in
            try await withThrowingTaskGroup(of: HTTPResponse.Status.self) { group in
                for _ in 0..<50 {
                    group.addTask { try await client.execute(uri: "/readyz", method: .get).status }
                }
                for try await status in group { #expect(status == .ok) }
            }
            #expect(store.calls("ping") == 1)
            #expect(store.calls("userCount") == 0, "no count over a table")
            _ = try await setup.apple.advanceClock(by: 1)
            #expect(try await client.execute(uri: "/readyz", method: .get).status == .ok)
            #expect(try await client.execute(uri: "/readyz", method: .get).status == .ok)
            #expect(store.calls("ping") == 2)
        }
    }

    @Test(
        "/openapi.json and /v1/catalog are served from memory with an ETag, and 304 to a client that has it",
        arguments: ["/openapi.json", "/v1/catalog"])
    func documentETag(path: String) async throws {
        let setup = try NotificationTests.Setup()
        try await setup.app.test(.router) { client in
            let first = try await client.execute(uri: path, method: .get)
            #expect(first.status == .ok)
            let etag = try #require(first.headers[.eTag])
            #expect(etag.hasPrefix("\"") && etag.hasSuffix("\"") && etag.count == 34)
            let again = try await client.execute(uri: path, method: .get, headers: [.ifNoneMatch: etag])
            #expect(again.status == .notModified && again.body.readableBytes == 0)
            let other = try await client.execute(
                uri: path, method: .get, headers: [.ifNoneMatch: "\"something else\""])
            #expect(other.status == .ok && other.body.readableBytes == first.body.readableBytes)
            if path == "/v1/catalog" {
                // The catalog the server loaded, in the catalog file's shape, with no token asked.
                #expect(try Catalog(json: Data(buffer: first.body)) == setup.catalog)
            }
        }
    }

    @Test("event streams are capped per client address (IPv6 by /64) too, whoever's tokens it shows")
    func eventStreamsPerAddress() async throws {
        let app = try HardeningTests.server {
            $0.eventStreamsPerUser = 4
            $0.eventStreamsPerAddress = 2
            $0.trustedProxies = HardeningTests.loopbackProxy
        }
        try await app.test(.live) { client in
            let port = try #require(client.port)
            var users: [CreateUserResponse] = []
            for _ in 0..<5 {
                users.append(
                    try Fixture.decode(
                        CreateUserResponse.self, try await client.execute(uri: "/v1/users", method: .post)))
            }
            func open(_ user: CreateUserResponse, from address: String) async throws -> (Int32, Int) {
                let socket = try RawHTTP.connect(port: port)
                try RawHTTP.send(
                    socket,
                    "GET /v1/me/events HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer \(user.token)\r\n"
                        + "X-Forwarded-For: \(address)\r\n\r\n")
                return (socket, RawHTTP.statusLine(await RawHTTP.receive(socket, seconds: 5)))
            }
            var sockets: [Int32] = []
            defer {
                for socket in sockets { close(socket) }
            }
            let attempts: [(Int, String, Int)] = [
                (0, "203.0.113.5", 200), (1, "203.0.113.5", 200), (2, "203.0.113.5", 429),
                (3, "2001:db8:1:2::1", 200), (4, "2001:db8:1:2::ffff", 200), (2, "2001:db8:1:2:3::9", 429),
                (2, "203.0.113.6", 200),
            ]
            for (user, address, expected) in attempts {
                let (socket, status) = try await open(users[user], from: address)
                sockets.append(socket)
                #expect(status == expected, "user \(user) from \(address)")
            }
        }
    }
}
