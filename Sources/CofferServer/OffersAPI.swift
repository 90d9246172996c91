import CofferAPI
import CofferHTTP
import CofferService
import CofferStore
import Hummingbird

/// The offer routes: subscription offers signed for the customer with the app's In-App Purchase key.
struct OffersAPI: Sendable {
    let api: ClientAPI
    /// Signatures per customer, bounded: each is work for the server's key.
    let limiter: RateLimiter

    /// The routes, each answered by a handler below.
    var routes: RouteCollection<CofferRequestContext> {
        let routes = RouteCollection(context: CofferRequestContext.self)
        routes.post("v1/me/offers/sign", use: sign)
        routes.post("v1/me/offers/introductory-eligibility", use: introductoryEligibility)
        return routes
    }

    /// `POST /v1/me/offers/sign {"productId", "offerId"}`: a promotional offer signed for the customer (the JWS and
    /// the earlier signature).
    func sign(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        let user = try await customer(request)
        let body: OfferSignatureRequest = try await api.decode(request)
        return try api.json(try await api.service.signOffer(body, for: user))
    }

    /// `POST /v1/me/offers/introductory-eligibility {"productId"}`: whether the customer may take the subscription's
    /// introductory offer, signed.
    func introductoryEligibility(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        let user = try await customer(request)
        let body: IntroductoryOfferRequest = try await api.decode(request)
        return try api.json(try await api.service.signIntroductoryOfferEligibility(body, for: user))
    }

    /// The bearer's customer, within ``limiter``'s rate.
    private func customer(_ request: Request) async throws -> User {
        let user = try await api.authenticate(request)
        if let wait = limiter.take("customer:\(user.id)") {
            throw ServiceError.rateLimited(retryAfter: wait, what: "offer signatures")
        }
        return user
    }
}
