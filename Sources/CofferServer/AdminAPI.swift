import CofferAPI
import CofferAdmin
import CofferCore
import CofferHTTP
import CofferService
import CofferStore
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// The admin API (`/v1/admin/...`): everything the panel does, as JSON, for the CLI and scripts. Each request
/// is signed with an admin key (``AdminRequestSignature``); the environment is the `environment` query
/// parameter (the server's own by default), so one server's support tools reach both environments.
struct AdminAPI: Sendable {
    let api: ClientAPI
    let service: AdminService

    /// The routes under `/v1/admin`, behind a signed request, each answered by a handler below.
    var routes: RouteCollection<CofferRequestContext> {
        let routes = RouteCollection(context: CofferRequestContext.self)
        let admin = routes.group("v1/admin").add(
            middleware: SignedRequestMiddleware(
                api: api,
                authenticator: AdminRequestAuthenticator(
                    store: api.dependencies.store, now: api.dependencies.now)))
        admin.get("dashboard", use: dashboard)
        admin.get("users", use: users)
        admin.get("users/:supportId", use: user)
        admin.post("users/:supportId/balance", use: setBalance)
        admin.post("users/merge", use: merge)
        admin.post("users/:supportId/delete", use: deleteUser)
        admin.get("grants", use: grants)
        admin.post("grants", use: createGrant)
        admin.post("grants/delete-all", use: deleteAllGrants)
        admin.post("grants/:id/cancel", use: cancelGrant)
        admin.get("audit", use: audit)
        admin.post("entitlement-grants", use: grantEntitlement)
        admin.post("entitlement-grants/:id/cancel", use: cancelEntitlementGrant)
        admin.post("users/:supportId/extend", use: extendSubscription)
        admin.post("subscriptions/extend", use: extendAllSubscribers)
        admin.get("subscriptions/extensions", use: massExtensions)
        return routes
    }

    /// `GET /v1/admin/dashboard`.
    func dashboard(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        try api.json(try await service.dashboard(environment: try environment(request)))
    }

    /// `GET /v1/admin/users[?search=&page=]`.
    func users(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        let page = try AdminService.page(request.uri.queryParameters.get("page"))
        return try api.json(
            try await service.searchUsers(
                environment: try environment(request), query: request.uri.queryParameters.get("search"), page: page))
    }

    /// `GET /v1/admin/users/{supportId}`.
    func user(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        try api.json(
            try await service.user(
                environment: try environment(request), supportId: try context.parameters.require("supportId")))
    }

    /// `POST /v1/admin/users/{supportId}/balance`.
    func setBalance(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        try context.requireOwnerKey()
        let body: BalanceRequest = try await api.decode(request)
        return try api.json(
            try await service.setBalance(
                environment: try environment(request), supportId: try context.parameters.require("supportId"),
                balance: body.balance, expected: body.expected, reason: body.reason, actor: context.adminActor,
                currency: body.currency))
    }

    /// `POST /v1/admin/entitlement-grants` `{"supportId", "entitlement", "days", "reason"}`: an entitlement for a
    /// time (support keys too, as a grant of credits).
    func grantEntitlement(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        let body: EntitlementGrantRequest = try await api.decode(request)
        return try api.json(
            try await service.grantEntitlement(
                environment: try environment(request), support: context.adminKey?.role == .support, request: body,
                actor: context.adminActor),
            status: .created)
    }

    /// `POST /v1/admin/entitlement-grants/{id}/cancel`: it stops unlocking now.
    func cancelEntitlementGrant(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        try api.json(
            try await service.cancelEntitlementGrant(
                environment: try environment(request), id: try context.parameters.require("id"),
                actor: context.adminActor))
    }

    /// `POST /v1/admin/users/{supportId}/extend` `{"days", "reasonCode", "reason", "productId"?}`: the customer's
    /// active subscriptions extended through Apple (support keys too: a goodwill gesture).
    func extendSubscription(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        let body: ExtendSubscriptionRequest = try await api.decode(request)
        return try api.json(
            try await service.extendSubscriptions(
                environment: try environment(request), supportId: try context.parameters.require("supportId"),
                request: body, actor: context.adminActor))
    }

    /// `POST /v1/admin/subscriptions/extend` `{"productId", "days", "reasonCode", "reason", "storefronts"?}`: every
    /// active subscriber of a product (an outage), owner keys only; 202 while Apple works through it.
    func extendAllSubscribers(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        try context.requireOwnerKey()
        let body: MassExtensionRequest = try await api.decode(request)
        return try api.json(
            try await service.extendAllSubscribers(
                environment: try environment(request), request: body, actor: context.adminActor),
            status: .accepted)
    }

    /// `GET /v1/admin/subscriptions/extensions`: the latest mass extensions with Apple's status now.
    func massExtensions(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        try api.json(
            MassExtensionsResponse(extensions: try await service.massExtensions(environment: try environment(request))))
    }

