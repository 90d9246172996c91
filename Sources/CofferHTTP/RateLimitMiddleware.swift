import CofferService
import Hummingbird

/// Limits one route group per client address (``CofferRequestContext/clientAddress``).
public struct RateLimitMiddleware: RouterMiddleware {
    /// Coffer's request context.
    public typealias Context = CofferRequestContext
    let limiter: RateLimiter
    /// What is limited, for the error message ("new users", "sign-in attempts").
    let what: String

    /// Creates the middleware: `limiter` per client address, `what` for the error message.
    public init(limiter: RateLimiter, what: String) {
        self.limiter = limiter
        self.what = what
    }

    /// Answers the request, or 429 past the limit.
    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response)
        async throws -> Response
    {
        if let wait = limiter.take(context.clientAddress) {
            return ServiceError.rateLimited(retryAfter: wait, what: what).response
        }
        return try await next(request, context)
    }
}
