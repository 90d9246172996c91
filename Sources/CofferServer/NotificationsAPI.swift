import CofferAPI
import CofferHTTP
import CofferService
import Foundation
import Hummingbird
import Synchronization

/// `POST /v1/apple/notifications`: App Store Server Notifications V2, handed to the intake.
///
/// Apple is never refused: only requests that fail verification count against their address, so an address
/// that keeps sending junk is turned away before it can make the server verify more of it.
struct NotificationsAPI: Sendable {
    let api: ClientAPI
    let intake: NotificationIntake
    /// Notifications that failed verification, per client address.
    let failures: RateLimiter

    /// The route, answered by ``receive(_:_:)``.
    var routes: RouteCollection<CofferRequestContext> {
        let routes = RouteCollection(context: CofferRequestContext.self)
        routes.post("v1/apple/notifications", use: receive)
        return routes
    }

    /// Verifies and applies one notification. A token is taken before verifying and given back the moment the
    /// notification verifies (before it is stored), so junk sent all at once cannot all start a verification,
    /// and Apple's notifications hold a token only for the instant their signature takes, however slow the
    /// database is.
    func receive(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        let address = context.clientAddress
        if let wait = failures.take(address) {
            return ServiceError.rateLimited(retryAfter: wait, what: "notifications that failed verification").response
        }
        let returned = Mutex(false)
        let failures = failures
        let giveBack: @Sendable () -> Void = {
            if returned.withLock({ given in
                defer { given = true }
                return !given
            }) {
                failures.giveBack(address)
            }
        }
        do {
            let raw = try await api.collect(request)
            let body: NotificationRequest = try api.decode(raw)
            // Forwarded (apple.forward.url) as Apple posted it, byte for byte.
            let received = try await intake.receive(
                body.signedPayload, source: "apple", logger: context.logger, verified: giveBack,
                forwarding: String(buffer: raw))
            return try api.json(NotificationResponse(outcome: received.outcome.rawValue))
        } catch let error as ServiceError where (400..<500).contains(error.status.code) {
            // Data Apple signed for another environment verified its signature: that is Apple (a Sandbox
            // notification URL pointed here), not junk.
            if error.code == "INVALID_ENVIRONMENT" { giveBack() }
            throw error
        } catch {
            giveBack()
            throw error
        }
    }
}