    /// `POST /v1/admin/users/merge` `{"from", "into"}`: an anonymous user joins an Apple account's customer.
    func merge(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        try context.requireOwnerKey()
        let body: MergeRequest = try await api.decode(request)
        return try api.json(
            try await service.mergeUsers(
                environment: try environment(request), from: body.from, into: body.into,
                consent: try MergeConsent(code: body.code, overrideReason: body.overrideReason),
                intoCode: body.intoCode, actor: context.adminActor))
    }

    /// `POST /v1/admin/users/{supportId}/delete`: the customer deleted at their request, once.
    func deleteUser(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        try context.requireOwnerKey()
        return try api.json(
            try await service.deleteUser(
                environment: try environment(request), supportId: try context.parameters.require("supportId"),
                actor: context.adminActor))
    }

    /// `GET /v1/admin/grants[?status=pending|claimed|cancelled|all]`.
    func grants(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        let status: GrantStatus?
        switch request.uri.queryParameters.get("status") {
        case nil, "", "all": status = nil
        case let text?:
            guard let parsed = GrantStatus(rawValue: text) else {
                throw ServiceError.badRequest("status must be pending, claimed, cancelled or all")
            }
            status = parsed
        }
        return try api.json(try await service.grants(environment: try environment(request), status: status))
    }

    /// `POST /v1/admin/grants`.
    func createGrant(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        let body: GrantRequest = try await api.decode(request)
        var id: UUID?
        if let text = body.id {
            guard let parsed = UUID(uuidString: text) else { throw ServiceError.badRequest("id is not a UUID") }
            id = parsed
        }
        return try api.json(
            try await service.createGrant(
                environment: try environment(request), supportId: body.supportId, credits: body.credits,
                reason: body.reason, actor: context.adminActor, ceiling: context.adminKey?.grantCeiling,
                holder: context.adminKey?.holder, id: id, currency: body.currency, expiresInDays: body.expiresInDays),
            status: .created)
    }

    /// `POST /v1/admin/grants/{id}/cancel`: a grant the app has not claimed, in Production too.
    func cancelGrant(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        try api.json(
            try await service.cancelGrant(
                environment: try environment(request), id: try context.parameters.require("id"),
                actor: context.adminActor))
    }

    /// `POST /v1/admin/grants/delete-all` (Sandbox).
    func deleteAllGrants(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        try context.requireOwnerKey()
        let deleted = try await service.deleteAllGrants(
            environment: try environment(request), actor: context.adminActor)
        return try api.json(DeletedGrants(deleted: deleted))
    }

    /// `GET /v1/admin/audit[?limit=&admin=&customer=&action=]`.
    func audit(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        let text = request.uri.queryParameters.get("limit") ?? "200"
        guard text.utf8.count <= 4, let limit = Int(text), (1...1_000).contains(limit) else {
            throw ServiceError.badRequest("limit must be a whole number from 1 to 1000")
        }
        return try api.json(
            try await service.auditLog(
                environment: try environment(request), query: AuditQuery(request), limit: limit))
    }

    /// The environment a request names, the server's own by default.
    func environment(_ request: Request) throws -> CofferCore.AppStoreEnvironment {
        guard let text = request.uri.queryParameters.get("environment"), !text.isEmpty else {
            return api.configuration.environment
        }
        guard let environment = CofferCore.AppStoreEnvironment(rawValue: text) else {
            throw ServiceError.badRequest("environment must be Sandbox or Production")
        }
        return environment
    }
}

/// Admits a request only with a valid signature from an unrevoked admin key, dated within five minutes and
/// never seen before (seen signatures are kept in the store, so every server on the database refuses them).
struct SignedRequestMiddleware: RouterMiddleware {
    typealias Context = CofferRequestContext
    let api: ClientAPI
    let authenticator: AdminRequestAuthenticator

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response)
        async throws -> Response
    {
        var request = request
        var context = context
        let headers = request.headers
        guard let keyId = headers[HTTPField.Name(AdminRequestSignature.keyIdHeader)!],
            let date = headers[HTTPField.Name(AdminRequestSignature.dateHeader)!],
            let signature = headers[HTTPField.Name(AdminRequestSignature.signatureHeader)!]
        else { throw ServiceError(AdminAuthError.unsigned) }
        let limit = api.configuration.maximumBodySize
        let body: ByteBuffer
        do {
            body = try await request.collectBody(upTo: limit)
        } catch {
            throw ServiceError.bodyTooLarge(limit: limit)
        }
        let key: AdminKey
        do {
            key = try await authenticator.authenticate(
                keyId: keyId, date: date, signature: signature, method: request.method.rawValue,
                host: request.head.authority ?? "", path: request.uri.description, body: body.readableBytesView)
        } catch let refusal as AdminAuthError {
            throw ServiceError(refusal)
        }
        // A write names its environment: a signed grant never lands in an environment its signer did not see.
        if request.method != .get, AdminRequestSignature.environment(ofPath: request.uri.description).isEmpty {
            throw ServiceError.environmentRequired
        }
        context.admin = "\(key.holder) from \(context.clientAddress ?? "this machine")"
        context.adminKey = key
        return try await next(request, context)
    }
}
