import AsyncHTTPClient
import CofferAPI
import CofferAdmin
import CofferAppStore
import CofferCore
import CofferServer
import CofferService
import CofferSimulator
import CofferStore
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Synchronization
import Testing

/// The document's operations, and what the scenario showed of them: each request and answer is checked against
/// the operation the document gives for its method and path.
final class DocumentedAPI: Sendable {
    /// A request's body, and what the document's request schema must make of it.
    enum RequestBody: Sendable {
        /// No body.
        case none
        /// JSON the schema accepts (the server may still refuse it for what a schema cannot say).
        case valid(String)
        /// JSON the schema refuses, as the server does.
        case invalid(String)
        /// Bytes the schema is not asked about: not JSON, a repeated key, an oversized body.
        case raw(String)

        /// `value` encoded as a client sends it, to be accepted.
        static func json(_ value: some Encodable) throws -> Self { .valid(try DocumentedAPI.text(value)) }

        var text: String? {
            switch self {
            case .none: nil
            case .valid(let text), .invalid(let text), .raw(let text): text
            }
        }
    }

    /// `value` as the JSON text a client sends.
    static func text(_ value: some Encodable) throws -> String {
        String(decoding: try JSONEncoder().encode(value), as: UTF8.self)
    }

    /// The document.
    let document: JSONValue
    /// Its schemas.
    let validator: JSONSchemaValidator
    /// Each operation as `METHOD /path`.
    let operations: [String: [String: JSONValue]]
    private let state = Mutex(State())

    /// The operations exercised (with the statuses seen) and the counts, for the summary.
    private struct State {
        var exercised: [String: Set<Int>] = [:]
        var answers = 0
        var jsonAnswers = 0
        var requestBodies = 0
    }

    var exercised: Set<String> { Set(state.withLock { $0.exercised.keys }) }
    var answers: Int { state.withLock { $0.answers } }
    var jsonAnswers: Int { state.withLock { $0.jsonAnswers } }
    var requestBodies: Int { state.withLock { $0.requestBodies } }

    /// The document in the repository, every schema in it (components, requests, answers, parameters) checked
    /// for keywords the validator does not know.
    init() throws {
        document = try JSONSchemaValidator.parse(try Data(contentsOf: OpenAPITests.documentURL))
        validator = try JSONSchemaValidator(document: document)
        guard case .object(let root) = document, case .object(let paths)? = root["paths"] else {
            throw JSONSchemaValidator.Unsupported(description: "the document has no paths")
        }
        var operations: [String: [String: JSONValue]] = [:]
        for (path, item) in paths {
            guard case .object(let methods) = item else { continue }
            for (method, operation) in methods {
                guard case .object(let fields) = operation else { continue }
                let key = "\(method.uppercased()) \(path)"
                operations[key] = fields
                for (location, schema) in Self.schemas(in: operation, at: key) {
                    try validator.check(schema, at: location)
                }
            }
        }
        self.operations = operations
    }

    /// Every `schema` inside an operation, with where it is.
    static func schemas(in value: JSONValue, at location: String) -> [(String, JSONValue)] {
        switch value {
        case .object(let members):
            return members.sorted { $0.key < $1.key }.flatMap { key, member in
                key == "schema" ? [("\(location)/schema", member)] : schemas(in: member, at: "\(location)/\(key)")
            }
        case .array(let items):
            return items.enumerated().flatMap { schemas(in: $1, at: "\(location)/\($0)") }
        default: return []
        }
    }

    /// A request for operation `key` with sample values for its path parameters.
    static func sample(_ key: String) -> (method: HTTPRequest.Method, uri: String) {
        SecurityTests.request(key)
    }

    /// The operation a request is for: the documented path its path matches, literal segments before parameters.
    func operation(_ method: HTTPRequest.Method, _ uri: String) -> (key: String, fields: [String: JSONValue])? {
        let segments = uri.split(separator: "?", maxSplits: 1)[0].split(
            separator: "/", omittingEmptySubsequences: false)
        var best: (key: String, fields: [String: JSONValue], literal: Int)?
        for (key, fields) in operations {
            let parts = key.split(separator: " ", maxSplits: 1)
            guard parts[0] == method.rawValue else { continue }
            let template = parts[1].split(separator: "/", omittingEmptySubsequences: false)
            guard template.count == segments.count,
                zip(template, segments).allSatisfy({ $0 == $1 || ($0.hasPrefix("{") && !$1.isEmpty) })
            else { continue }
            let literal = template.filter { !$0.hasPrefix("{") }.count
            if literal > best?.literal ?? -1 { best = (key, fields, literal) }
        }
        return best.map { ($0.key, $0.fields) }
    }

