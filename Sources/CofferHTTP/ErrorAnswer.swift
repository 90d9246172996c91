import CofferAPI
import CofferService
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import NIOFoundationCompat

/// The one place where Coffer's errors become the API's HTTP answers (the panel's pages are pages): the status of each ``ServiceError``, and the
/// answer `{"error": {"code", "message"}}` (with `Retry-After` when rate limited).
extension ServiceError: HTTPResponseError {
    /// The HTTP status.
    public var status: HTTPResponse.Status {
        switch self {
        case .badRequest, .environmentRequired: .badRequest
        case .bodyTooLarge: .contentTooLarge
        case .unauthorized, .adminSignature: .unauthorized
        case .forbidden, .wrongUser: .forbidden
        case .notFound, .noBackup: .notFound
        case .unknownProduct, .verification, .sandboxDataForProductionCustomer: .unprocessableContent
        case .ledger(.wrongUser): .forbidden
        case .ledger(.insufficientBalance): .conflict
        // The user was merged into another while the request waited (its token names that one now): again.
        case .ledger(.unknownUser): .serviceUnavailable
        case .ledger: .unprocessableContent
        case .deviceWallet, .grantCancelled, .alreadyClaimed, .balanceChanged: .conflict
        case .tooManyStreams, .rateLimited: .tooManyRequests
        case .unavailable, .timeout: .serviceUnavailable
        case .internalError: .internalServerError
        }
    }

    /// The answer (``ErrorAnswer``).
    public func response(from request: Request, context: some RequestContext) throws -> Response { response }

    /// The answer (``ErrorAnswer``).
    public var response: Response {
        var retryAfter: Int?
        switch self {
        case .rateLimited(let seconds, _): retryAfter = seconds
        // The database or Apple may answer again in a moment: clients wait a second before the same request.
        case .unavailable, .timeout: retryAfter = 1
        default: break
        }
        return ErrorAnswer.response(status, code: code, message: message, retryAfter: retryAfter)
    }
}

/// The one shape of every error answer: the status and `{"error": {"code", "message"}}`, with `Retry-After`
/// when the client may try again after a wait.
public enum ErrorAnswer {
    /// The answer.
    public static func response(_ status: HTTPResponse.Status, code: String, message: String, retryAfter: Int? = nil)
        -> Response
    {
        let body = (try? JSONEncoder().encode(ErrorResponse(code: code, message: message))) ?? Data()
        var headers: HTTPFields = [.contentType: "application/json"]
        if let retryAfter { headers[.retryAfter] = String(retryAfter) }
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(data: body)))
    }

    /// The answer for any error: a ``ServiceError`` or what it maps, or Hummingbird's own refusal (no such
    /// route, a method the route does not take, a body over its limit); anything else is an internal error.
    public static func response(for error: any Error) -> Response {
        guard let refusal = error as? HTTPError else { return ServiceError(error).response }
        let code =
            switch refusal.status {
            case .notFound: "not-found"
            case .contentTooLarge: "body-too-large"
            case .methodNotAllowed: "method-not-allowed"
            default: "bad-request"
            }
        return response(refusal.status, code: code, message: refusal.body ?? refusal.status.reasonPhrase)
    }
}

/// Turns every error into the API's one error shape (``ErrorAnswer``); errors nobody named are logged.
public struct ErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    /// Creates the middleware.
    public init() {}

    /// Answers the request, or its error in the one shape.
    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response)
        async throws -> Response
    {
        do {
            return try await next(request, context)
        } catch {
            if !(error is HTTPError), ServiceError(named: error) == nil {
                context.logger.error("request failed: \(error)")
            }
            return ErrorAnswer.response(for: error)
        }
    }
}
