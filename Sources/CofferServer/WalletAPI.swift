import CofferAPI
import CofferCore
import CofferStore
import Foundation
import Hummingbird

/// The wallet routes: the device's backup, support grants, and spending.
struct WalletAPI: Sendable {
    let api: ClientAPI

    var store: any CofferStore { api.dependencies.store }

    func addRoutes(to router: Router<CofferRequestContext>) {
        router.get("v1/me/backup") { request, _ in
            let user = try await api.authenticate(request)
            guard let record = try await store.backup(owner: user.id, environment: user.environment) else {
                throw ServerError.noBackup
            }
            return try api.json(Self.body(record), headers: [.eTag: String(record.version)])
        }
        router.put("v1/me/backup") { request, _ in
            let user = try await api.authenticate(request)
            let body: BackupRequest = try await api.decode(request)
            guard body.value >= 0 else {
                throw ServerError.badRequest("a backup cannot be negative")
            }
            if let device = body.device, device.count > 100 || device.utf8.count > 400 {
                throw ServerError.badRequest("a device name is at most 100 characters")
            }
            let precondition: BackupPrecondition
            switch request.headers[.ifMatch] {
            case nil: precondition = .absent
            case let text?:
                guard let version = Int64(text.trimmingCharacters(in: CharacterSet(charactersIn: "\" "))) else {
                    throw ServerError.badRequest("If-Match must be a version")
                }
                precondition = .version(version)
            }
            let result = try await store.saveBackup(
                owner: user.id, environment: user.environment, value: body.value, precondition: precondition,
                writer: .device(body.device ?? "app"), at: api.dependencies.now())
            switch result {
            case .saved(let record):
                // The user's other devices learn that the backup moved on.
                await api.events.publish(ServerEventBody(type: .backup, key: String(record.version)), to: user.id)
                return try api.json(Self.body(record), headers: [.eTag: String(record.version)])
            case .conflict(let current):
                // The current record comes back so the app can decide and retry with its version.
                return try api.json(
                    ConflictResponse(
                        error: .init(code: "version-conflict", message: "the backup changed; read it and retry"),
                        current: current.map(Self.body)),
                    status: .preconditionFailed)
            }
        }
        router.get("v1/me/grants") { request, _ in
            let user = try await api.authenticate(request)
            let status: GrantStatus?
            switch request.uri.queryParameters.get("status") {
            case nil: status = nil
            case let text?:
                guard let parsed = GrantStatus(rawValue: text) else {
                    throw ServerError.badRequest("status is pending or claimed")
                }
                status = parsed
            }
            let grants = try await store.grants(
                environment: user.environment, recipient: user.id, status: status, limit: 500)
            return try api.json(GrantsResponse(grants: grants.map(Self.body)))
        }
        router.post("v1/me/grants/:id/claim") { request, context in
            let user = try await api.authenticate(request)
            guard let id = UUID(uuidString: try context.parameters.require("id")) else {
                throw ServerError.notFound("no such grant")
            }
            let grant: Grant
            do {
                grant = try await store.claimGrant(
                    id: id, recipient: user.id, environment: user.environment,
                    crediting: api.configuration.wallet == .server ? api.configuration.deficitPolicy : nil,
                    at: api.dependencies.now())
            } catch StoreError.notFound, StoreError.wrongUser {
                // Another user's grant is not found either: nothing about it is revealed.
                throw ServerError.notFound("no such grant")
            }
            let wallet = try await store.wallet(owner: user.id, environment: user.environment)
            return try api.json(ClaimResponse(grant: Self.body(grant), balance: wallet.balance))
        }
        router.post("v1/me/spend") { request, _ in
            let user = try await api.authenticate(request)
            guard api.configuration.wallet == .server else {
                throw ServerError.deviceWallet
            }
            let key = request.headers.first { $0.name.canonicalName == "idempotency-key" }?.value
            guard let key, !key.isEmpty, key.count <= 200 else {
                throw ServerError.badRequest("an Idempotency-Key header is required")
            }
            let body: SpendRequest = try await api.decode(request)
            let ledger = LedgerRequest(
                owner: user.id, environment: user.environment, event: .spend(key: key, amount: body.amount),
                at: api.dependencies.now())
            switch try await api.ledger.apply([ledger]).first {
            case .success(let result): return try api.json(BalanceResponse(balance: result.wallet.balance))
            case .failure(let error): throw ServerError.ledger(error)
            case nil: throw ServerError.internalError("the ledger did not answer")
            }
        }
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

    static func body(_ record: BackupRecord) -> BackupBody {
        let writer: String = if case .admin = record.writer { "admin" } else { "device" }
        return BackupBody(value: record.value, lastUpdated: record.lastUpdated, version: record.version, writer: writer)
    }

    static func body(_ grant: Grant) -> GrantBody {
        GrantBody(
            id: grant.id, credits: grant.credits, reason: grant.reason, createdAt: grant.createdAt,
            claimedAt: grant.claimedAt)
    }
}