    /// Sends a request through `client`, expects `status`, and checks the request and the answer against the
    /// document.
    @discardableResult
    func send(
        _ client: some TestClientProtocol, _ method: HTTPRequest.Method, _ uri: String, headers: HTTPFields = [:],
        body: RequestBody = .none, expect status: HTTPResponse.Status,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> TestResponse {
        var headers = headers
        if body.text != nil { headers[.contentType] = "application/json" }
        let response = try await client.execute(
            uri: uri, method: method, headers: headers, body: body.text.map { ByteBuffer(string: $0) })
        #expect(
            response.status == status, "\(method) \(uri) answered \(response.status): \(String(buffer: response.body))",
            sourceLocation: sourceLocation)
        check(
            method, uri, request: body, status: response.status.code, headers: response.headers,
            body: Data(buffer: response.body), sourceLocation: sourceLocation)
        return response
    }

    /// Sends a request signed by `signer` (``AdminAPITests/send(_:_:_:_:body:at:)``), expects `status`, and checks
    /// the request and the answer against the document.
    @discardableResult
    func admin(
        _ client: some TestClientProtocol, _ signer: AdminRequestSigner, _ method: HTTPRequest.Method, _ uri: String,
        body: (some Encodable)? = String?.none, valid: Bool = true, at date: Date, expect status: HTTPResponse.Status,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> TestResponse {
        let response = try await AdminAPITests.send(client, signer, method, uri, body: body, at: date)
        #expect(
            response.status == status, "\(method) \(uri) answered \(response.status): \(String(buffer: response.body))",
            sourceLocation: sourceLocation)
        let text = try body.map { try DocumentedAPI.text($0) }
        let request: RequestBody = text.map { valid ? .valid($0) : .invalid($0) } ?? .none
        check(
            method, uri, request: request, status: response.status.code, headers: response.headers,
            body: Data(buffer: response.body), sourceLocation: sourceLocation)
        return response
    }

