import CofferAPI
import CofferCore
import CofferHTTP
import CofferService
import CofferStore
import Foundation
import Hummingbird

/// The wallet routes: the device's backup, support grants, and spending.
struct WalletAPI: Sendable {
    let api: ClientAPI

    /// The routes, each answered by a handler below.
    var routes: RouteCollection<CofferRequestContext> {
        let routes = RouteCollection(context: CofferRequestContext.self)
        routes.get("v1/me/backup", use: backup)
        routes.put("v1/me/backup", use: saveBackup)
        routes.get("v1/me/grants", use: grants)
        routes.post("v1/me/grants/:id/claim", use: claimGrant)
        routes.post("v1/me/spend", use: spend)
        routes.put("v1/me/consent", use: consent)
        return routes
    }

    /// `PUT /v1/me/consent {"customerConsented"}`: the customer's answer to sharing consumption data with Apple.
    func consent(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        let user = try await api.authenticate(request)
        let body: ConsentRequest = try await api.decode(request)
        return try api.json(try await api.service.saveConsent(of: user, consented: body.customerConsented))
    }

    /// `GET /v1/me/backup`: the backup, its version as the ETag.
    func backup(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        let record = try await api.service.backup(of: try await api.authenticate(request))
        return try api.json(BackupBody(record), headers: [.eTag: String(record.version)])
    }

    /// `PUT /v1/me/backup`: writes the backup if `If-Match` names its version (or none exists without it);
    /// 412 with the record on the server otherwise.
    func saveBackup(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        let user = try await api.authenticate(request)
        let body: BackupRequest = try await api.decode(request)
        try api.service.checkBackup(value: body.value, deficit: body.deficit ?? 0, device: body.device)
        let precondition: BackupPrecondition
        switch request.headers[.ifMatch] {
        case nil: precondition = .absent
        case let text?:
            guard let version = Int64(text.trimmingCharacters(in: CharacterSet(charactersIn: "\" "))) else {
                throw ServiceError.badRequest("If-Match must be a version")
            }
            precondition = .version(version)
        }
        switch try await api.service.saveBackup(
            of: user, value: body.value, deficit: body.deficit ?? 0, device: body.device, precondition: precondition,
            applied: body.applied, currencies: body.currencies)
        {
        case .saved(let record):
            return try api.json(BackupBody(record), headers: [.eTag: String(record.version)])
        case .conflict(let current):
            // The current record comes back so the app can decide and retry with its version.
            return try api.json(
                ConflictResponse(
                    error: .init(code: "version-conflict", message: "the backup changed; read it and retry"),
                    current: current.map(BackupBody.init)),
                status: .preconditionFailed)
        }
    }

    /// `GET /v1/me/grants[?status=pending|claimed|cancelled][&currencies=1]`.
    func grants(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        let currencies = try EventsAPI.asksCurrencies(request)
        let user = try await api.authenticate(request)
        let status: GrantStatus?
        switch request.uri.queryParameters.get("status") {
        case nil: status = nil
        case let text?:
            guard let parsed = GrantStatus(rawValue: text) else {
                throw ServiceError.badRequest("status is pending, claimed or cancelled")
            }
            status = parsed
        }
        let grants = try await api.service.grants(of: user, status: status, currencies: currencies)
        return try api.json(GrantsResponse(grants: grants.map(Self.body)))
    }

    /// `POST /v1/me/grants/{id}/claim`.
    func claimGrant(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        let user = try await api.authenticate(request)
        let id = UUID(uuidString: try context.parameters.require("id"))
        let (grant, balance) = try await api.service.claimGrant(id, for: user)
        return try api.json(ClaimResponse(grant: Self.body(grant), balance: balance))
    }

    /// `POST /v1/me/spend` with an `Idempotency-Key` (server wallet).
    func spend(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        let user = try await api.authenticate(request)
        let key = try api.service.spendKey(request.headers.first { $0.name.canonicalName == "idempotency-key" }?.value)
        let body: SpendRequest = try await api.decode(request)
        let balance = try await api.service.spend(body.amount, currency: body.currency, key: key, for: user)
        return try api.json(BalanceResponse(balance: balance))
    }

    /// A 412 answer: the error and the record on the server now.
    struct ConflictResponse: Encodable {
        var error: ErrorResponse.Body
        var current: BackupBody?

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(error, forKey: .error)
            try container.encode(current, forKey: .current)
        }

        enum CodingKeys: String, CodingKey { case error, current }
    }

    static func body(_ grant: Grant) -> GrantBody {
        var body = GrantBody(
            id: grant.id, credits: grant.credits, reason: grant.reason, createdAt: grant.createdAt,
            claimedAt: grant.claimedAt, cancelledAt: grant.cancelledAt)
        body.currency = grant.currency?.rawValue
        body.expiresInDays = grant.expiresInDays
        return body
    }
}
