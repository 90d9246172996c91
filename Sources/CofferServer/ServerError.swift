import CofferAPI
import CofferAdmin
import CofferAppStore
import CofferCore
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import NIOFoundationCompat

/// What went wrong with a request, named by what it means; ``status`` and ``code`` are the one place where
/// Coffer's errors become HTTP answers (`{"error": {"code", "message"}}`). Handlers throw these, or the
/// typed errors of the layers below (``LedgerError``, ``VerificationError``, ``AdminError``, Hummingbird's
/// `HTTPError`), which ``init(_:)`` maps.
enum ServerError: Error, HTTPResponseError {
    /// The request is malformed: a parameter, a header or the body.
    case badRequest(String)
    /// The body is larger than the route takes.
    case bodyTooLarge(limit: Int)
    /// A write to `/v1/admin` that does not name its environment.
    case environmentRequired
    /// No valid credentials (a bearer token, the metrics token).
    case unauthorized(String)
    /// A signed admin request that does not verify; `code` says why (`stale`, `replayed`, ...).
    case adminSignature(code: String, message: String)
    /// Support's action is not allowed here.
    case forbidden(String)
    /// The transaction belongs to another user.
    case wrongUser
    /// Nothing of this kind by that name.
    case notFound(String)
    /// The user has no backup yet.
    case noBackup
    /// The catalog does not sell the product.
    case unknownProduct(String)
    /// The ledger refused the change.
    case ledger(LedgerError)
    /// Apple's signed data does not verify; `code` is Apple's word for why (`INVALID_ENVIRONMENT`, ...).
    case verification(code: String, message: String)
    /// The change needs the server wallet.
    case deviceWallet
    /// Too many requests of this kind from the client's address; it may try again after `retryAfter` seconds.
    case rateLimited(retryAfter: Int, what: String)
    /// The user has as many event streams open as allowed.
    case tooManyStreams(Int)
    /// Something the request needs is not available now (Apple's certificate status, a free Support ID, the
    /// event stream capacity); `code` names it.
    case unavailable(code: String, message: String)
    /// The request took longer than its deadline.
    case timeout(seconds: Int)
    /// Something that must not happen did.
    case internalError(String)
    /// Hummingbird's own refusal (no such route, a method the route does not take, a body over its limit).
    case http(HTTPResponse.Status, code: String, message: String)

    /// Maps the typed errors of the layers below; anything else is an internal error.
    init(_ error: any Error) {
        switch error {
        case let error as ServerError: self = error
        case let error as LedgerError: self = .ledger(error)
        case let error as VerificationError:
            if case .retryableVerificationFailure = error {
                self = .unavailable(code: error.status, message: error.message)
            } else {
                self = .verification(code: error.status, message: error.message)
            }
        case let error as AdminError:
            switch error {
            case .notFound: self = .notFound(error.description)
            case .invalid(let why): self = .badRequest(why)
            case .forbidden(let why): self = .forbidden(why)
            case .unavailable(let why): self = .unavailable(code: "unavailable", message: why)
            }
        case let error as AdminAuthError: self = .adminSignature(code: Self.code(error), message: error.description)
        case let error as HTTPError:
            let code =
                switch error.status {
                case .notFound: "not-found"
                case .contentTooLarge: "body-too-large"
                case .methodNotAllowed: "method-not-allowed"
                default: "bad-request"
                }
            self = .http(error.status, code: code, message: error.body ?? error.status.reasonPhrase)
        default: self = .internalError("the server could not do that now")
        }
    }

    /// The HTTP status.
    var status: HTTPResponse.Status {
        switch self {
        case .badRequest, .environmentRequired: .badRequest
        case .bodyTooLarge: .contentTooLarge
        case .unauthorized, .adminSignature: .unauthorized
        case .forbidden, .wrongUser: .forbidden
        case .notFound, .noBackup: .notFound
        case .unknownProduct, .verification: .unprocessableContent
        case .ledger(.wrongUser): .forbidden
        case .ledger(.insufficientBalance): .conflict
        case .ledger: .unprocessableContent
        case .deviceWallet: .conflict
        case .tooManyStreams, .rateLimited: .tooManyRequests
        case .unavailable, .timeout: .serviceUnavailable
        case .internalError: .internalServerError
        case .http(let status, _, _): status
        }
    }

