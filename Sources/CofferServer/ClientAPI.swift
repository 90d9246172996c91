import CofferAPI
import CofferCore
import CofferHTTP
import CofferService
import CofferStore
import Foundation
import Hummingbird
import NIOFoundationCompat

/// The client API the app talks to: users, their wallet and entitlements, and purchases.
struct ClientAPI: Sendable {
    /// The use cases behind the routes.
    let service: ClientService
    /// The server's settings: its limits, and its use cases' (``ServerConfiguration/service``).
    let configuration: ServerConfiguration
    var dependencies: ServerDependencies { service.dependencies }

    /// The client API's routes: its own, each answered by a handler below, and its features' controllers.
    var routes: RouteCollection<CofferRequestContext> {
        let routes = RouteCollection(context: CofferRequestContext.self)
        // Unauthenticated, so bounded per client address.
        routes.group("v1/users")
            .add(
                middleware: RateLimitMiddleware(
                    limiter: RateLimiter(limit: configuration.userCreationLimit), what: "new users")
            )
            .post(use: createUser)
        routes.group("v1/users/cloudkit")
            .add(
                middleware: RateLimitMiddleware(
                    limiter: RateLimiter(limit: configuration.userCreationLimit), what: "claims")
            )
            .post(use: claimCloudKit)
        // Unauthenticated: served from memory (an ETag, 304 for an app that holds it), like /openapi.json.
        let catalog = ServedDocument(data: dependencies.catalog.json())
        routes.get("v1/catalog") { request, _ in catalog.response(to: request) }
        routes.get("v1/me", use: me)
        routes.delete("v1/me/token", use: revokeToken)
        routes.put("v1/me/push-token", use: registerPushToken)
        routes.delete("v1/me/push-token", use: unregisterPushToken)
        routes.post("v1/me/milestones", use: recordMilestone)
        routes.put("v1/me/verify-report", use: saveVerifyReport)
        routes.post("v1/me/merge-code", use: mergeCode)
        routes.get("v1/me/purchases", use: purchases)
        routes.post("v1/transactions", use: present)
        routes.addRoutes(WalletAPI(api: self).routes)
        routes.addRoutes(OffersAPI(api: self, limiter: RateLimiter(limit: configuration.offerSigningLimit)).routes)
        routes.addRoutes(EventsAPI(api: self).routes)
        routes.addRoutes(ReceiptsAPI(api: self).routes)
        return routes
    }

    /// `POST /v1/users`: with no body or `{}`, a new anonymous user, answered 201; with
    /// `{"signedAppTransaction": ...}`, the Apple account's user (201 when new, 200 for another device).
    func createUser(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        let body = try await collect(request)
        let wanted: CreateUserRequest = body.readableBytes == 0 ? CreateUserRequest() : try decode(body)
        guard let signed = wanted.signedAppTransaction else {
            return try json(try await service.createUser(), status: .created)
        }
        let (answer, created) = try await service.register(signedAppTransaction: signed)
        return try json(answer, status: created ? .created : .ok)
    }

    /// `POST /v1/users/cloudkit`: the customer `coffer import cloudkit` brought in, claimed by the install that
    /// names their CloudKit user record name first (200 with credentials; 404 `not-found`; 409 `already-claimed`).
    func claimCloudKit(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        let body: CloudKitClaimRequest = try await decode(request)
        return try json(try await service.claimCloudKit(body))
    }

    /// `GET /v1/me/purchases`: what the server recorded for the customer.
    func purchases(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        try json(try await service.purchases(of: authenticate(request)))
    }

    /// `DELETE /v1/me/token`: this device's token stops working; the account's other devices keep theirs.
    func revokeToken(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        _ = try await authenticate(request)
        guard let header = request.headers[.authorization] else { throw ServiceError.noBearer }
        try await service.revoke(token: String(header.dropFirst(7)))
        return Response(status: .noContent)
    }

