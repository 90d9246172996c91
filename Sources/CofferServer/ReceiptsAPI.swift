import CofferAPI
import CofferAppStore
import CofferCore
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

    func addRoutes(to router: Router<CofferRequestContext>) {
        router.post("v1/receipts/verify") { request, _ in
            let user = try await api.authenticate(request)
            let body: ReceiptVerifyRequest = try await api.decode(request, limit: Self.maximumBodySize)
            return try await verify(body.receiptData, user: user)
        }
    }

    func verify(_ receiptData: String, user: User) async throws -> Response {
        let receipt: AppReceipt
        do {
            receipt = try await api.dependencies.receiptReader.read(base64: receiptData)
        } catch {
            api.dependencies.metrics.verificationFailed(status: error.status)
            throw ServerError.verification(code: error.status, message: error.description)
        }
        guard receipt.bundleId == api.configuration.bundleId else {
            throw ServerError.verification(
                code: "INVALID_APP_IDENTIFIER",
                message: "the receipt is for \(receipt.bundleId ?? "no bundle"), not \(api.configuration.bundleId)")
        }
        let expected = api.configuration.environment == .production ? ["Production"] : ["ProductionSandbox", "Sandbox"]
        guard let type = receipt.receiptType, expected.contains(type) else {
            throw ServerError.verification(
                code: "INVALID_ENVIRONMENT",
                message:
                    "a \(receipt.receiptType ?? "untyped") receipt is not accepted in \(api.configuration.environment.rawValue)"
            )
        }

        var outcomes: [ReceiptTransactionOutcome] = []
        var requests: [LedgerRequest] = []
        var pending: [Int] = []  // outcomes waiting for their ledger result, by index
        for purchase in receipt.inAppPurchases {
            guard let fact = TransactionFact(purchase) else { continue }
            outcomes.append(
                ReceiptTransactionOutcome(transactionId: fact.transactionId, productId: fact.productId, outcome: ""))
            let event: LedgerEvent
            do {
                // The catalog must sell the product, refunded record or not.
                _ = try api.dependencies.catalog.credits(for: fact)
                event = try Delivery.event(for: fact, catalog: api.dependencies.catalog)
            } catch {
                outcomes[outcomes.count - 1].outcome = "unknown-product"
                continue
            }
            requests.append(
                LedgerRequest(
                    owner: user.id, environment: user.environment, event: event,
                    policy: api.configuration.deficitPolicy, at: api.dependencies.now()))
            pending.append(outcomes.count - 1)
        }
        let results = try await api.ledger.apply(requests)
        var balance = try await api.store.wallet(owner: user.id, environment: user.environment).balance
        for (index, (request, result)) in zip(pending, zip(requests, results)) {
            switch result {
            case .success(let applied):
                balance = applied.wallet.balance
                let outcome = Delivery.outcome(of: [request.event], ledger: applied.outcome)
                outcomes[index].outcome = outcome.rawValue
                if outcome == .delivered { api.dependencies.metrics.delivered(source: "receipt") }
            case .failure(.wrongUser):
                outcomes[index].outcome = "wrong-user"
            case .failure(let error):
                outcomes[index].outcome = "refused: \(error)"
            }
        }
        return try api.json(
            ReceiptVerifyResponse(
                transactions: outcomes, balance: balance, entitlements: try await api.entitlements(of: user)))
    }
}
