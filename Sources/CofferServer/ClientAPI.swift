import CofferAPI
import CofferCore
import CofferService
import CofferStore
import Foundation
import Hummingbird
import NIOFoundationCompat

/// The client API the app talks to: users, their wallet and entitlements, and purchases.
struct ClientAPI: Sendable {
    /// The use cases behind the routes.
    let service: ClientService

    var configuration: ServerConfiguration { service.configuration }
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
        routes.get("v1/me", use: me)
        routes.post("v1/transactions", use: present)
        routes.addRoutes(WalletAPI(api: self).routes)
        routes.addRoutes(EventsAPI(api: self).routes)
        routes.addRoutes(ReceiptsAPI(api: self).routes)
        return routes
    }

    /// `POST /v1/users`: a new user, answered 201.
    func createUser(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        try json(try await service.createUser(), status: .created)
    }

    /// `GET /v1/me`.
    func me(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        try json(try await service.me(user: authenticate(request)))
    }

    /// `POST /v1/transactions`: a signed transaction the app presents, delivered once.
    func present(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        let user = try await authenticate(request)
        let body: TransactionRequest = try await decode(request)
        return try json(try await service.present(body.signedTransaction, user: user))
    }

    /// The user a bearer token names.
    func authenticate(_ request: Request) async throws -> User {
        guard let header = request.headers[.authorization], header.hasPrefix("Bearer "), header.count > 7 else {
            throw ServiceError.noBearer
        }
        return try await service.authenticate(token: String(header.dropFirst(7)))
    }

    func decode<T: Decodable>(_ request: Request, limit: Int? = nil) async throws -> T {
        let limit = limit ?? configuration.maximumBodySize
        let body: ByteBuffer
        do {
            body = try await request.body.collect(upTo: limit)
        } catch {
            throw ServiceError.bodyTooLarge(limit: limit)
        }
        do {
            return try StrictJSON.decode(T.self, from: Data(buffer: body))
        } catch {
            throw ServiceError.badRequest("the body is not valid: \(error)")
        }
    }

    func json(_ value: some Encodable, status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]) throws
        -> Response
    {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        encoder.dateEncodingStrategy = .iso8601
        var fields = headers
        fields[.contentType] = "application/json"
        return Response(
            status: status, headers: fields, body: .init(byteBuffer: ByteBuffer(data: try encoder.encode(value))))
    }
}
