import CofferAPI
import CofferAppStore
import CofferCore
import CofferHTTP
import CofferService
import CofferStore
import Foundation
import Hummingbird

/// `POST /v1/receipts/verify`: legacy app receipts from app versions before StoreKit 2, read and verified
/// locally (PKCS#7 signature, chain to Apple Root CA at the receipt's creation date), then every in-app
/// purchase in it delivered once, like a signed transaction.
struct ReceiptsAPI: Sendable {
    let api: ClientAPI

    /// Receipts carry every purchase the app ever made (Apple's are up to a few hundred KB).
    static let maximumBodySize = 1 << 20

    /// The route, answered by ``verify(_:_:)``.
    var routes: RouteCollection<CofferRequestContext> {
        let routes = RouteCollection(context: CofferRequestContext.self)
        routes.post("v1/receipts/verify", use: verify)
        return routes
    }

    /// `POST /v1/receipts/verify`.
    func verify(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        let user = try await api.authenticate(request)
        let body: ReceiptVerifyRequest = try await api.decode(request, limit: Self.maximumBodySize)
        return try api.json(try await api.service.verifyReceipt(body.receiptData, user: user))
    }
}