    /// The error's code in the answer.
    var code: String {
        switch self {
        case .badRequest: "bad-request"
        case .bodyTooLarge: "body-too-large"
        case .environmentRequired: "environment-required"
        case .unauthorized: "unauthorized"
        case .adminSignature(let code, _), .verification(let code, _), .unavailable(let code, _): code
        case .forbidden: "forbidden"
        case .wrongUser, .ledger(.wrongUser): "wrong-user"
        case .notFound: "not-found"
        case .noBackup: "no-backup"
        case .unknownProduct: "unknown-product"
        case .ledger(.insufficientBalance): "insufficient-balance"
        case .ledger(.keyReused): "key-reused"
        case .ledger: "refused"
        case .deviceWallet: "device-wallet"
        case .tooManyStreams: "too-many-streams"
        case .rateLimited: "rate-limited"
        case .timeout: "timeout"
        case .internalError: "internal"
        case .http(_, let code, _): code
        }
    }

    /// The explanation, for people.
    var message: String {
        switch self {
        case .badRequest(let why), .unauthorized(let why), .forbidden(let why), .notFound(let why),
            .unknownProduct(let why), .internalError(let why):
            why
        case .bodyTooLarge(let limit): "the body is larger than \(limit) bytes"
        case .environmentRequired:
            "a write must name its environment: add ?environment=Sandbox or ?environment=Production"
        case .adminSignature(_, let message), .verification(_, let message), .unavailable(_, let message): message
        case .wrongUser, .ledger(.wrongUser): "the transaction belongs to another user"
        case .noBackup: "no backup yet"
        case .ledger(.insufficientBalance(let balance, let requested)): "\(requested) requested, \(balance) available"
        case .ledger(.keyReused): "this Idempotency-Key was used for another amount"
        case .ledger(let error): error.description
        case .deviceWallet: "the app owns the balance in the device wallet"
        case .tooManyStreams(let count): "this user has \(count) event streams open; close one first"
        case .rateLimited(_, let what): "too many \(what) from this address; try again later"
        case .timeout(let seconds): "the request took longer than \(seconds) seconds; try again"
        case .http(_, _, let message): message
        }
    }

    /// A bearer token is missing or unknown.
    static let noBearer = ServerError.unauthorized("a valid bearer token is required")

    /// The answer: the status and `{"error": {"code", "message"}}` (with `Retry-After` when rate limited).
    func response(from request: Request, context: some RequestContext) throws -> Response { response }

    /// The answer: the status and `{"error": {"code", "message"}}` (with `Retry-After` when rate limited).
    var response: Response {
        let body = (try? JSONEncoder().encode(ErrorResponse(code: code, message: message))) ?? Data()
        var headers: HTTPFields = [.contentType: "application/json"]
        if case .rateLimited(let seconds, _) = self { headers[.retryAfter] = String(seconds) }
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(data: body)))
    }

    private static func code(_ error: AdminAuthError) -> String {
        switch error {
        case .unsigned: "unsigned"
        case .unknownKey: "unknown-key"
        case .revokedKey: "revoked-key"
        case .badKey: "bad-key"
        case .malformedDate: "bad-date"
        case .stale: "stale"
        case .badSignature: "bad-signature"
        case .replayed: "replayed"
        }
    }
}

/// Turns every error into the API's one error shape, through ``ServerError``; errors nobody named are logged.
struct ErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response)
        async throws -> Response
    {
        do {
            return try await next(request, context)
        } catch {
            let answer = ServerError(error)
            if case .internalError = answer, !(error is ServerError) {
                context.logger.error("request failed: \(error)")
            }
            return try answer.response(from: request, context: context)
        }
    }
}