    /// `PUT /v1/me/push-token`: this device's APNs token, for background pushes; 204.
    func registerPushToken(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        let user = try await authenticate(request)
        let body: PushTokenRequest = try await decode(request)
        try await service.registerPushToken(body, user: user)
        return Response(status: .noContent)
    }

    /// `DELETE /v1/me/push-token`: forgets this device's APNs token; 204.
    func unregisterPushToken(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        let user = try await authenticate(request)
        let body: PushTokenRequest = try await decode(request)
        try await service.unregisterPushToken(body, user: user)
        return Response(status: .noContent)
    }

    /// `POST /v1/me/milestones`: records a milestone once per customer; says whether this was the first time.
    func recordMilestone(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        let user = try await authenticate(request)
        let body: MilestoneRequest = try await decode(request)
        return try json(try await service.recordMilestone(body, user: user))
    }

    /// The largest Verify Purchases report taken, whatever `body.limit` says: 500 items of the longest ids and
    /// products fit.
    static let verifyReportLimit = 256 * 1024

    /// `PUT /v1/me/verify-report`: the install's latest Verify Purchases results, for support.
    func saveVerifyReport(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        let user = try await authenticate(request)
        let body: VerifyReportRequest = try await decode(
            request, limit: max(Self.verifyReportLimit, configuration.maximumBodySize))
        return try json(try await service.saveVerifyReport(body, user: user))
    }

    /// `POST /v1/me/merge-code`: a one-time code for support to merge this customer; 201.
    func mergeCode(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        let user = try await authenticate(request)
        var request = request
        guard try await request.collectBody(upTo: configuration.maximumBodySize).readableBytes == 0 else {
            throw ServiceError.badRequest("POST /v1/me/merge-code takes no body")
        }
        var response = try json(try await service.mergeCode(for: user))
        response.status = .created
        return response
    }

    /// `GET /v1/me`.
    func me(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        try json(try await service.me(user: authenticate(request)))
    }

    /// `POST /v1/transactions`: a signed transaction the app presents, delivered once.
    func present(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        let user = try await authenticate(request)
        let body: TransactionRequest = try await decode(request)
        return try json(
            try await service.present(
                body.signedTransaction, user: user, previouslyDelivered: body.previouslyDelivered ?? false))
    }

    /// The user a bearer token names.
    func authenticate(_ request: Request) async throws -> User {
        guard let header = request.headers[.authorization], header.hasPrefix("Bearer "), header.count > 7 else {
            throw ServiceError.noBearer
        }
        return try await service.authenticate(token: String(header.dropFirst(7)))
    }

    func decode<T: Decodable>(_ request: Request, limit: Int? = nil) async throws -> T {
        try decode(try await collect(request, limit: limit))
    }

    /// The request's body, refused past `limit` (the server's body limit by default).
    func collect(_ request: Request, limit: Int? = nil) async throws -> ByteBuffer {
        let limit = limit ?? configuration.maximumBodySize
        do {
            return try await request.body.collect(upTo: limit)
        } catch {
            throw ServiceError.bodyTooLarge(limit: limit)
        }
    }

    /// A JSON body, strictly: unknown keys, duplicates and trailing bytes are refused.
    func decode<T: Decodable>(_ body: ByteBuffer) throws -> T {
        do {
            return try StrictJSON.decode(T.self, from: Data(buffer: body))
        } catch {
            throw ServiceError.badRequest("the body is not valid: \(error)")
        }
    }

    func json(_ value: some Encodable, status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]) throws
        -> Response
    {
        var fields = headers
        fields[.contentType] = "application/json"
        let body: Data
        if let text = value as? any JSONTextEncodable {
            body = text.jsonText()
        } else {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            encoder.dateEncodingStrategy = .iso8601
            body = try encoder.encode(value)
        }
        return Response(status: status, headers: fields, body: .init(byteBuffer: ByteBuffer(data: body)))
    }
}
