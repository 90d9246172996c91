import CofferService
import Hummingbird

/// Limits one route group per client address (``CofferRequestContext/clientAddress``).
struct RateLimitMiddleware: RouterMiddleware {
    typealias Context = CofferRequestContext
    let limiter: RateLimiter
    /// What is limited, for the error message ("new users", "sign-in attempts").
    let what: String

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response)
        async throws -> Response
    {
        if let wait = limiter.take(context.clientAddress) {
            return ServiceError.rateLimited(retryAfter: wait, what: what).response
        }
        return try await next(request, context)
    }
}
