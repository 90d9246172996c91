import CofferAPI
import CofferAdmin
import CofferAppStore
import CofferCore
import CofferHTTP
import CofferServer
import CofferService
import CofferStore
import Dispatch
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import NIOEmbedded
import Synchronization

/// Every route of an in-process Coffer server, signed in where it needs it (a user's bearer token, a panel
/// session with its CSRF token, a signed admin request), driven with the fuzzer's bytes as a query parameter,
/// a form field, a JSON value or a path component. An answer of 500 or more stops the fuzzer like a crash:
/// no number or string from outside may make the server fail.
struct RouteHarness: Sendable {
    let responder: RouterResponder<CofferRequestContext>
    let routes: [String]
    let token: String
    let supportId: String
    let sessionCookie: String
    let csrf: String
    let signer: AdminRequestSigner

    static let parameters = [
        "page", "q", "search", "status", "notice", "to", "environment", "limit", "balance", "reason", "supportId",
        "credits", "back", "confirm", "name", "password", "amount", "value", "device", "signedTransaction",
        "receiptData", "signedPayload",
    ]

    /// Made once, on the first input that asks for it.
    static let shared: RouteHarness? = {
        switch blocking({ try await RouteHarness.make() }) {
        case .success(let harness): return harness
        case .failure(let error):
            FileHandle.standardError.write(Data("the route harness cannot start: \(error)\n".utf8))
            return nil
        }
    }()

    static func make() async throws -> RouteHarness {
        let store = InMemoryStore()
        let bundleId = "com.example.fuzz"
        let configuration = ServerConfiguration(bundleId: bundleId)
        var logger = Logger(label: "fuzz")
        logger.logLevel = .critical
        let dependencies = try ServerDependencies(
            store: store,
            verifier: try SignedDataVerifier(
                rootCertificates: [], bundleId: bundleId, appAppleId: nil, environment: .sandbox),
            catalog: try Catalog(products: [CatalogProduct(id: "com.example.credits", kind: .consumable, credits: 100)]
            ),
            logger: logger, passwordHasher: PasswordHasher(cost: 4))
        let routes = try serverRoutes(configuration: configuration, dependencies: dependencies)
        let responder = try serverResponder(configuration: configuration, dependencies: dependencies)
        let created = try await respond(
            responder, HTTPRequest(method: .post, scheme: "http", authority: "localhost", path: "/v1/users"), body: [])
        guard let object = try JSONSerialization.jsonObject(with: Data(created.body)) as? [String: Any],
            let token = object["token"] as? String, let supportId = object["supportId"] as? String
        else { throw HarnessError("no user") }
        let now = Date()
        let admin = Admin(name: "fuzz", passwordHash: "-", createdAt: now)
        try await store.createAdmin(admin)
        let cookie = Secrets.random()
        let csrf = Secrets.random()
        try await store.createSession(
            AdminSession(
                tokenHash: Secrets.hash(cookie), adminId: admin.id, adminName: admin.name, csrfToken: csrf,
                environment: .sandbox, createdAt: now, expiresAt: now.addingTimeInterval(86_400)))
        let key = NewAdminKey(name: "fuzz", at: now)
        try await store.createAdminKey(key.record)
        return RouteHarness(
            responder: responder, routes: routes.filter { $0 != "POST /admin/logout" && !$0.hasSuffix("/events") },
            token: token, supportId: supportId, sessionCookie: cookie, csrf: csrf,
            signer: try AdminRequestSigner(keyId: key.record.id, privateKeyPEM: key.privateKeyPEM))
    }

