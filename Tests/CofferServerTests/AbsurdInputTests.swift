import CofferAPI
import CofferAdmin
import CofferAppStore
import CofferCore
import CofferServer
import CofferService
import CofferStore
import CofferTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

/// Numbers from outside never reach arithmetic that can trap: every route, panel and API, gets absurd values
/// in every query parameter, form field and JSON field, signed in where the route needs it. Every answer is
/// below 500 and the server still answers afterwards. (A trap would stop this test process.)
extension SecurityTests {
    /// Values an attacker tries, as they are written into a query or form (already percent-encoded).
    static let absurdQueryValues: [String] = [
        "9223372036854775807", "-9223372036854775808", "9223372036854775808", "368934881474191034", "1e308",
        "-1e308", "-1", "0", "NaN", "words", "%00", "%FF%FE", "%C0%80", String(repeating: "9", count: 100_000),
    ]

    /// The same as JSON values (numbers bare, the rest as strings), plus invalid UTF-8 written raw.
    static let absurdJSONValues: [[UInt8]] =
        [
            "9223372036854775807", "-9223372036854775808", "9223372036854775808", "1e308", "-1e308", "-1", "0",
            "1.5", "\"words\"", "\"\\u0000\"", "\"" + String(repeating: "9", count: 100_000) + "\"", "null", "[]", "{}",
        ].map { Array($0.utf8) } + [[0x22, 0xFF, 0xFE, 0x22]]

    /// Every query parameter and form field any route reads.
    static let parameterNames = [
        "page", "q", "search", "status", "notice", "to", "environment", "limit", "revision", "account",
        "transactionId",
    ]
    static let formFields = [
        "balance", "reason", "supportId", "credits", "back", "confirm", "environment", "name", "password",
    ]
    static let jsonFields = [
        "amount", "value", "device", "balance", "credits", "reason", "supportId", "signedTransaction",
        "receiptData", "signedPayload",
    ]

    @Test(
        "absurd numbers and strings in every parameter of every route answer below 500 and the server stays up",
        .tags(.sweep))
    func absurdValues() async throws {
        let store = InMemoryStore()
        let setup = try Fixture.Setup(store: store, wallet: .server)
        let signer = try await AdminAPITests.key(in: store)
        try await PanelTests.admin(in: store)
        let routes = try serverRoutes(
            configuration: ServerConfiguration(bundleId: Fixture.bundleId),
            dependencies: try ServerDependencies(
                store: store,
                verifier: try SignedDataVerifier(
                    rootCertificates: [], bundleId: Fixture.bundleId, appAppleId: nil, environment: .sandbox),
                catalog: try Catalog(products: [])))
        try await setup.app.test(.router) { client in
            let user = try Fixture.decode(
                CreateUserResponse.self, try await client.execute(uri: "/v1/users", method: .post))
            var browser = PanelTests.Browser()
            #expect(try await browser.signIn(client).status == .seeOther)
            let csrf = try PanelTests.Browser.csrf(try await browser.get(client, "/admin/grants"))
            var sent = 0

            func check(_ response: TestResponse, _ what: String) {
                sent += 1
                #expect(response.status.code < 500, "\(what) answered \(response.status)")
            }
            func send(_ method: HTTPRequest.Method, _ uri: String, body: [UInt8]?, form: Bool) async throws
                -> TestResponse
            {
                var headers = HTTPFields()
                if uri.hasPrefix("/v1/admin") {
                    for header in try signer.headers(
                        method: method.rawValue, host: "localhost", body: Data(body ?? []), path: uri,
                        at: AdminAPITests.now)
                    {
                        headers[HTTPField.Name(header.name)!] = header.value
                    }
                } else if uri.hasPrefix("/admin") {
                    headers = browser.header
                } else {
                    headers = Fixture.bearer(user.token)
                }
                headers[.contentType] = form ? "application/x-www-form-urlencoded" : "application/json"
                return try await client.execute(
                    uri: uri, method: method, headers: headers, body: body.map { ByteBuffer(bytes: $0) })
            }

            for route in routes where route != "POST /admin/logout" && !route.hasSuffix("/events") {
                let (method, template) = Self.request(route)
                let uri = template.replacingOccurrences(of: "_0123456789ab", with: user.supportId)
                // Query parameters, one at a time.
                for name in Self.parameterNames {
                    for value in Self.absurdQueryValues {
                        let response = try await send(method, "\(uri)?\(name)=\(value)", body: nil, form: false)
                        check(response, "\(route) ?\(name)=\(value.prefix(24))")
                    }
                }
                guard method == .post || method == .put else { continue }
                if uri.hasPrefix("/admin") {
                    for name in Self.formFields {
                        for value in Self.absurdQueryValues {
                            let body = Array("csrf=\(csrf)&\(name)=\(value)".utf8)
                            check(
                                try await send(method, uri, body: body, form: true),
                                "\(route) \(name)=\(value.prefix(24))")
                        }
                    }
                } else {
                    for name in Self.jsonFields {
                        for value in Self.absurdJSONValues {
                            let body = Array("{\"\(name)\":".utf8) + value + Array("}".utf8)
                            check(
                                try await send(method, uri, body: body, form: false),
                                "\(route) \(name)=\(String(decoding: value.prefix(24), as: UTF8.self))")
                        }
                    }
                }
            }
            // Path components and headers that carry numbers.
            for value in Self.absurdQueryValues {
                check(
                    try await send(.get, "/admin/users/\(value)", body: nil, form: false),
                    "/admin/users/\(value.prefix(24))")
                check(
                    try await send(.post, "/v1/me/grants/\(value)/claim", body: nil, form: false),
                    "claim \(value.prefix(24))")
                var headers = Fixture.bearer(user.token)
                headers[.ifMatch] = value
                headers[.contentType] = "application/json"
                headers[HTTPField.Name("Idempotency-Key")!] = value
                check(
                    try await client.execute(
                        uri: "/v1/me/backup", method: .put, headers: headers,
                        body: ByteBuffer(string: "{\"value\":1,\"device\":\"d\"}")), "If-Match \(value.prefix(24))")
                check(
                    try await client.execute(
                        uri: "/v1/me/spend", method: .post, headers: headers, body: ByteBuffer(string: "{\"amount\":1}")
                    ),
                    "Idempotency-Key \(value.prefix(24))")
            }
            #expect(sent > 1_000)
            let health = try await client.execute(uri: "/healthz", method: .get)
            #expect(health.status == .ok)
            #expect(try await browser.get(client, "/admin").status == .ok)
        }
    }
}