    /// Opens `GET /v1/me/events` over a socket and checks the answer's head (its body is a stream: read by the
    /// caller) or, for a refusal, its body.
    @discardableResult
    func events(port: Int, token: String?, expect status: HTTPResponse.Status) async throws -> HTTPClientResponse {
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)/v1/me/events")
        if let token { request.headers.add(name: "Authorization", value: "Bearer \(token)") }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
        #expect(Int(response.status.code) == status.code, "the event stream answered \(response.status)")
        var headers = HTTPFields()
        for header in response.headers {
            headers.append(HTTPField(name: HTTPField.Name(header.name)!, value: header.value))
        }
        let body = status == .ok ? Data() : Data(buffer: try await response.body.collect(upTo: 1 << 16))
        check(.get, "/v1/me/events", request: .none, status: Int(response.status.code), headers: headers, body: body)
        return response
    }

    /// Checks one `data:` line of the event stream against the schema the document gives the stream.
    func checkEvent(_ data: Data) throws {
        let schema = try #require(
            lookup(
                operations["GET /v1/me/events"].map(JSONValue.object), "responses", "200", "content",
                "text/event-stream", "schema"))
        let failures = try validator.validate(try JSONSchemaValidator.parse(data), against: schema)
        #expect(failures.isEmpty, "an event's data: \(failures.joined(separator: "\n"))")
    }

    /// Checks a request and its answer against the document: the operation is documented, the answer's status
    /// is one it lists (or its `default`), the content type one given for that status, a JSON body valid
    /// against its schema, headers it names present; the request body accepted or refused by the request schema
    /// as the scenario says it should be.
    func check(
        _ method: HTTPRequest.Method, _ uri: String, request: RequestBody, status: Int, headers: HTTPFields,
        body: Data, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        func fail(_ text: String) { Issue.record(Comment(rawValue: text), sourceLocation: sourceLocation) }
        guard let found = self.operation(method, uri) else {
            return fail("\(method) \(uri) is no documented operation")
        }
        let (key, operation) = found
        state.withLock {
            $0.exercised[key, default: []].insert(status)
            $0.answers += 1
        }
        do {
            try checkRequest(key, operation, request, status: status, fail: fail)
            guard
                let answer = lookup(.object(operation), "responses", String(status))
                    ?? lookup(.object(operation), "responses", "default")
            else {
                let listed = lookup(.object(operation), "responses").flatMap { value -> [String]? in
                    guard case .object(let responses) = value else { return nil }
                    return responses.keys.sorted()
                }
                return fail("\(key) answered \(status), which the document does not list (it lists \(listed ?? []))")
            }
            if case .object(let documented)? = lookup(answer, "headers") {
                for name in documented.keys where headers[HTTPField.Name(name)!] == nil {
                    fail("\(key) answered \(status) without the header \(name) the document gives it")
                }
            }
            guard case .object(let content)? = lookup(answer, "content") else {
                if !body.isEmpty {
                    fail(
                        "\(key) answered \(status) with a body, where the document gives \(status) none: "
                            + String(decoding: body.prefix(200), as: UTF8.self))
                }
                return
            }
            let media = (headers[.contentType] ?? "").split(separator: ";")[0].trimmingCharacters(in: .whitespaces)
            guard let entry = content[media.lowercased()] else {
                return fail(
                    "\(key) answered \(status) as \"\(media)\", where the document gives \(content.keys.sorted())")
            }
            guard media == "application/json" else { return }  // Text and event streams: the content type only.
            guard let schema = lookup(entry, "schema") else { return fail("\(key) \(status): no schema") }
            let value: JSONValue
            do {
                value = try JSONSchemaValidator.parse(body)
            } catch {
                return fail(
                    "\(key) answered \(status) with a body that is not JSON: \(String(decoding: body, as: UTF8.self))")
            }
            let failures = try validator.validate(value, against: schema)
            if !failures.isEmpty {
                fail("\(key) answered \(status) with a body its schema refuses:\n" + failures.joined(separator: "\n"))
            }
            state.withLock { $0.jsonAnswers += 1 }
        } catch {
            fail("\(key): \(error)")
        }
    }

    /// The request's body against the operation's request schema.
    private func checkRequest(
        _ key: String, _ operation: [String: JSONValue], _ request: RequestBody, status: Int, fail: (String) -> Void
    ) throws {
        let documented = lookup(.object(operation), "requestBody")
        switch request {
        case .none:
            if (200..<300).contains(status), case .bool(true)? = lookup(documented, "required") {
                fail("\(key) answered \(status) to a request without the body the document requires")
            }
        case .raw: break
        case .valid(let text), .invalid(let text):
            guard let schema = lookup(documented, "content", "application/json", "schema") else {
                return fail("\(key): a JSON body sent where the document gives no JSON request body")
            }
            let failures = try validator.validate(try JSONSchemaValidator.parse(Data(text.utf8)), against: schema)
            state.withLock { $0.requestBodies += 1 }
            if case .valid = request, !failures.isEmpty {
                fail(
                    "\(key): the document refuses a request body the scenario sends as valid, \(text):\n"
                        + failures.joined(separator: "\n"))
            } else if case .invalid = request, failures.isEmpty {
                fail("\(key): the document accepts \(text), which the server refuses (answered \(status))")
            }
        }
    }

    /// Every documented operation that needs credentials refuses a request without them: 401.
    func withoutCredentials(_ client: some TestClientProtocol) async throws {
        for (key, operation) in operations.sorted(by: { $0.key < $1.key }) {
            guard case .array(let security) = operation["security"] ?? lookup(document, "security"),
                !security.isEmpty
            else { continue }
            let (method, uri) = Self.sample(key)
            try await send(client, method, uri, expect: .unauthorized)
        }
    }

    /// Every documented operation with a JSON request body refuses a JSON array (every request schema wants an
    /// object, so the document refuses it too): 400, with credentials that would otherwise do.
    func malformedBodies(
        _ client: some TestClientProtocol, token: String, signer: AdminRequestSigner, at date: Date
    ) async throws {
        for key in operations.keys.sorted()
        where lookup(operations[key].map(JSONValue.object), "requestBody", "content", "application/json") != nil {
            let (method, uri) = Self.sample(key)
            if uri.hasPrefix("/v1/admin") {
                try await admin(
                    client, signer, method, uri, body: [String](), valid: false, at: date, expect: .badRequest)
            } else {
                try await send(
                    client, method, uri, headers: ClientAPITests.bearer(token), body: .invalid("[]"),
                    expect: .badRequest)
            }
        }
    }

    /// Every documented operation with a request body refuses one over the server's limit (and over the larger
    /// limits some routes allow): 413.
    func oversizedBodies(_ client: some TestClientProtocol, limit: Int) async throws {
        let body = RequestBody.raw(String(repeating: "a", count: max(limit, 1 << 20) + 1))
        for key in operations.keys.sorted() where operations[key]?["requestBody"] != nil {
            let (method, uri) = Self.sample(key)
            try await send(client, method, uri, body: body, expect: .contentTooLarge)
        }
    }
}

/// `value`'s member at `path`, object by object.
private func lookup(_ value: JSONValue?, _ path: String...) -> JSONValue? {
    var current = value
    for key in path {
        guard case .object(let members)? = current else { return nil }
        current = members[key]
    }
    return current
}