    /// One input: a route, a parameter, where the value goes, and the value.
    func run(_ input: [UInt8]) {
        guard input.count >= 3, !routes.isEmpty else { return }
        let route = routes[Int(input[0]) % routes.count]
        let name = Self.parameters[Int(input[1]) % Self.parameters.count]
        let value = Array(input.dropFirst(3))
        let parts = route.split(separator: " ", maxSplits: 1).map(String.init)
        let method = HTTPRequest.Method(parts[0]) ?? .get
        let escaped = value.map { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                ? String(UnicodeScalar(byte)) : String(format: "%%%02X", byte)
        }.joined()
        var path = parts[1].replacingOccurrences(of: "{id}", with: UUID().uuidString.lowercased())
        var body: [UInt8] = []
        let form = path.hasPrefix("/admin")
        switch input[2] % 4 {
        case 0: path += "?\(name)=\(escaped)"
        case 1:
            body =
                Array(form ? "csrf=\(csrf)&\(name)=\(escaped)".utf8 : "{\"\(name)\":".utf8)
                + (form ? [] : value + [0x7D])
        case 2: path = path.replacingOccurrences(of: "{supportId}", with: escaped.isEmpty ? "x" : escaped)
        default: body = Array("{\"\(name)\":\"".utf8) + value + Array("\"}".utf8)
        }
        path = path.replacingOccurrences(of: "{supportId}", with: supportId)
        var head = HTTPRequest(method: method, scheme: "http", authority: "localhost", path: path)
        head.headerFields[.contentType] = form ? "application/x-www-form-urlencoded" : "application/json"
        if path.hasPrefix("/v1/admin") {
            if let headers = try? signer.headers(
                method: method.rawValue, host: "localhost", body: body, path: path, at: Date())
            {
                for header in headers { head.headerFields[HTTPField.Name(header.name)!] = header.value }
            }
        } else if form {
            head.headerFields[.cookie] = "coffer-session=\(sessionCookie)"
        } else {
            head.headerFields[.authorization] = "Bearer \(token)"
        }
        let (responder, request, bytes) = (responder, head, body)
        switch blocking({ try await Self.respond(responder, request, body: bytes) }) {
        case .success(let answer):
            if answer.status >= 500 {
                fatalError("\(route) answered \(answer.status) to \(name) = \(value.prefix(64))")
            }
        case .failure(let error):
            fatalError("\(route) threw \(error)")
        }
    }

    static func respond(_ responder: RouterResponder<CofferRequestContext>, _ head: HTTPRequest, body: [UInt8])
        async throws -> (status: Int, body: [UInt8])
    {
        let channel = EmbeddedChannel()
        // Hummingbird's server gives every request's logger an id; the request log reads it.
        var logger = Logger(label: "fuzz")
        logger.logLevel = .critical
        logger[metadataKey: "hb.request.id"] = "fuzz"
        let context = CofferRequestContext(source: ApplicationRequestContextSource(channel: channel, logger: logger))
        let request = Request(head: head, body: .init(buffer: ByteBuffer(bytes: body)))
        defer { _ = try? channel.finish() }
        let response = try await responder.respond(to: request, context: context)
        var collected = [UInt8]()
        if response.status.code < 300 || head.path?.hasPrefix("/v1/users") == true {
            let writer = CollectingWriter()
            try await response.body.write(writer)
            collected = writer.bytes
        }
        return (response.status.code, collected)
    }

    struct HarnessError: Error {
        var what: String
        init(_ what: String) { self.what = what }
    }
}

/// Collects a response body.
final class CollectingWriter: ResponseBodyWriter, Sendable {
    private let buffer = Mutex<[UInt8]>([])
    var bytes: [UInt8] { buffer.withLock { $0 } }

    func write(_ part: ByteBuffer) async throws {
        buffer.withLock { $0 += Array(part.readableBytesView) }
    }

    func finish(_ trailingHeaders: HTTPFields?) async throws {}
}

/// Runs async work from libFuzzer's synchronous callback (its own thread, never Swift's cooperative pool)
/// and waits for it.
func blocking<T: Sendable>(_ work: @escaping @Sendable () async throws -> T) -> Result<T, any Error> {
    let done = DispatchSemaphore(value: 0)
    let result = Mutex<Result<T, any Error>?>(nil)
    Task {
        let outcome: Result<T, any Error>
        do {
            outcome = .success(try await work())
        } catch {
            outcome = .failure(error)
        }
        result.withLock { $0 = outcome }
        done.signal()
    }
    done.wait()
    return result.withLock { $0 } ?? .failure(RouteHarness.HarnessError("no result"))
}
