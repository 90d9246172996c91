import CofferAppStore
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import NIOFoundationCompat

/// CloudKit Web Services' public database, locally: enough of it for `coffer import cloudkit` to rehearse on.
/// `records/query` pages through a record type's records behind the server-to-server signature check CloudKit
/// makes (a registered key id, a date within ten minutes, an ECDSA P-256 signature over the date, the body's
/// hash and the subpath); `/simulator/cloudkit/records` saves records, as the seeds' app and admin panel did.
/// It plays both sides of a CloudKit identity proof too: `/simulator/cloudkit/web-auth-token` hands out a web auth
/// token for a user as `CKFetchWebAuthTokenOperation` would on that user's phone, and `users/caller` answers whose
/// token it is, once, to a request carrying the container's API token.
public actor SimulatedCloudKit {
    /// The container served, e.g. `iCloud.com.example.app`.
    public let container: String
    /// Registered server-to-server keys by key id.
    let keys: [String: P256.Signing.PublicKey]
    /// The container's API tokens (CloudKit Console's), which `users/caller` requires.
    let apiTokens: Set<String>
    /// Web auth tokens handed out and not used yet, by token: whose each is.
    private var webAuthTokens: [String: String] = [:]
    /// Records by environment (`development`, `production`), in the order first saved.
    private var records: [String: [CloudKitRecord]] = [:]
    private let now: @Sendable () -> Date

    /// The most records a page answers, as CloudKit caps `resultsLimit`.
    public static let pageLimit = 200

    /// A public database of `container`, accepting requests signed by `keys`.
    public init(
        container: String, keys: [String: P256.Signing.PublicKey], apiTokens: Set<String> = [],
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.container = container
        self.keys = keys
        self.apiTokens = apiTokens
        self.now = now
    }

    /// A single-use web auth token of `userRecordName`, as `CKFetchWebAuthTokenOperation` gives the app on that
    /// user's phone.
    public func webAuthToken(userRecordName: String) -> String {
        var bytes = [UInt8](repeating: 0, count: 48)
        for index in bytes.indices { bytes[index] = UInt8.random(in: 0...255) }
        let token = "ws_" + Data(bytes).base64EncodedString()
        webAuthTokens[token] = userRecordName
        return token
    }

    /// `users/caller`: whose web auth token this is, checked as CloudKit checks it (the container, the environment,
    /// a known API token); the token is used up.
    func caller(container: String, environment: String, apiToken: String?, webAuthToken: String?)
        -> Result<String, SimulatedCloudKitError>
    {
        guard container == self.container, ["development", "production"].contains(environment) else {
            return .failure(.init(status: 400, code: "BAD_REQUEST", reason: "unknown container or environment"))
        }
        guard let apiToken, apiTokens.contains(apiToken) else {
            return .failure(.init(status: 401, code: "AUTHENTICATION_FAILED", reason: "unknown API token"))
        }
        guard let webAuthToken, let name = webAuthTokens.removeValue(forKey: webAuthToken) else {
            return .failure(
                .init(status: 421, code: "AUTHENTICATION_REQUIRED", reason: "the web auth token is not valid"))
        }
        return .success(name)
    }

    /// Saves records (replacing those of the same name) in an environment.
    public func save(_ saved: [CloudKitRecord], environment: String) {
        var list = records[environment] ?? []
        for record in saved {
            if let index = list.firstIndex(where: { $0.recordName == record.recordName }) {
                list[index] = record
            } else {
                list.append(record)
            }
        }
        records[environment] = list
    }

    /// A `records/query` request checked as CloudKit checks it, and answered.
    private func answer(
        container: String, environment: String, subpath: String, body: Data, header: (String) -> String?
    ) -> Result<CloudKitQueryResponse, SimulatedCloudKitError> {
        guard container == self.container else {
            return .failure(.init(status: 400, code: "BAD_REQUEST", reason: "unknown container"))
        }
        guard ["development", "production"].contains(environment) else {
            return .failure(.init(status: 400, code: "BAD_REQUEST", reason: "unknown environment"))
        }
        if let refusal = CloudKitSignature.refusal(header: header, body: body, subpath: subpath, keys: keys, now: now())
        {
            return .failure(.init(status: 401, code: "AUTHENTICATION_FAILED", reason: refusal))
        }
        guard let query = try? JSONDecoder().decode(CloudKitQueryRequest.self, from: body) else {
            return .failure(.init(status: 400, code: "BAD_REQUEST", reason: "the body is not a records/query request"))
        }
        return Result { () throws(SimulatedCloudKitError) in try self.query(query, environment: environment) }
    }

    /// One page of a query: records of the type after the marker (an offset the simulator wrote).
    func query(_ request: CloudKitQueryRequest, environment: String) throws(SimulatedCloudKitError)
        -> CloudKitQueryResponse
    {
        guard (1...Self.pageLimit).contains(request.resultsLimit) else {
            throw .init(status: 400, code: "BAD_REQUEST", reason: "resultsLimit must be 1 to \(Self.pageLimit)")
        }
        var offset = 0
        if let marker = request.continuationMarker {
            guard let data = Data(base64Encoded: marker), let text = String(data: data, encoding: .utf8),
                text.hasPrefix("offset:"), let value = Int(text.dropFirst(7)), value >= 0
            else { throw .init(status: 400, code: "BAD_REQUEST", reason: "unknown continuationMarker") }
            offset = value
        }
        let matching = (records[environment] ?? []).filter { $0.recordType == request.query.recordType }
        let page = Array(matching.dropFirst(offset).prefix(request.resultsLimit))
        let next = offset + page.count
        return CloudKitQueryResponse(
            records: page,
            continuationMarker: next < matching.count ? Data("offset:\(next)".utf8).base64EncodedString() : nil)
    }

    /// Adds CloudKit's routes: `POST /database/1/:container/:environment/public/records/query` and the control
    /// `POST /simulator/cloudkit/records?environment=development` (body `{"records": [...]}`).
    public nonisolated func addRoutes(to router: Router<BasicRequestContext>) {
        router.post("database/1/:container/:environment/public/records/query") { request, context in
            let body = Data(buffer: try await request.body.collect(upTo: SimulatorServer.maximumBodySize))
            let container = try context.parameters.require("container")
            let environment = try context.parameters.require("environment")
            let header = { (name: String) in HTTPField.Name(name).flatMap { request.headers[$0] } }
            switch await self.answer(
                container: container, environment: environment, subpath: request.uri.path, body: body, header: header)
            {
            case .success(let page): return try Self.json(page, status: .ok)
            case .failure(let error):
                let answer = CloudKitErrorBody(
                    uuid: UUID().uuidString.lowercased(), serverErrorCode: error.code, reason: error.reason)
                return try Self.json(answer, status: .init(code: error.status))
            }
        }
        router.get("database/1/:container/:environment/public/users/caller") { request, context in
            let query = request.uri.queryParameters
            let answer = await self.caller(
                container: try context.parameters.require("container"),
                environment: try context.parameters.require("environment"),
                apiToken: query.get("ckAPIToken"), webAuthToken: query.get("ckWebAuthToken"))
            switch answer {
            case .success(let name):
                return try Self.json(CallerIdentity(userRecordName: name), status: .ok)
            case .failure(let error):
                let body = CloudKitErrorBody(
                    uuid: UUID().uuidString.lowercased(), serverErrorCode: error.code, reason: error.reason)
                return try Self.json(body, status: .init(code: error.status))
            }
        }
        router.post("simulator/cloudkit/web-auth-token") { request, _ in
            let body = Data(buffer: try await request.body.collect(upTo: 4_096))
            guard let asked = try? JSONDecoder().decode(WebAuthTokenRequest.self, from: body),
                !asked.userRecordName.isEmpty, asked.userRecordName.utf8.count <= 255
            else {
                return try Self.json(["message": "send {\"userRecordName\": \"_...\"}"], status: .badRequest)
            }
            let token = await self.webAuthToken(userRecordName: asked.userRecordName)
            return try Self.json(["ckWebAuthToken": token], status: .ok)
        }
        router.post("simulator/cloudkit/records") { request, _ in
            let body = Data(buffer: try await request.body.collect(upTo: SimulatorServer.maximumBodySize))
            let environment = request.uri.queryParameters.get("environment") ?? "development"
            guard ["development", "production"].contains(environment),
                let saved = try? JSONDecoder().decode(CloudKitQueryResponse.self, from: body)
            else {
                return try Self.json(
                    ["message": "send {\"records\": [...]} and ?environment=development or production"],
                    status: .badRequest)
            }
            await self.save(saved.records, environment: environment)
            return try Self.json(["saved": saved.records.count], status: .ok)
        }
    }

    private static func json(_ value: some Encodable, status: HTTPResponse.Status) throws -> Response {
        Response(
            status: status, headers: [.contentType: "application/json"],
            body: .init(byteBuffer: ByteBuffer(data: try JSONEncoder().encode(value))))
    }
}

/// `POST /simulator/cloudkit/web-auth-token`'s body.
struct WebAuthTokenRequest: Codable {
    var userRecordName: String
}

/// `users/caller`'s answer: the caller's user identity.
struct CallerIdentity: Codable {
    var userRecordName: String
}

/// An error CloudKit answers.
struct SimulatedCloudKitError: Error, Sendable {
    var status: Int
    var code: String
    var reason: String
}
